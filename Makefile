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
# The BPF target architecture (bpf_tracing.h's PT_REGS) and the multiarch include dir.
UNAME_M    := $(shell uname -m)
ARCH       := $(or $(patsubst x86_64,x86,$(filter x86_64,$(UNAME_M))),$(patsubst aarch64,arm64,$(filter aarch64,$(UNAME_M))),$(UNAME_M))
MULTIARCH  := $(shell $(CC) -dumpmachine)

# `make V=1` shows the commands.
ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' $(1) $(2)
endif

# Sources by folder: adding a file is all it takes.
BPF_SRCS   := $(wildcard bpf/*.bpf.c bpf/*/*.bpf.c)
BPF_OBJS   := $(patsubst %.bpf.c,$(BUILD)/%.bpf.o,$(notdir $(BPF_SRCS)))
SKELS      := $(patsubst %.bpf.c,$(BUILD)/%.skel.h,$(notdir $(BPF_SRCS)))
# What user space sees of bpf/: the headers shared with the kernel side, nothing else.
BPF_DIRS   := bpf/include
PROTOS     := $(shell find proto -name '*.proto' 2>/dev/null)
PB_SRCS    := $(patsubst proto/%.proto,$(BUILD)/gen/%.pb.c,$(PROTOS))
PB_OBJS    := $(patsubst %.c,%.o,$(PB_SRCS))
USER_DIRS  := $(patsubst %/,%,$(sort $(dir $(wildcard user/*/*.c user/*/*.h))))
USER_SRCS  := $(wildcard user/*/*.c)
USER_HDRS  := $(wildcard user/*/*.h bpf/*.h bpf/*/*.h)
USER_OBJS  := $(patsubst user/%.c,$(BUILD)/user/%.o,$(USER_SRCS))
MAIN_OBJ   := $(BUILD)/user/cmd/main.o
# Stand-ins for library objects aperture never uses (see the file): an object on the link line,
# before the libraries, outside the archive (which the tests link).
TRIM_OBJ   := $(BUILD)/user/link_trims.o
# Everything but main(): the tests link this same archive.
LIB        := $(BUILD)/libaperture.a
LIB_OBJS   := $(filter-out $(MAIN_OBJ),$(USER_OBJS)) $(PB_OBJS)

vpath %.bpf.c $(sort $(dir $(BPF_SRCS)))

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
              -Ivmlinux -Ibpf/include -Ibpf -I/usr/include/$(MULTIARCH)
INCLUDES   := $(addprefix -I,$(USER_DIRS) $(BPF_DIRS)) -I$(BUILD) -I$(BUILD)/gen -I/usr/include/nanopb
# What every build of our C needs (the release binary's and the sanitizer build's).
BASE_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
               $(INCLUDES) -DAPERTURE_VERSION='"$(VERSION)"' -D_GNU_SOURCE
CFLAGS     ?= -O2 -g
CFLAGS     += $(BASE_CFLAGS)
# Size (an edge binary): every function and object in its own section so that the linker drops
# what nothing calls, and link-time optimization across our files.  The objects are fat (code
# and LTO IR): tests/ link the same archive without LTO.  Debian's static libraries are plain
# objects, so LTO and --gc-sections reach only our code; see `make size`.
CFLAGS     += -ffunction-sections -fdata-sections -flto=auto -ffat-lto-objects
LDFLAGS    += -Wl,--gc-sections -flto=auto -O2
# Hardening for a daemon that runs for months as root and parses other programs' ELF files and
# the OAP's answers: bounds-checked libc calls where the size is known at compile time, canaries
# in functions with arrays or address-taken locals, relocated data read-only before main()
# (glibc's static start-up applies RELRO itself), and a static PIE, so that the code is not at
# the same address in every run.  Debian's static libraries are built PIE, so -static-pie links;
# packed relative relocations (DT_RELR, glibc >= 2.36) hold its ~6000 relocations in 1.6 KB
# instead of 141 KB.  STATIC=-static builds the fixed-address binary.
HARDEN_CFLAGS  := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
HARDEN_LDFLAGS := -Wl,-z,relro,-z,now -Wl,-z,pack-relative-relocs
STATIC     ?= -static-pie
CFLAGS     += $(HARDEN_CFLAGS)
LDFLAGS    += $(HARDEN_LDFLAGS)
# -Os where speed is not at stake: the command line and doctor, and the SkyWalking agent, its
# message codec and the gRPC transport (they wait on the network; the agent's snapshots are
# read by the profilers' own code, built -O2), the option parsing and config file, the kernel
# probes run once at start, pinning, and the SVG written once at the end.  Sampling,
# symbolization, unwinding and pprof encoding stay -O2.
$(BUILD)/user/cmd/%.o $(BUILD)/user/agent/%.o $(BUILD)/user/skywalking/%.o $(BUILD)/user/net/%.o: CFLAGS += -Os
$(addprefix $(BUILD)/user/,cli/cli.o cli/config.o lib/numparse.o core/kernel_features.o core/pin.o export/export_svg.o): CFLAGS += -Os
# Plain code: the linker must see these definitions as they are, before the libraries.
$(TRIM_OBJ): CFLAGS += -fno-lto
AR         := gcc-ar
LDLIBS     := -Wl,--start-group -lbpf -lnghttp2 -lmbedtls -lmbedx509 -lmbedcrypto -lprotobuf-nanopb -ldw -lelf -liberty -lz -llzma -lbz2 -lzstd \
              -lpthread -lm -Wl,--end-group
