// SPDX-License-Identifier: GPL-2.0
/*
 * Bench-only build of the on-CPU sample program in pieces (bench/unwind.sh,
 * table U4): each program below is bpf/events/oncpu.bpf.c's oncpu_sample
 * with parts left out, built from the product's own headers, so that the
 * difference of two programs' ns per run is what that part costs.  Never
 * part of the aperture binary; loaded by bench/fpcost.c.
 */
#include "vmlinux.h"
#include "oncpu.h"
#define PROFILER_ID PROFILER_ONCPU
#define PROFILER_CONFIG struct oncpu_config
#define COUNTS_VALUE struct oncpu_value
#define COUNTS_VALUE_ADD(slot, delta) __sync_fetch_and_add(&(slot)->samples, (delta)->samples)
#include "events/profiler.bpf.h"

static const struct oncpu_value one_sample = { .samples = 1 };

/* What every sample pays before its key: control and config maps, the idle and target filters. */
static __always_inline struct aperture_control *prologue(void)
{
	struct aperture_control *ctl = control_get();
	struct oncpu_config *cfg = config_get();
	__u64 id = bpf_get_current_pid_tgid();

	if (!ctl || !cfg)
		return NULL;
	if ((__u32)id == 0 && !cfg->include_idle)
		return NULL;
	if (!task_wanted(ctl, id >> 32))
		return NULL;
	return ctl;
}

/* key_fill_current() without the stacks (the announcement kept). */
static __always_inline void key_who(const struct aperture_control *ctl, struct sample_key *key)
{
	key_fill_who(key, 0);
	process_seen(ctl, key->tgid);
}

/* bpf_get_stack() into the per-CPU scratch only: no hash, no map. */
static __always_inline struct aperture_stack *walk_only(void *ctx, bool user)
{
	__u32 zero = 0;
	struct aperture_stack *st = bpf_map_lookup_elem(&stack_scratch, &zero);
	long len;

	if (!st)
		return NULL;
	len = bpf_get_stack(ctx, st->ips, sizeof(st->ips), user ? BPF_F_USER_STACK : 0);
	st->depth = len > 0 ? len / sizeof(__u64) : 0;
	return st;
}

static __always_inline bool has_mm(void)
{
	return bpf_get_current_task_btf()->mm != NULL;
}

SEC("perf_event")
int v_empty(struct bpf_perf_event_data *ctx)
{
	return 0;
}

SEC("perf_event")
int v_filter(struct bpf_perf_event_data *ctx)
{
	prologue();
	return 0;
}

SEC("perf_event")
int v_key(struct bpf_perf_event_data *ctx)
{
	struct aperture_control *ctl = prologue();
	struct sample_key key = {};

	if (!ctl)
		return 0;
	key_who(ctl, &key);
	return key.comm[0] == 1;	/* keeps the key live */
}

SEC("perf_event")
int v_nostack(struct bpf_perf_event_data *ctx)
{
	struct aperture_control *ctl = prologue();
	struct sample_key key = {};

	if (!ctl)
		return 0;
	key_who(ctl, &key);
	record_event(ctl, &key, &one_sample);
	return 0;
}

SEC("perf_event")
int v_walk_k(struct bpf_perf_event_data *ctx)
{
	if (!prologue())
		return 0;
	walk_only(ctx, false);
	return 0;
}

SEC("perf_event")
int v_walk_u(struct bpf_perf_event_data *ctx)
{
	if (!prologue())
		return 0;
	if (has_mm())
		walk_only(ctx, true);
	return 0;
}

SEC("perf_event")
int v_walk_hash(struct bpf_perf_event_data *ctx)
{
	struct aperture_stack *st;
	__u64 h = 0;

	if (!prologue())
		return 0;
	if (has_mm() && (st = walk_only(ctx, true)))
		h ^= stack_hash(st);
	if ((st = walk_only(ctx, false)))
		h ^= stack_hash(st);
	return h == 1;
}

SEC("perf_event")
int v_kstack(struct bpf_perf_event_data *ctx)
{
	struct aperture_control *ctl = prologue();
	struct sample_key key = {};

	if (!ctl)
		return 0;
	key_who(ctl, &key);
	key.kernel_stack_id = stack_store(ctx, false);
	record_event(ctl, &key, &one_sample);
	return 0;
}

SEC("perf_event")
int v_ustack(struct bpf_perf_event_data *ctx)
{
	struct aperture_control *ctl = prologue();
	struct sample_key key = {};

	if (!ctl)
		return 0;
	key_who(ctl, &key);
	if (has_mm())
		key.user_stack_id = stack_store(ctx, true);
	record_event(ctl, &key, &one_sample);
	return 0;
}

