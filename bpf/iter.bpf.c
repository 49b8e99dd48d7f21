// SPDX-License-Identifier: GPL-2.0
/*
 * Pinned BPF iterators: `cat DIR/oncpu_folded` prints the aggregate straight
 * from the kernel, without the loader, in folded-stack format:
 *
 *   comm;FILE+0xADDR;...;0xUSER_LEAF;kfunc_ROOT_[k];...;kfunc_LEAF_[k][;@0xOBJECT] VALUE
 *
 * Kernel frames are symbolized here with %ps.  A user frame in a file the
 * unwinder lists for the process (unwind_procs, filled where DWARF unwinding
 * is on) is FILE+0xADDR: the file's path (escaped, user/unwind/) and the
 * frame's ELF virtual address in it, what `addr2line -e FILE` takes; other
 * user frames stay the raw hex address (the kernel has no user symbols).  The
 * loader attaches one instance of `folded` to each profiler's totals map,
 * reusing that profiler's stacks map and the run's unwind maps.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "aperture.h"
#include "unwind/mappings.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);		/* replaced by the profiler's stacks map */
	__type(key, __u64);
	__type(value, struct aperture_stack);
} stacks SEC(".maps");

/* Processes announced to user space (replaced by the profiler's map). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} seen_tgids SEC(".maps");

/*
 * A user frame: FILE+0xADDR where @proc maps a known file there, else hex.
 * A caller's frame is a return address: its mapping is the one of the call
 * (@ip - 1), which a call at a mapping's very end would otherwise miss.
 */
static __always_inline void print_user_frame(struct seq_file *seq, struct unwind_proc *proc,
					     __u64 ip, bool leaf)
{
	struct unwind_file_info *file = NULL;
	struct unwind_mapping *m = NULL;
	int idx = proc ? unwind_mapping_index(proc, leaf ? ip : ip - 1) : -1;
	__u32 file_id;

	if (proc && idx >= 0) {
		m = &proc->mappings[idx & (UNWIND_MAX_MAPPINGS - 1)];
		file_id = m->file_id;
		file = file_id ? bpf_map_lookup_elem(&unwind_files, &file_id) : NULL;
	}
	if (m && file)
		BPF_SEQ_PRINTF(seq, ";%s+0x%llx", file->path, ip - m->bias);
	else
		BPF_SEQ_PRINTF(seq, ";0x%llx", ip);
}

/* One half of a stack, root first (stored leaf first); kernel frames named here. */
static __always_inline void print_frames(struct seq_file *seq, __u64 stack_id, bool kernel,
					 struct unwind_proc *proc)
{
	struct aperture_stack *st;

	if (stack_id == APERTURE_STACK_LOST) {
		if (kernel)
			BPF_SEQ_PRINTF(seq, ";[kernel-stack-lost]_[k]");
		else
			BPF_SEQ_PRINTF(seq, ";[user-stack-lost]");
		return;
	}
	st = stack_id ? bpf_map_lookup_elem(&stacks, &stack_id) : NULL;
	if (!st)
		return;
	for (int i = APERTURE_MAX_DEPTH - 1; i >= 0; i--) {
		if (i >= st->depth)
			continue;
		if (kernel)
			BPF_SEQ_PRINTF(seq, ";%ps_[k]", (void *)st->ips[i]);
		else
			print_user_frame(seq, proc, st->ips[i], i == 0);
	}
}

static __always_inline bool print_stack(struct seq_file *seq, const struct sample_key *key_ro)
{
	struct sample_key key;

	/*
	 * Keys handed to map iterators are read-only buffers: copy first.  A
	 * plain copy, not bpf_probe_read_kernel, which lockdown=confidentiality
	 * refuses.
	 */
	__builtin_memcpy(&key, key_ro, sizeof(key));
	key.comm[APERTURE_COMM_LEN - 1] = 0;
	BPF_SEQ_PRINTF(seq, "%s", key.comm);
	print_frames(seq, key.user_stack_id, false, bpf_map_lookup_elem(&unwind_procs, &key.tgid));
	print_frames(seq, key.kernel_stack_id, true, NULL);
	if (key.object)		/* what the kind aggregates on (a lock): the leaf */
		BPF_SEQ_PRINTF(seq, ";@0x%llx", key.object);
	return true;
}

/* Which u64 of the counts value weighs a line: the profiler's folded_raw, set before load. */
const volatile __u32 weight_index = 0;

/* One folded line per totals entry, for every profiler: the value is a row of u64s. */
SEC("iter/bpf_map_elem")
int folded(struct bpf_iter__bpf_map_elem *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	/*
	 * Each load of ctx->key is a new maybe-NULL pointer to the verifier: load
	 * it once, or the second load is unchecked (6.1 and 6.12 refuse it).
	 */
	const struct sample_key *key = ctx->key;
	__u64 *value = ctx->value;

	if (!key || !value || weight_index >= APERTURE_MAX_VALUES)
		return 0;
	if (print_stack(seq, key))
		BPF_SEQ_PRINTF(seq, " %llu\n", value[weight_index]);
	return 0;
}

/*
 * `cat DIR/processes`: the live processes the profiler has counted events
 * of, one line each: "TGID COMM THREADS".
 */
SEC("iter/task")
int processes(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	__u32 tgid;

	if (!task || task->pid != task->tgid)	/* one line per process: its leader */
		return 0;
	tgid = task->tgid;
	if (!bpf_map_lookup_elem(&seen_tgids, &tgid))
		return 0;
	BPF_SEQ_PRINTF(seq, "%u %s %d\n", tgid, task->comm, task->signal->nr_threads);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