# The sanitizer build, build/asan/aperture (`make aperture-asan`, `make test-asan`): the same
# sources and embedded BPF objects under AddressSanitizer and UBSan, every report fatal.  Named
# aperture like the release binary: tests tell aperture's own comm from the workloads'.  ASan
# cannot link statically, so this one links the shared libraries, without LTO, fortify (its
# checked calls would bypass ASan's) or link_trims.c (its stand-ins would take the place of
# symbols the shared libraries export).  Built by clang: with GCC's separate runtimes UBSan
# ignores log_path and reports only on stderr, which the tests that run the daemon in the
# background never read (tools/test-asan.sh collects the log files).
SAN_BUILD  := $(BUILD)/asan
SAN_CC     ?= $(CLANG)
SAN_FLAGS  := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_CFLAGS := -O1 -g $(SAN_FLAGS) $(BASE_CFLAGS)
SAN_OBJS   := $(patsubst $(BUILD)/%,$(SAN_BUILD)/%,$(USER_OBJS) $(PB_OBJS))
# What tests/Makefile needs to link against the archive.
export APERTURE_LIB := $(abspath $(LIB))
export APERTURE_INCLUDES := $(foreach d,$(USER_DIRS) $(BPF_DIRS) $(BUILD) $(BUILD)/gen,-I$(abspath $(d))) -I/usr/include/nanopb
export APERTURE_LDLIBS := $(LDLIBS)

.DELETE_ON_ERROR:
# Generated sources and skeletons are kept (no intermediate-file deletion).
.SECONDARY:
.PHONY: all deps run aperture-asan test test-asan test-unit test-kernels bench clean vmlinux size fuzz soak

all: aperture

deps:
	@bash tools/deps.sh

aperture: $(MAIN_OBJ) $(TRIM_OBJ) $(LIB)
	$(call msg,LINK,$@)
	@# glibc warns that dlopen (libdw's debuginfod hook) cannot work statically: expected, hidden.
	$(Q)$(CC) $(STATIC) $(LDFLAGS) -Wl,-Map=$(BUILD)/aperture.map -o $(BUILD)/aperture.unstripped $(MAIN_OBJ) $(TRIM_OBJ) $(LIB) $(LDLIBS) 2> $(BUILD)/link.log || { cat $(BUILD)/link.log; exit 1; }
	@grep -v 'statically linked applications requires at runtime\|in function' $(BUILD)/link.log || true
	$(Q)strip -o $@.tmp $(BUILD)/aperture.unstripped
	@mv -f $@.tmp $@	# atomic: a running aperture is not disturbed
	@echo "aperture: $$(stat -c %s $@) bytes, $$(file -b $@ | grep -Eo 'static(ally|-pie) linked')"

aperture-asan: $(SAN_BUILD)/aperture

