# SPDX-License-Identifier: GPL-2.0
# Workloads for tests/bpf/15-symbolize.t: symbolization end to end, through
# aperture record.  Included by tests/Makefile (cwd tests/, B = build).
E2E_SRC := workloads/e2e
E2E_TMP := $(B)/e2e

.PHONY: e2e
all: e2e
e2e: $(B)/cpuburn_mini $(B)/libburn_main

$(E2E_TMP):
	@mkdir -p $@

# cpuburn stripped, with only MiniDebugInfo (.gnu_debugdata) to name its functions.
$(B)/cpuburn_mini: workloads/cpuburn.c e2e.mk | $(B) $(E2E_TMP)
	$(CC) $(WCFLAGS) -o $(E2E_TMP)/mini.full $< -lm
	nm -D --defined-only --format=posix $(E2E_TMP)/mini.full | awk '{ print $$1 }' | sort > $(E2E_TMP)/mini.dynsyms
	nm --defined-only --format=posix $(E2E_TMP)/mini.full | awk '$$2 ~ /^[Tt]$$/ { print $$1 }' | sort > $(E2E_TMP)/mini.funcsyms
	comm -13 $(E2E_TMP)/mini.dynsyms $(E2E_TMP)/mini.funcsyms > $(E2E_TMP)/mini.keep
	objcopy --only-keep-debug $(E2E_TMP)/mini.full $(E2E_TMP)/mini.debug
	objcopy -S --remove-section .gdb_index --remove-section .comment \
		--keep-symbols=$(E2E_TMP)/mini.keep $(E2E_TMP)/mini.debug $(E2E_TMP)/mini.symbols
	xz -f $(E2E_TMP)/mini.symbols
	strip --strip-all -o $(E2E_TMP)/mini.stripped $(E2E_TMP)/mini.full
	objcopy --add-section .gnu_debugdata=$(E2E_TMP)/mini.symbols.xz $(E2E_TMP)/mini.stripped $@

$(B)/libburn.so: $(E2E_SRC)/libburn.c | $(B)
	$(CC) $(WCFLAGS) -fPIC -shared -o $@ $<

$(B)/libburn_main: $(E2E_SRC)/libburn_main.c $(B)/libburn.so | $(B)
	$(CC) $(WCFLAGS) -o $@ $< -L$(B) -lburn -Wl,-rpath,'$$ORIGIN'
