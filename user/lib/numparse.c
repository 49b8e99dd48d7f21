// SPDX-License-Identifier: GPL-2.0
/*
 * Numbers given as option values, checked whole: no sign, no trailing text,
 * within the option's range.  Below the CLI, so that each profiler parses its
 * own options without reaching up into the command line's code.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include "numparse.h"
#include "util.h"

bool parse_u64(const char *what, const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v < min || v > max) {
		log_error("%s: '%s' is not a number in [%" PRIu64 ", %" PRIu64 "]", what, arg, min, max);
		return false;
	}
	*out = v;
	return true;
}

bool parse_us_as_ns(const char *what, const char *arg, uint64_t min_us, __u64 *ns)
{
	uint64_t us;

	if (!parse_u64(what, arg, min_us, UINT64_MAX / 1000, &us))
		return false;
	*ns = us * 1000;
	return true;
}

bool parse_size(const char *what, const char *arg, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (errno || end == arg || *end || arg[0] == '-' || v == 0 || v > (1ull << 40) >> shift) {
		log_error("%s: '%s' is not a size (e.g. 16M)", what, arg);
		return false;
	}
	*out = (uint64_t)v << shift;
	return true;
}
