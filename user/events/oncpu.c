// SPDX-License-Identifier: GPL-2.0
/* On-CPU profiler: owns the oncpu skeleton and one perf event per online CPU. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include "numparse.h"
#include "oncpu.h"
#include "oncpu.skel.h"
#include "oncpu_compat.skel.h"
#include "profile_event.h"
#include "profiler.h"
#include "settings.h"
#include "util.h"

_Static_assert(sizeof(struct oncpu_config) <= PROFILER_CONFIG_MAX, "oncpu_config too big");

static int oncpu_open(struct profiler *p, const struct profiler_opts *o)
{
	return PROFILER_OPEN_SKEL_BUILDS(p, oncpu, (void)0);
}

static int perf_event_cpu_clock(int cpu, unsigned int freq_hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = freq_hz,
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * One perf event per online CPU, each owned by its BPF link once attached
 * (closing our fd then leaves the event to the link, so a pinned link keeps
 * sampling after the loader is gone).
 */
static int oncpu_attach(struct profiler *p)
{
	const struct oncpu_config *cfg = profiler_config(&p->opts, p->ops);
	struct bpf_program *prog = bpf_object__find_program_by_name(p->obj, "oncpu_sample");
	int ncpus = libbpf_num_possible_cpus();
	int attached = 0, err;

	if (ncpus <= 0 || !prog)
		return -EINVAL;
	for (int cpu = 0; cpu < ncpus; cpu++) {
		int event_fd = perf_event_cpu_clock(cpu, cfg->freq_hz);

		if (event_fd < 0) {
			if (errno == ENODEV)	/* offline CPU */
				continue;
			return -errno;
		}
		err = profiler_add_link(p, bpf_program__attach_perf_event(prog, event_fd));
		if (err) {
			close(event_fd);
			return err;
		}
		attached++;
	}
	if (!attached)
		return -ENODEV;
	return profiler_attach_tracing(p);
}

static void oncpu_close(struct profiler *p)
{
	if (p->compat)
		oncpu_compat_bpf__destroy(p->skel);
	else
		oncpu_bpf__destroy(p->skel);
}

static int64_t oncpu_period(const struct profiler *p)
{
	const struct oncpu_config *cfg = profiler_config(&p->opts, p->ops);

	return 1000000000ll / (cfg->freq_hz ? cfg->freq_hz : 1);
}

/* samples -> { samples, cpu ns = samples * period } */
static void oncpu_to_values(const struct profiler *p, const uint64_t *raw, uint64_t *values)
{
	values[0] = raw[0];
	values[1] = raw[0] * oncpu_period(p);
}

static void oncpu_defaults(void *config)
{
	struct oncpu_config *cfg = config;

	cfg->freq_hz = 99;
}

static bool parse_freq(const char *arg, void *config)
{
	struct oncpu_config *cfg = config;
	uint64_t hz;

	if (!parse_u64("-F", arg, 1, 100000, &hz))
		return false;
	cfg->freq_hz = (uint32_t)hz;
	return true;
}

static bool parse_include_idle(const char *arg, void *config)
{
	((struct oncpu_config *)config)->include_idle = 1;
	return true;
}

static bool parse_raw_samples(const char *arg, void *config)
{
	((struct oncpu_config *)config)->raw_samples = 1;
	return true;
}

/* The perf events were opened at their rate: a new one needs them opened again. */
static void oncpu_keep_fixed(const void *now, void *next, struct changed_keys *keys)
{
	const struct oncpu_config *have = now;
	struct oncpu_config *want = next;

	if (have->freq_hz != want->freq_hz)
		changed_keys_add(keys, "--freq %u (loaded: %u)", want->freq_hz, have->freq_hz);
	want->freq_hz = have->freq_hz;
}

static const struct profiler_option oncpu_options[] = {
	{ "freq", 'F', "HZ", "on-CPU samples per second per CPU (default 99)", parse_freq },
	{ "include-idle", 0, NULL, "count the idle task (on-CPU)", parse_include_idle },
	{ "raw-samples", 0, NULL, "on-CPU: every sample also as a CpuSample record (--events FILE)",
	  parse_raw_samples },
	{ NULL },
};

/* --raw-samples: one sample, its user stack then its kernel stack, each leaf first. */
static bool oncpu_raw_event(struct profiler *p, const struct aperture_raw_event *ev, size_t size,
			    struct raw_frames *f, struct profile_event *e)
{
	int user = raw_frames_add(f, p, ev->hdr.tgid, ev->user_stack_id, false);
	int kernel;

	(void)size;	/* the common struct, which the ring buffer's reader checked */
	e->kind = PE_CPU_SAMPLE;
	e->cpu.cpu_id = ev->cpu;
	e->cpu.user_stack = raw_frames_ips(f, user);
	e->cpu.user_stack_symbols = raw_frames_names(f, user);
	kernel = raw_frames_add(f, p, ev->hdr.tgid, ev->kernel_stack_id, true);
	e->cpu.kernel_stack = raw_frames_ips(f, kernel);
	e->cpu.kernel_stack_symbols = raw_frames_names(f, kernel);
	e->cpu.comm = f->comm;
	return true;
}

const struct profiler_ops profiler_oncpu = {
	.name = "oncpu",
	.id = PROFILER_ONCPU,
	.cli.title = "On-CPU",
	.cli.help = "where CPU time goes (the default when no profiler is named)",
	.cli.by_default = true,
	.skywalking_target = "ON_CPU",
	.cli.options = oncpu_options,
	.config.size = sizeof(struct oncpu_config),
	.config.defaults = oncpu_defaults,
	.config.keep_fixed = oncpu_keep_fixed,
	.schema.nraw = 1,
	.schema.folded_raw = 0,
	.needs = FEAT_BIT(FEAT_BTF) | FEAT_BIT(FEAT_PERF_EVENT_OPEN) | FEAT_BIT(FEAT_PROG_PERF_EVENT) |
		 FEAT_BIT(FEAT_TP_SCHED_EXEC) | FEAT_BIT(FEAT_RINGBUF),
	.pin_needs = FEAT_BIT(FEAT_PERF_LINK),
	.compat_needs = FEAT_BIT(FEAT_BTF) | FEAT_BIT(FEAT_PERF_EVENT_OPEN) | FEAT_BIT(FEAT_PROG_PERF_EVENT) |
			FEAT_BIT(FEAT_TP_SCHED_EXEC) | FEAT_BIT(FEAT_RINGBUF),
	.schema.nvalues = 2,
	.schema.value_types = { { "samples", "count" }, { "cpu", "nanoseconds" } },
	.schema.default_value = 0,
	.schema.period_type = { "cpu", "nanoseconds" },
	.schema.to_values = oncpu_to_values,
	.schema.period = oncpu_period,
	.raw_type = EVENT_CPU_SAMPLE,
	.raw_event = oncpu_raw_event,
	.open = oncpu_open,
	.attach = oncpu_attach,
	.close = oncpu_close,
};