$(SAN_BUILD)/aperture: $(SAN_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(SAN_CC) $(SAN_FLAGS) -o $@ $^ $(LDLIBS)

$(SAN_BUILD)/user/%.o: user/%.c $(USER_HDRS) $(SKELS) $(patsubst %.c,%.h,$(PB_SRCS)) $(BUILD)/gen/syscall_names.h | $(BUILD)
	@mkdir -p $(dir $@)
	$(call msg,CC-ASAN,$<)
	$(Q)$(SAN_CC) $(SAN_CFLAGS) -c $< -o $@

$(SAN_BUILD)/gen/%.pb.o: $(BUILD)/gen/%.pb.c
	@mkdir -p $(dir $@)
	$(call msg,CC-ASAN,$<)
	$(Q)$(SAN_CC) $(SAN_CFLAGS) -Wno-error -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# X_compat.bpf.c is X.bpf.c built for older kernels (bpf/lib/kernel.bpf.h): it includes it.
$(foreach c,$(filter %_compat.bpf.c,$(BPF_SRCS)),$(eval $(BUILD)/$(notdir $(c:.c=.o)): $(c:_compat.bpf.c=.bpf.c)))

$(BUILD)/%.bpf.o: %.bpf.c $(wildcard bpf/*.h bpf/*/*.h) vmlinux/vmlinux.h | $(BUILD)
	$(call msg,BPF,$<)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	@# DWARF is only for debugging; BTF (kept) is what CO-RE and bpftool need.  libbpf skips
	@# the relocations of .BTF and .BTF.ext (their targets hold no instructions) and .llvm_addrsig.
	$(Q)$(LLVM_STRIP) -g -R .rel.BTF -R .rel.BTF.ext -R .llvm_addrsig $@

# The skeleton embeds the object xz-compressed (tools/skel-xz.py, user/lib/bpf_xz.c); the
# stream is also left in build/NAME.bpf.xz for `make size`.
$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o tools/skel-xz.py
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf | $(PY3) tools/skel-xz.py $< $(BUILD)/$*.bpf.xz > $@.tmp && mv -f $@.tmp $@

$(BUILD)/gen/%.pb.c $(BUILD)/gen/%.pb.h: proto/%.proto $(wildcard proto/*.options proto/*/*.options proto/*/*/*.options)
	@mkdir -p $(BUILD)/gen
	$(call msg,NANOPB,$<)
	$(Q)$(PY3) $(NANOPB_GEN) -q -I proto -D $(BUILD)/gen $(patsubst proto/%,%,$<)

$(BUILD)/gen/%.pb.o: $(BUILD)/gen/%.pb.c
	$(call msg,CC,$<)
	$(Q)$(CC) $(CFLAGS) -Wno-error -c $< -o $@

# Syscall names from the kernel headers of the build machine's architecture.
$(BUILD)/gen/syscall_names.h: tools/gen-syscall-names.sh | $(BUILD)
	$(call msg,GEN,$@)
	$(Q)bash $< /usr/include/$(MULTIARCH)/asm/unistd_64.h > $@.tmp && mv $@.tmp $@

$(BUILD)/user/%.o: user/%.c $(USER_HDRS) $(SKELS) $(patsubst %.c,%.h,$(PB_SRCS)) $(BUILD)/gen/syscall_names.h | $(BUILD)
	@mkdir -p $(dir $@)
	$(call msg,CC,$<)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

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

# The whole suite again with build/asan/aperture in place of aperture (tools/test-asan.sh): fails
# on a test failure or on any sanitizer report, even one from a process no test checked.
test-asan: deps aperture-asan $(LIB)
	@$(MAKE) -s -C tests
	bash tools/test-asan.sh

# Not part of `make test`: the daemon under load for SOAK_MINUTES (default 10), failing if its RSS
# or open fds grow after the warm-up; the figures go to build/soak.txt (tools/soak.sh).
soak: deps aperture
	@$(MAKE) -s -C tests
	bash tools/soak.sh

# Not part of `make test` (qemu TCG, about a minute a boot, 10 more with the test files): boots each
# kernel (default: Debian bookworm's newest 6.1 cloud kernel; KERNELS="vmlinuz-or-linux-image-package
# ...") normally and with lockdown=confidentiality / lockdown=integrity, runs a smoke subset of the
# static binary and, in the normal boot, tests/{pinning/50-pinned,doctor/55-degraded,profilers/60-locks}.t on this
# machine's root filesystem (tools/test-kernels.sh --help), prints a table and writes
# build/kernels/results.md; exit 1 if a step failed.
test-kernels: deps aperture
	@bash tools/deps.sh --kernels
	bash tools/test-kernels.sh $(KERNELS)

# libFuzzer (clang -fsanitize=fuzzer,address,undefined) on every parser of outside input
# (tests/fuzz, README "Fuzzing"): each target FUZZ_SECONDS from its seed corpus, one at a time;
# FUZZ_TARGETS="elf maps" runs only those.  New inputs go to build/fuzz/corpus, crashes to
# build/fuzz/crashes.  Not part of `make test`, which replays the corpora (tests/fuzz/10-replay.t).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz: aperture
	bash tests/fuzz/build.sh $(BUILD)/fuzz $(FUZZ_TARGETS)
	bash tests/fuzz/run.sh $(BUILD)/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Bytes of the stripped binary by component (our code, libbpf, elfutils, ..., embedded BPF objects).
size: aperture
	@$(PY3) tools/size.py

bench: aperture
	@bash tools/deps.sh --bench
	@$(MAKE) -s -C tests
	bash bench/run.sh

clean:
	rm -rf $(BUILD) aperture
	@$(MAKE) -s -C tests clean 2>/dev/null || true
