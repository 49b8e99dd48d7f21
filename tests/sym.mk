# SPDX-License-Identifier: GPL-2.0
# Symbolizer fixtures and the symtest driver, for tests/unit/symbolize.t.
# Included by tests/Makefile (cwd tests/, B = build).
SYM_SRC      := workloads/sym
SYM_TMP      := $(B)/sym
SYM_FCFLAGS  := -O1 -g -fno-omit-frame-pointer -fno-inline -Wall
# The driver links the symbolizer from the binary's own archive.
SYM_FIXTURES := $(addprefix $(B)/,apsym_pie libapsym.so apsym_lib apsym_mini apsym_nosym \
                apsym_dlink apsym_jit)

.PHONY: sym
all: sym
sym: $(SYM_FIXTURES) $(B)/symtest

$(SYM_TMP):
	@mkdir -p $@

# Rebuilt when the recipes here change.
$(SYM_FIXTURES): sym.mk

$(B)/symtest: unit/symtest.c workloads/wl.h $(APERTURE_LIB) | $(B)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter-out %.h,$^) $(APERTURE_LDLIBS)

# (1) PIE executable.
$(B)/apsym_pie: $(SYM_SRC)/hot.c | $(B)
	$(CC) $(SYM_FCFLAGS) -fPIE -pie -DHOT=apsym_pie_hot -o $@ $<

# (2) an executable waiting in a shared library.  The library is linked at a
# non-zero base so that its link-time addresses differ from file offsets: the
# symbolizer must translate through PT_LOAD to find its symbols.
$(B)/libapsym.so: $(SYM_SRC)/lib.c | $(B)
	$(CC) $(SYM_FCFLAGS) -fPIC -shared -Wl,-Ttext-segment=0x40000 -o $@ $<

$(B)/apsym_lib: $(SYM_SRC)/libmain.c $(B)/libapsym.so | $(B)
	$(CC) $(SYM_FCFLAGS) -fPIE -pie -o $@ $< -L$(B) -lapsym -Wl,-rpath,'$$ORIGIN'

# (3) stripped, with minidebuginfo built the way Fedora's find-debuginfo does:
# the function symbols not in .dynsym, in a symbols-only ELF, xz-compressed
# into .gnu_debugdata.
$(B)/apsym_mini: $(SYM_SRC)/hot.c | $(B) $(SYM_TMP)
	$(CC) $(SYM_FCFLAGS) -fPIE -pie -DHOT=apsym_mini_hot -o $(SYM_TMP)/mini.full $<
	$(call minidebuginfo,$(SYM_TMP)/mini.full,$@,$(SYM_TMP)/mini)

# $(call minidebuginfo,FULL,OUT,SCRATCH): OUT = FULL stripped, its function
# symbols (those not in .dynsym) kept xz-compressed in .gnu_debugdata.
define minidebuginfo
	nm -D --defined-only --format=posix $(1) | awk '{ print $$1 }' | sort > $(3).dynsyms
	nm --defined-only --format=posix $(1) | awk '$$2 ~ /^[Tt]$$/ { print $$1 }' | sort > $(3).funcsyms
	comm -13 $(3).dynsyms $(3).funcsyms > $(3).keep
	objcopy --only-keep-debug $(1) $(3).debug
	objcopy -S --remove-section .gdb_index --remove-section .comment \
		--keep-symbols=$(3).keep $(3).debug $(3).symbols
	xz -f $(3).symbols
	strip --strip-all -o $(3).stripped $(1)
	objcopy --add-section .gnu_debugdata=$(3).symbols.xz $(3).stripped $(2)
endef

# A stripped file with nothing to name its functions: frames read module+0xOFF.
# The unstripped copy stays for the test to compute the expected offset.
$(B)/apsym_nosym: $(SYM_SRC)/hot.c | $(B) $(SYM_TMP)
	$(CC) $(SYM_FCFLAGS) -fPIE -pie -DHOT=apsym_nosym_hot -o $(SYM_TMP)/nosym.full $<
	strip --strip-all -o $@ $(SYM_TMP)/nosym.full

# Stripped, its symbols in apsym_dlink.debug next to it, named by .gnu_debuglink.
$(B)/apsym_dlink: $(SYM_SRC)/hot.c | $(B) $(SYM_TMP)
	$(CC) $(SYM_FCFLAGS) -fPIE -pie -DHOT=apsym_dlink_hot -o $(SYM_TMP)/dlink.full $<
	objcopy --only-keep-debug $(SYM_TMP)/dlink.full $(B)/apsym_dlink.debug
	strip --strip-all -o $(SYM_TMP)/dlink.stripped $(SYM_TMP)/dlink.full
	objcopy --add-gnu-debuglink=$(B)/apsym_dlink.debug $(SYM_TMP)/dlink.stripped $@

$(B)/apsym_jit: $(SYM_SRC)/jit.c | $(B)
	$(CC) $(SYM_FCFLAGS) -o $@ $<
