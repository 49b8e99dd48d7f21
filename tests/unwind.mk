# SPDX-License-Identifier: GPL-2.0
# Fixtures for tests/stacks/75-unwind.t: code WITHOUT frame pointers, so that
# only the DWARF (.eh_frame) walk finds its callers.  Included by
# tests/Makefile (cwd tests/, B = build).
UNWIND_SRC    := workloads/unwind
UNWIND_CFLAGS := -O2 -g -fomit-frame-pointer -fasynchronous-unwind-tables -Wall

.PHONY: unwind
all: unwind
unwind: $(B)/nofp $(B)/nofp_stripped

$(B)/nofp $(B)/libnofp.so: unwind.mk

$(B)/libnofp.so: $(UNWIND_SRC)/libnofp.c | $(B)
	$(CC) $(UNWIND_CFLAGS) -fPIC -shared -o $@ $<

$(B)/nofp: $(UNWIND_SRC)/nofp.c $(B)/libnofp.so | $(B)
	$(CC) $(UNWIND_CFLAGS) -fPIE -pie -o $@ $< -L$(B) -lnofp -Wl,-rpath,'$$ORIGIN'

# Two libraries of one source at the same offsets but with different frame sizes,
# loaded in turn at one address by swaplib: a replaced library's tables.
unwind: $(B)/swaplib $(B)/libswapa.so $(B)/libswapb.so
$(B)/swaplib $(B)/libswapa.so $(B)/libswapb.so: unwind.mk
$(B)/libswapa.so: $(UNWIND_SRC)/libswap.c | $(B)
	$(CC) $(UNWIND_CFLAGS) -fPIC -shared -DSWAP=a -DFRAME=256 -o $@ $<
$(B)/libswapb.so: $(UNWIND_SRC)/libswap.c | $(B)
	$(CC) $(UNWIND_CFLAGS) -fPIC -shared -DSWAP=b -DFRAME=4096 -o $@ $<
$(B)/swaplib: $(UNWIND_SRC)/swaplib.c | $(B)
	$(CC) $(UNWIND_CFLAGS) -o $@ $< -ldl

# No symbols at all: functions are named by their FDE's start (nofp_stripped+0xSTART).
$(B)/nofp_stripped: $(B)/nofp
	strip -s -o $@ $<

# C++ names for the demangling checks (skipped where there is no C++ compiler).
ifneq ($(shell command -v $(CXX) 2>/dev/null),)
unwind: $(B)/cppdemo
$(B)/cppdemo: $(UNWIND_SRC)/cppdemo.cc | $(B)
	$(CXX) $(UNWIND_CFLAGS) -o $@ $<
endif

# The unwind-table builder's driver and a hostile .eh_frame generator, for tests/unit/cfi.t.
unwind: $(B)/cfitest
$(B)/cfitest: unit/cfitest.c $(APERTURE_LIB) | $(B)
	$(CC) $(TEST_CFLAGS) -o $@ $^ $(APERTURE_LDLIBS)
