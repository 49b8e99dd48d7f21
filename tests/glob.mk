# SPDX-License-Identifier: GPL-2.0
# tests/unit/globmatch.t's driver, linked against the binary's archive.
all: $(B)/globmatch_test

$(B)/globmatch_test: unit/globmatch_test.c $(APERTURE_LIB) | $(B)
	$(CC) $(TEST_CFLAGS) -o $@ $^ $(APERTURE_LDLIBS)
