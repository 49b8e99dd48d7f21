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
EXP_SRCS   := ../user/exporter.c $(wildcard ../user/export_*.c) ../user/util.c
EXP_PROTOS := $(shell cd ../proto 2>/dev/null && find . -name '*.proto' | sed 's|^\./||')
EXP_PB     := $(patsubst %.proto,$(EXP_B)/gen/%.pb.c,$(EXP_PROTOS))
EXP_OBJS   := $(patsubst ../user/%.c,$(EXP_B)/%.o,$(EXP_SRCS)) $(EXP_PB:.c=.o)

all: $(B)/export_test $(B)/pprof_decode

# keep the generated sources: the objects depend on the headers
.SECONDARY: $(EXP_PB) $(EXP_PB:.c=.h)

$(EXP_B)/gen/%.pb.c $(EXP_B)/gen/%.pb.h: ../proto/%.proto $(wildcard ../proto/*/*.options)
	@mkdir -p $(EXP_B)/gen
	$(EXP_PY3) /usr/bin/nanopb_generator.py -q -I ../proto -D $(EXP_B)/gen $*.proto

$(EXP_B)/gen/%.pb.o: $(EXP_B)/gen/%.pb.c
	$(CC) $(EXP_CFLAGS) -Wno-error -c $< -o $@

$(EXP_B)/%.o: ../user/%.c $(wildcard ../user/*.h) $(EXP_PB:.c=.h)
	@mkdir -p $(EXP_B)
	$(CC) $(EXP_CFLAGS) -c $< -o $@

$(B)/export_test: unit/export_test.c $(EXP_OBJS) | $(B)
	$(CC) $(EXP_CFLAGS) -o $@ $^ -lprotobuf-nanopb -lnghttp2 -lz

$(B)/pprof-c/profile.pb-c.c $(B)/pprof-c/profile.pb-c.h: ../proto/pprof/profile.proto
	@mkdir -p $(B)/pprof-c
	cp $< $(B)/pprof-c/profile.proto
	protoc-c --c_out=$(B)/pprof-c -I$(B)/pprof-c $(B)/pprof-c/profile.proto

$(B)/pprof_decode: tools/pprof_decode.c $(B)/pprof-c/profile.pb-c.c $(B)/pprof-c/profile.pb-c.h
	$(CC) -O2 -g -Wall -Wextra -Werror -I$(B)/pprof-c -o $@ tools/pprof_decode.c \
		$(B)/pprof-c/profile.pb-c.c -lprotobuf-c -lz
