# SPDX-License-Identifier: GPL-2.0
# Exporter tests (tests/unit/exporters.t):
#  - $(B)/export_test: the exporters compiled from ../user on their own (no BPF
#    skeletons needed), driven with a hand-made profile;
#  - $(B)/pprof_decode: an independent pprof reader built with protobuf-c from
#    a copy of the same profile.proto.
EXP_B      := $(B)/export
EXP_PY3    ?= /usr/bin/python3
EXP_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter \
              -Wno-missing-field-initializers -D_GNU_SOURCE -I../user -I$(EXP_B)/gen
EXP_MINE   := exporter export_pprof export_folded export_svg util
EXP_OBJS   := $(patsubst %,$(EXP_B)/%.o,$(EXP_MINE)) $(EXP_B)/gen/pprof/profile.pb.o
# Anything else the exporter table pulls in (other formats and what they use)
# comes from the main build's objects, as an archive so that only the members
# needed are linked (never main.o).
EXP_OTHERS := $(filter-out $(patsubst %,../build/user/%.o,$(EXP_MINE)),$(wildcard ../build/user/*.o)) \
              $(filter-out ../build/gen/pprof/profile.pb.o,$(shell find ../build/gen -name '*.pb.o' 2>/dev/null))
EXP_LIBS   := -Wl,--start-group -lbpf -lnghttp2 -lprotobuf-nanopb -ldw -lelf -lz -llzma -lbz2 -lzstd \
              -lpthread -Wl,--end-group

all: $(B)/export_test $(B)/pprof_decode

# keep the generated sources: the objects depend on the headers
.SECONDARY: $(EXP_B)/gen/pprof/profile.pb.c $(EXP_B)/gen/pprof/profile.pb.h

$(EXP_B)/gen/pprof/profile.pb.c $(EXP_B)/gen/pprof/profile.pb.h: ../proto/pprof/profile.proto ../proto/pprof/profile.options
	@mkdir -p $(EXP_B)/gen
	$(EXP_PY3) /usr/bin/nanopb_generator.py -q -I ../proto -D $(EXP_B)/gen pprof/profile.proto

$(EXP_B)/gen/pprof/profile.pb.o: $(EXP_B)/gen/pprof/profile.pb.c
	$(CC) $(EXP_CFLAGS) -Wno-error -c $< -o $@

$(EXP_B)/%.o: ../user/%.c $(wildcard ../user/*.h) $(EXP_B)/gen/pprof/profile.pb.h
	@mkdir -p $(EXP_B)
	$(CC) $(EXP_CFLAGS) -c $< -o $@

$(EXP_B)/libothers.a: $(EXP_OTHERS)
	@mkdir -p $(EXP_B)
	rm -f $@
	ar rcs $@ $^

$(B)/export_test: unit/export_test.c $(EXP_OBJS) $(EXP_B)/libothers.a | $(B)
	$(CC) $(EXP_CFLAGS) -o $@ $^ $(EXP_LIBS)

$(B)/pprof-c/profile.pb-c.c $(B)/pprof-c/profile.pb-c.h: ../proto/pprof/profile.proto
	@mkdir -p $(B)/pprof-c
	cp $< $(B)/pprof-c/profile.proto
	protoc-c --c_out=$(B)/pprof-c -I$(B)/pprof-c $(B)/pprof-c/profile.proto

$(B)/pprof_decode: tools/pprof_decode.c $(B)/pprof-c/profile.pb-c.c $(B)/pprof-c/profile.pb-c.h
	$(CC) -O2 -g -Wall -Wextra -Werror -I$(B)/pprof-c -o $@ tools/pprof_decode.c \
		$(B)/pprof-c/profile.pb-c.c -lprotobuf-c -lz
