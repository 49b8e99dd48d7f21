# SPDX-License-Identifier: GPL-2.0
# The stacks' garbage collector on real BPF maps (tests/unit/stackgc.t), from
# the binary's own archive.
all: $(B)/stackgc_test
$(B)/stackgc_test: unit/stackgc_test.c $(APERTURE_LIB) | $(B)
	$(CC) $(TEST_CFLAGS) -o $@ $^ $(APERTURE_LDLIBS)
