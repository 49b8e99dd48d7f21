/* SPDX-License-Identifier: GPL-2.0 */
/* On-CPU profiler structs shared with user space. */
#ifndef ONCPU_H
#define ONCPU_H

#include "aperture.h"

/* Value of the on-CPU counts maps. */
struct oncpu_value {
	__u64 samples;
};

/* oncpu_config: the on-CPU profiler's own settings (pinned, bpftool-writable). */
struct oncpu_config {
	__u32 include_idle;	/* count the idle task (pid 0) */
	__u32 freq_hz;		/* what the perf events were opened with (read-only) */
	__u32 raw_samples;	/* every sample also as a raw event (with control.raw_events) */
	__u32 pad;
};

_Static_assert(sizeof(struct oncpu_config) == 16, "oncpu_config layout");

#endif /* ONCPU_H */
