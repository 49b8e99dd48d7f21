# SPDX-License-Identifier: GPL-2.0
# tests/unit/json.t's driver, linked against the binary's archive.
all: $(B)/json_test

$(B)/json_test: unit/json_test.c $(APERTURE_LIB) | $(B)
	$(CC) $(TEST_CFLAGS) -o $@ $^ $(APERTURE_LDLIBS)
