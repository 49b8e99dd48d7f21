# SPDX-License-Identifier: GPL-2.0
# aperture: one static binary with its BPF objects embedded.

VERSION    ?= 0.1.0
CC         ?= gcc
CLANG      ?= clang
BPFTOOL    ?= bpftool
LLVM_STRIP ?= $(shell command -v llvm-strip || command -v llvm-strip-14 || echo llvm-strip)
PY3        ?= /usr/bin/python3
NANOPB_GEN ?= /usr/bin/nanopb_generator.py
BUILD      := build
ARCH       := x86

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS      := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
PROTOS     := $(shell find proto -name '*.proto' 2>/dev/null)
PB_SRCS    := $(patsubst proto/%.proto,$(BUILD)/gen/%.pb.c,$(PROTOS))
USER_SRCS  := $(wildcard user/*.c)
OBJS       := $(patsubst user/%.c,$(BUILD)/user/%.o,$(USER_SRCS)) \
              $(patsubst %.c,%.o,$(PB_SRCS))

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
              -Ivmlinux -Ibpf -I/usr/include/x86_64-linux-gnu
CFLAGS     ?= -O2 -g
CFLAGS     += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
              -Ibpf -Iuser -I$(BUILD) -I$(BUILD)/gen -I/usr/include/nanopb \
              -DAPERTURE_VERSION='"$(VERSION)"' -D_GNU_SOURCE
LDLIBS     := -Wl,--start-group -lbpf -lnghttp2 -lprotobuf-nanopb -ldw -lelf -lz -llzma -lbz2 -lzstd \
              -lpthread -lm -Wl,--end-group

.DELETE_ON_ERROR:
# Generated sources and skeletons are kept (no intermediate-file deletion).
.SECONDARY:
.PHONY: all deps run test test-unit test-kernels bench clean vmlinux size

all: aperture

deps:
	@bash tools/deps.sh

aperture: $(OBJS)
	@# glibc warns that dlopen (libdw's debuginfod hook) cannot work statically: expected, hidden.
	$(CC) -static -o $(BUILD)/aperture.unstripped $(OBJS) $(LDLIBS) 2> $(BUILD)/link.log || { cat $(BUILD)/link.log; exit 1; }
	@grep -v 'statically linked applications requires at runtime\|in function' $(BUILD)/link.log || true
	strip -o $@.tmp $(BUILD)/aperture.unstripped
	@mv -f $@.tmp $@	# atomic: a running aperture is not disturbed
	@echo "aperture: $$(stat -c %s $@) bytes, $$(file -b $@ | grep -o 'statically linked')"

$(BUILD)/%.bpf.o: bpf/%.bpf.c bpf/*.h vmlinux/vmlinux.h | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	@# DWARF is only for debugging; BTF (kept) is what CO-RE and bpftool need.
	$(LLVM_STRIP) -g $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@

$(BUILD)/gen/%.pb.c $(BUILD)/gen/%.pb.h: proto/%.proto $(wildcard proto/*.options proto/*/*.options proto/*/*/*.options)
	@mkdir -p $(BUILD)/gen
	$(PY3) $(NANOPB_GEN) -q -I proto -D $(BUILD)/gen $(patsubst proto/%,%,$<)

$(BUILD)/gen/%.pb.o: $(BUILD)/gen/%.pb.c
	$(CC) $(CFLAGS) -Wno-error -c $< -o $@

$(BUILD)/user/%.o: user/%.c $(wildcard user/*.h) bpf/aperture.h $(SKELS) $(patsubst %.c,%.h,$(PB_SRCS)) | $(BUILD)
	@mkdir -p $(BUILD)/user
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD):
	@mkdir -p $(BUILD)/user $(BUILD)/gen

# vmlinux.h is committed so that builds do not depend on the build host's kernel.
vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/vmlinux.h

# The main job on a local default: profile the whole machine for 10 s.
run: deps aperture
	./aperture record -d 10 -o profile.pb.gz -o profile.folded -o profile.svg --top 15

test: deps aperture
	@$(MAKE) -s -C tests
	prove -r --exec bash tests/

# Not part of `make test` (qemu TCG, about 20 s a boot): boots each kernel (default: Debian
# bookworm's newest 6.1 cloud kernel; KERNELS="vmlinuz-or-linux-image-package ...") normally and
# with lockdown=confidentiality / lockdown=integrity, runs a smoke subset of the static binary,
# prints a table and writes build/kernels/results.md; exit 1 if a step failed.
test-kernels: deps aperture
	@bash tools/deps.sh --kernels
	bash tools/test-kernels.sh $(KERNELS)

bench: aperture
	@bash tools/deps.sh --bench
	@$(MAKE) -s -C tests
	bash bench/run.sh

clean:
	rm -rf $(BUILD) aperture
	@$(MAKE) -s -C tests clean 2>/dev/null || true
