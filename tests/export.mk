# SPDX-License-Identifier: GPL-2.0
# Exporter tests (tests/unit/exporters.t):
#  - $(B)/export_test: the exporters of the binary's archive, driven with a
#    hand-made profile;
#  - $(B)/pprof_decode: an independent pprof reader built with protobuf-c from
#    a copy of the same profile.proto.
all: $(B)/export_test $(B)/pprof_decode

# The exporters from the binary's own archive, driven with a hand-made profile.
$(B)/export_test: unit/export_test.c $(APERTURE_LIB) | $(B)
	$(CC) $(TEST_CFLAGS) -o $@ $^ $(APERTURE_LDLIBS)

$(B)/pprof-c/profile.pb-c.c $(B)/pprof-c/profile.pb-c.h: ../proto/pprof/profile.proto
	@mkdir -p $(B)/pprof-c
	cp $< $(B)/pprof-c/profile.proto
	protoc-c --c_out=$(B)/pprof-c -I$(B)/pprof-c $(B)/pprof-c/profile.proto

$(B)/pprof_decode: tools/pprof_decode.c $(B)/pprof-c/profile.pb-c.c $(B)/pprof-c/profile.pb-c.h
	$(CC) -O2 -g -Wall -Wextra -Werror -I$(B)/pprof-c -o $@ tools/pprof_decode.c \
		$(B)/pprof-c/profile.pb-c.c -lprotobuf-c -lz
