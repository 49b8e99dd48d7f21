// SPDX-License-Identifier: GPL-2.0
/* Off-CPU profiler: owns the offcpu skeleton (tp_btf/sched_switch). */
#include <errno.h>
#include <bpf/libbpf.h>
#include "offcpu.skel.h"
#include "profiler.h"

static int offcpu_open(struct profiler *p, const struct profiler_opts *o)
{
	return PROFILER_OPEN_SKEL(p, offcpu);
}

static int offcpu_attach(struct profiler *p)
{
	struct offcpu_bpf *skel = p->skel;
	struct bpf_program *prog;
	int err = 0;

	bpf_object__for_each_program(prog, skel->obj) {
		err = profiler_add_link(p, bpf_program__attach(prog));
		if (err)
			break;
	}
	return err;
}

static void offcpu_close(struct profiler *p)
{
	offcpu_bpf__destroy(p->skel);
}

static int64_t offcpu_period(const struct profiler *p)
{
	return 1;	/* every switch is measured, not sampled */
}

static void offcpu_to_values(const struct profiler *p, const uint64_t *raw, uint64_t *values)
{
	values[0] = raw[0];	/* switch_count */
	values[1] = raw[1];	/* offcpu_ns */
}

const struct profiler_ops profiler_offcpu = {
	.name = "offcpu",
	.id = PROFILER_OFFCPU,
	.title = "Off-CPU",
	.nraw = 2,
	.folded_raw = 1,
	.needs = FEAT_BIT(FEAT_BTF) | FEAT_BIT(FEAT_TP_SCHED_SWITCH) | FEAT_BIT(FEAT_TP_SCHED_EXIT) |
		 FEAT_BIT(FEAT_TP_SCHED_EXEC) | FEAT_BIT(FEAT_RINGBUF),
	.nvalues = 2,
	.value_types = { { "switches", "count" }, { "offcpu", "nanoseconds" } },
	.default_value = 1,
	.top_by_user_leaf = true,
	.period_type = { "offcpu", "nanoseconds" },
	.to_values = offcpu_to_values,
	.period = offcpu_period,
	.open = offcpu_open,
	.attach = offcpu_attach,
	.close = offcpu_close,
};
