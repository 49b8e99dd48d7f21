/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Numbers given as option values (command line, config file, a profiler's
 * own options): a decimal in a range, or microseconds kept as nanoseconds,
 * refused with one line that names the option.
 */
#ifndef NUMPARSE_H
#define NUMPARSE_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>	/* __u64: the kernel-boundary structs' type */

/* Parses a decimal number in [min, max]; false (after a one-line error naming @what) if not. */
bool parse_u64(const char *what, const char *arg, uint64_t min, uint64_t max, uint64_t *out);
/* A size in bytes, "16M", "512K", "1G" or plain, in [1, 1 TiB]; false after a one-line error naming @what. */
bool parse_size(const char *what, const char *arg, uint64_t *out);
/* A number of microseconds, at least @min_us, into *@ns; false after a one-line error naming @what. */
bool parse_us_as_ns(const char *what, const char *arg, uint64_t min_us, __u64 *ns);

#endif /* NUMPARSE_H */
