/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every interval output of the daemon implements (the files of
 * --output-dir, the Pyroscope route): it takes each kind's profile at the
 * end of an interval, may work between intervals, and says its state in the
 * health line.  The daemon keeps a table of them.
 */
#ifndef OUTPUT_H
#define OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include "profile.h"
#include "usage.h"

struct output_ops {
	const char *name;
	/* An interval's profile of one kind (its time_ns and duration_ns say when); 0 or -errno after one line. */
	int (*write)(void *state, const struct profile *prof);
	/*
	 * Between intervals, and once more with @stopping before close; may be
	 * NULL.  Returns when it next wants to be called (CLOCK_MONOTONIC ns):
	 * UINT64_MAX when nothing waits (the next write brings work, and a poll
	 * after it), so that an idle output does not keep the daemon waking.
	 */
	uint64_t (*poll)(void *state, bool stopping);
	/* Its part of the interval's health line; may be NULL. */
	void (*health)(void *state, struct usage_line *line);
	void (*close)(void *state);
};

#endif /* OUTPUT_H */
