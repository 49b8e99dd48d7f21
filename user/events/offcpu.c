// SPDX-License-Identifier: GPL-2.0
/* Off-CPU profiler: owns the offcpu skeleton (tp_btf/sched_switch), or its build for older kernels. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "numparse.h"
#include "offcpu.h"
#include "offcpu.skel.h"
#include "offcpu_compat.skel.h"
#include "profiler.h"
#include "util.h"

_Static_assert(sizeof(struct offcpu_config) <= PROFILER_CONFIG_MAX, "offcpu_config too big");

static int offcpu_open(struct profiler *p, const struct profiler_opts *o)
{
	/* Only the older build keeps a start per thread id, to be freed at the thread's exit. */
	return PROFILER_OPEN_SKEL_BUILDS(p, offcpu,
		bpf_program__set_autoload(__skel->progs.offcpu_thread_exit, p->compat));
}

static void offcpu_close(struct profiler *p)
{
	if (p->compat)
		offcpu_compat_bpf__destroy(p->skel);
	else
		offcpu_bpf__destroy(p->skel);
}

static void offcpu_to_values(const struct profiler *p, const uint64_t *raw, uint64_t *values)
{
	values[0] = raw[0];	/* switch_count */
	values[1] = raw[1];	/* offcpu_ns */
}

static void offcpu_defaults(void *config)
{
	struct offcpu_config *cfg = config;

	cfg->min_block_ns = 1000;
	cfg->state_mask = BLOCK_STATE_INTERRUPTIBLE | BLOCK_STATE_UNINTERRUPTIBLE;
}

static bool parse_min_block(const char *arg, void *config)
{
	struct offcpu_config *cfg = config;

	return parse_us_as_ns("--min-block-us", arg, 0, &cfg->min_block_ns);
}

static bool parse_max_block(const char *arg, void *config)
{
	struct offcpu_config *cfg = config;

	return parse_us_as_ns("--max-block-us", arg, 1, &cfg->max_block_ns);
}

static bool parse_state(const char *arg, void *config)
{
	static const struct { const char *name; uint32_t mask; } states[] = {
		{ "blocked", BLOCK_STATE_INTERRUPTIBLE | BLOCK_STATE_UNINTERRUPTIBLE },
		{ "interruptible", BLOCK_STATE_INTERRUPTIBLE },
		{ "uninterruptible", BLOCK_STATE_UNINTERRUPTIBLE },
		{ "all", BLOCK_STATE_RUNNING | BLOCK_STATE_INTERRUPTIBLE | BLOCK_STATE_UNINTERRUPTIBLE },
	};
	struct offcpu_config *cfg = config;

	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		if (strcmp(arg, states[i].name) == 0) {
			cfg->state_mask = states[i].mask;
			return true;
		}
	}
	log_error("--state: '%s' is not one of blocked, interruptible, uninterruptible, all", arg);
	return false;
}

static bool offcpu_check(const void *config)
{
	const struct offcpu_config *cfg = config;

	if (cfg->max_block_ns && cfg->min_block_ns > cfg->max_block_ns) {
		log_error("--min-block-us is above --max-block-us: nothing could be counted");
		return false;
	}
	return true;
}

static const struct profiler_option offcpu_options[] = {
	{ "min-block-us", 0, "N", "off-CPU: ignore blocks shorter than N us (default 1)", parse_min_block },
	{ "max-block-us", 0, "N", "off-CPU: ignore blocks longer than N us (default: none)", parse_max_block },
	{ "state", 0, "S", "off-CPU: blocked (default: S and D sleeps), interruptible,\n"
			   "uninterruptible, or all (also counts preemption)", parse_state },
	{ NULL },
};

const struct profiler_ops profiler_offcpu = {
	.name = "offcpu",
	.id = PROFILER_OFFCPU,
	.cli.title = "Off-CPU",
	.cli.help = "where threads block: off-CPU time and switch counts",
	.skywalking_target = "OFF_CPU",
	.cli.options = offcpu_options,
	.config.size = sizeof(struct offcpu_config),
	.config.defaults = offcpu_defaults,
	.config.check = offcpu_check,
	.schema.nraw = 2,
	.schema.folded_raw = 1,
	.needs = FEAT_BIT(FEAT_BTF) | FEAT_BIT(FEAT_TP_SCHED_SWITCH) | FEAT_BIT(FEAT_TASK_STORAGE) |
		 FEAT_BIT(FEAT_TP_SCHED_EXEC) | FEAT_BIT(FEAT_RINGBUF),
	/* sched_switch's prev_state and task storage not needed: bpf/lib/kernel.bpf.h */
	.compat_needs = FEAT_BIT(FEAT_BTF) | FEAT_BIT(FEAT_TP_SCHED_EXEC) | FEAT_BIT(FEAT_RINGBUF),
	.schema.nvalues = 2,
	.schema.value_types = { { "switches", "count" }, { "offcpu", "nanoseconds" } },
	.schema.default_value = 1,
	.schema.top_by_user_leaf = true,
	.schema.period_type = { "offcpu", "nanoseconds" },
	.schema.to_values = offcpu_to_values,
	.open = offcpu_open,
	.close = offcpu_close,
};
