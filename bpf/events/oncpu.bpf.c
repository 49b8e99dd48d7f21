// SPDX-License-Identifier: GPL-2.0
/*
 * On-CPU profiler: a perf_event program on the CPU clock, one event per CPU,
 * counting samples per (tgid, pid, comm, user stack, kernel stack) in the
 * kernel.  User space only ever sees aggregated counts.
 */
#include "vmlinux.h"
#include "oncpu.h"
#define PROFILER_ID PROFILER_ONCPU
#define PROFILER_CONFIG struct oncpu_config
#define COUNTS_VALUE struct oncpu_value
#define COUNTS_VALUE_ADD(slot, delta) __sync_fetch_and_add(&(slot)->samples, (delta)->samples)
#include "events/profiler.bpf.h"

SEC("perf_event")
int oncpu_sample(struct bpf_perf_event_data *ctx)
{
	static const struct oncpu_value one_sample = { .samples = 1 };
	struct aperture_control *ctl = control_get();
	struct oncpu_config *cfg = config_get();
	__u64 id = bpf_get_current_pid_tgid();
	struct sample_key key = {};

	if (!ctl || !cfg)
		return 0;
	if ((__u32)id == 0 && !cfg->include_idle)
		return 0;
	if (!task_wanted(ctl, id >> 32))
		return 0;
	key_fill_perf_sample(ctx, ctl, &key);
	record_event(ctl, &key, &one_sample);
	if (cfg->raw_samples)
		raw_event_emit(ctl, EVENT_CPU_SAMPLE, &key, bpf_ktime_get_ns(), 0, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
