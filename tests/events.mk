# SPDX-License-Identifier: GPL-2.0
# The raw event stream's encoder/decoder and `aperture events` (tests/unit/events.t):
#  - $(B)/events_test: linked against the binary's archive;
#  - $(B)/events_test_asan: the same driver and sources under AddressSanitizer
#    (and UBSan), for the truncated and random files.
EVENTS_SRCS := ../user/export/bincode.c ../user/cmd/events.c ../user/lib/util.c
all: $(B)/events_test $(B)/events_test_asan

$(B)/events_test: unit/events_test.c $(APERTURE_LIB) | $(B)
	$(CC) $(TEST_CFLAGS) -o $@ $^ $(APERTURE_LDLIBS)

$(B)/events_test_asan: unit/events_test.c $(EVENTS_SRCS) $(wildcard ../user/export/bincode.h ../user/cmd/events.h) | $(B)
	$(CC) $(TEST_CFLAGS) -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
		-fno-omit-frame-pointer -o $@ unit/events_test.c $(EVENTS_SRCS)
