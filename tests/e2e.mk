# SPDX-License-Identifier: GPL-2.0
# Workloads for tests/stacks/15-symbolize.t: symbolization end to end, through
# aperture record.  Included by tests/Makefile (cwd tests/, B = build).
E2E_SRC := workloads/e2e
E2E_TMP := $(B)/e2e

.PHONY: e2e
all: e2e
e2e: $(B)/cpuburn_mini $(B)/libburn_main

$(E2E_TMP):
	@mkdir -p $@

# cpuburn stripped, with only MiniDebugInfo (.gnu_debugdata) to name its functions
# (minidebuginfo is defined in sym.mk).
$(B)/cpuburn_mini: workloads/cpuburn.c workloads/wl.h e2e.mk | $(B) $(E2E_TMP)
	$(CC) $(WCFLAGS) -o $(E2E_TMP)/mini.full $< -lm
	$(call minidebuginfo,$(E2E_TMP)/mini.full,$@,$(E2E_TMP)/mini)

$(B)/libburn.so: $(E2E_SRC)/libburn.c | $(B)
	$(CC) $(WCFLAGS) -fPIC -shared -o $@ $<

$(B)/libburn_main: $(E2E_SRC)/libburn_main.c $(B)/libburn.so | $(B)
	$(CC) $(WCFLAGS) -o $@ $< -L$(B) -lburn -Wl,-rpath,'$$ORIGIN'