SEC("perf_event")
int v_nocounts(struct bpf_perf_event_data *ctx)
{
	struct aperture_control *ctl = prologue();
	struct sample_key key = {};

	if (!ctl)
		return 0;
	key_who(ctl, &key);
	stacks_fill(ctx, ctl, &key, stacks_user(ctl), true);
	return key.user_stack_id == 1;
}

/*
 * A candidate for the product: the user stack by frame pointers walked here
 * (bpf_probe_read_user in a bpf_loop, as bpf/unwind/dwarf.bpf.h's
 * unwind_fp_step does for mappings without tables) instead of by
 * bpf_get_stack(BPF_F_USER_STACK), stopping as soon as the next frame
 * pointer does not lie above the current one (the kernel's walk reads on
 * until a read faults).
 */
struct fp_walk {
	struct aperture_stack *st;
	__u64 bp;
};

static long fp_step(__u64 index, void *arg)
{
	struct fp_walk *w = arg;
	__u32 d = w->st->depth;
	__u64 next, ra;

	if (d >= APERTURE_MAX_DEPTH || !w->bp)
		return 1;
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(w->bp + 8)) ||
	    bpf_probe_read_user(&next, sizeof(next), (void *)w->bp))
		return 1;
	w->st->ips[d] = ra;
	w->st->depth = d + 1;
	if (next <= w->bp)
		return 1;
	w->bp = next;
	return 0;
}

static __always_inline void walk_fp_bpf(struct aperture_stack *st)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	struct fp_walk w = { .st = st };

	st->depth = 0;
	if (!regs)
		return;
	st->ips[0] = BPF_CORE_READ(regs, ip);
	st->depth = 1;
	w.bp = BPF_CORE_READ(regs, bp);
	bpf_loop(APERTURE_MAX_DEPTH, fp_step, &w, 0);
}

SEC("perf_event")
int v_walk_u_bpf(struct bpf_perf_event_data *ctx)
{
	__u32 zero = 0;
	struct aperture_stack *st;

	if (!prologue())
		return 0;
	st = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (st && has_mm())
		walk_fp_bpf(st);
	return 0;
}

/* The whole of oncpu_sample, as the product builds it. */
SEC("perf_event")
int v_full(struct bpf_perf_event_data *ctx)
{
	struct aperture_control *ctl = prologue();
	struct sample_key key = {};

	if (!ctl)
		return 0;
	key_fill_perf_sample(ctx, ctl, &key);
	record_event(ctl, &key, &one_sample);
	return 0;
}

/* v_walk_k, only for samples that did not interrupt user mode (as oncpu_sample). */
SEC("perf_event")
int v_walk_k_um(struct bpf_perf_event_data *ctx)
{
	if (!prologue())
		return 0;
	if (!perf_sample_in_user_mode(ctx))
		walk_only(ctx, false);
	return 0;
}

/*
 * What touching memory costs a sample, by pages (bench/python-phases.sh):
 * TOUCH_LINES cache lines read per run, each in a page of its own
 * (t_pages) or all within one page (t_lines), against the same program
 * reading one line TOUCH_LINES times (t_same).  t_pages - t_lines is what
 * the extra page walks cost; t_lines - t_same what the cache misses cost.
 * Every non-idle sample runs them (no target filter).
 */
#define TOUCH_LINES 32
#define TOUCH_PAGE_LINES 64	/* 64-byte values in a 4 KiB page */

struct touch_line {
	__u64 v[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TOUCH_LINES * TOUCH_PAGE_LINES);
	__type(key, __u32);
	__type(value, struct touch_line);
} touch SEC(".maps");

static __always_inline int touch_run(__u32 stride)
{
	__u64 sum = 0, id = bpf_get_current_pid_tgid();

	if ((__u32)id == 0)
		return 0;
	for (__u32 i = 0; i < TOUCH_LINES; i++) {
		__u32 idx = i * stride;
		struct touch_line *l = bpf_map_lookup_elem(&touch, &idx);

		if (l)
			sum += l->v[0];
	}
	return sum == 1;
}

SEC("perf_event")
int t_pages(struct bpf_perf_event_data *ctx)
{
	return touch_run(TOUCH_PAGE_LINES);
}

SEC("perf_event")
int t_lines(struct bpf_perf_event_data *ctx)
{
	return touch_run(1);
}

SEC("perf_event")
int t_same(struct bpf_perf_event_data *ctx)
{
	return touch_run(0);
}

char LICENSE[] SEC("license") = "GPL";
