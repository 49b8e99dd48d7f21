// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel feature probes and their one table: each feature probed once, on first use,
 * by loading its program of bpf/probe.bpf.c on its own or by calling the syscall
 * (kernel_features.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/perf_event.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kernel_features.h"
#include "kernel_names.h"
#include "procmaps.h"
#include "safe_open.h"
#include "aperture.h"
#include "bpf_quiet.h"
#include "iter.skel.h"
#include "probe.skel.h"
#include "util.h"

#ifndef TRACEFS_MAGIC
#define TRACEFS_MAGIC 0x74726163
#endif

typedef int (*probe_fn)(const char **step);

struct feature_desc {
	const char *name;
	const char *what;
	const char *prog;	/* probe.bpf.c program whose load is the probe */
	probe_fn probe;		/* or a probe of its own */
	uint64_t requires;	/* FEAT_BIT()s it cannot be without: missing (or switched off), it is too */
};

static struct feature_result results[FEAT_MAX];

static int probe_btf(const char **step);
static int probe_perf_event_open(const char **step);
static int probe_ringbuf(const char **step);
static int probe_batch_ops(const char **step);
static int probe_iter_task(const char **step);
static int probe_iter_map_elem(const char **step);
static int probe_uprobe(const char **step);
static int probe_bpffs(const char **step);
static int probe_tracefs(const char **step);
static int probe_fentry(const char **step);
static int probe_openat2(const char **step);
static int probe_ksym_names(const char **step);
static int probe_perf_link(const char **step);

static const struct feature_desc descs[FEAT_MAX] = {
	[FEAT_BTF] = { "btf", "kernel BTF (/sys/kernel/btf/vmlinux)", NULL, probe_btf },
	[FEAT_PERF_EVENT_OPEN] = { "perf_event_open", "software cpu-clock perf events", NULL,
				   probe_perf_event_open },
	[FEAT_PROG_PERF_EVENT] = { "prog_perf_event", "BPF programs on perf events", "probe_perf_event" },
	[FEAT_TP_SCHED_SWITCH] = { "tp_sched_switch", "tp_btf/sched_switch with prev_state",
				   "probe_sched_switch" },
	[FEAT_TASK_STORAGE] = { "task_storage", "BPF task storage (per-thread state)", "probe_task_storage" },
	[FEAT_TP_SCHED_EXEC] = { "tp_sched_process_exec", "tp_btf/sched_process_exec",
				 "probe_sched_process_exec" },
	[FEAT_RINGBUF] = { "ringbuf", "BPF ring buffer", NULL, probe_ringbuf },
	[FEAT_BATCH_OPS] = { "batch_ops", "batched map lookup-and-delete", NULL, probe_batch_ops },
	[FEAT_ITER_TASK] = { "iter_task", "BPF task iterators (iter/task)", NULL, probe_iter_task },
	[FEAT_ITER_MAP_ELEM] = { "iter_map_elem", "BPF map-element iterators (iter/bpf_map_elem)", NULL,
				 probe_iter_map_elem },
	[FEAT_COOKIE] = { "bpf_cookie", "bpf_get_attach_cookie", "probe_cookie" },
	[FEAT_NS_PID] = { "ns_current_pid_tgid", "bpf_get_ns_current_pid_tgid", "probe_ns_pid" },
	[FEAT_PROBE_READ_KERNEL] = { "probe_read_kernel", "bpf_probe_read_kernel (denied by lockdown=confidentiality)",
				     "probe_read_kernel" },
	[FEAT_UPROBE] = { "uprobe", "uprobes (uprobe PMU)", NULL, probe_uprobe },
	[FEAT_TP_CONTENTION] = { "tp_contention", "tp_btf/contention_begin and contention_end (lock:)",
				 "probe_contention" },
	[FEAT_TP_SYS_ENTER] = { "tp_sys_enter", "tp_btf/sys_enter (raw syscalls)", "probe_sys_enter" },
	[FEAT_TP_SYS_EXIT] = { "tp_sys_exit", "tp_btf/sys_exit (raw syscalls)", "probe_sys_exit" },
	[FEAT_BPFFS] = { "bpffs", "bpffs at /sys/fs/bpf (mounted or mountable)", NULL, probe_bpffs },
	[FEAT_TRACEFS] = { "tracefs", "tracefs (mounted or mountable; aperture does not need it)", NULL,
			   probe_tracefs },
	[FEAT_FENTRY] = { "fentry", "fentry programs (BPF trampolines; locks --lock-hold, kernel side)", NULL,
			  probe_fentry },
	[FEAT_DWARF_UNWIND] = { "dwarf_unwind", "bpf_loop + bpf_task_pt_regs in perf_event programs (--unwind dwarf, 5.17+)",
				"probe_dwarf_unwind", NULL, FEAT_BIT(FEAT_BPF_LOOP) },
	[FEAT_RQ_LOCKS] = { "rq_locks", "a CPU's runqueue through its current task (locks: runqueue lock names)",
			    "probe_rq_locks" },
	[FEAT_TP_SCHED_FORK] = { "tp_sched_process_fork", "tp_btf/sched_process_fork (children of -p and COMMAND followed)",
				 "probe_sched_process_fork" },
	[FEAT_OPENAT2] = { "openat2", "openat2 RESOLVE_IN_ROOT (a process's files opened in its root; else a walk "
			   "that refuses every symlink)", NULL, probe_openat2 },
	[FEAT_HASH_ALLOC] = { "hash_alloc", "hash maps that allocate at insert, in perf_event programs (6.1+; "
			      "else the stacks and counts maps are preallocated whole at start)", "probe_hash_alloc" },
	[FEAT_KSYM_NAMES] = { "ksym_names", "kernel frames named by the kernel (%pS in a BPF program run by "
			      "BPF_PROG_TEST_RUN, 5.13+; else /proc/kallsyms is read whole)", NULL, probe_ksym_names },
	[FEAT_BPF_LOOP] = { "bpf_loop", "bpf_loop, global functions taking pointers, the task by BTF (5.17+; else "
			    "the programs built for older kernels, bpf/lib/kernel.bpf.h: user stacks by the kernel's "
			    "frame-pointer walk)", "probe_bpf_loop" },
	[FEAT_PERF_LINK] = { "perf_link", "BPF links of perf events (5.15+; else the on-CPU programs cannot outlive "
			     "their loader: run --pin refuses them)", NULL, probe_perf_link },
};

const char *feature_name(enum feature f)
{
	return f < FEAT_MAX ? descs[f].name : "?";
}

const char *feature_what(enum feature f)
{
	return f < FEAT_MAX ? descs[f].what : "?";
}

/*
 * Opens bpf/probe.bpf.c with only the programs in @progs (NULL-terminated)
 * enabled and loads it.  *@step says what failed.
 */
static struct probe_bpf *probe_load(const char *const *progs, const char **step)
{
	libbpf_print_fn_t old = bpf_quiet_begin();
	struct bpf_program *prog;
	struct probe_bpf *skel;
	bool task_storage = false, hash_alloc = false;
	int err;

	*step = "open";
	skel = probe_bpf__open();
	if (!skel) {
		err = errno;
		goto out;
	}
	bpf_object__for_each_program(prog, skel->obj) {
		bool wanted = false;

		for (int i = 0; progs[i]; i++)
			wanted |= strcmp(bpf_program__name(prog), progs[i]) == 0;
		bpf_program__set_autoload(prog, wanted);
		/* A kernel without task storage must not fail every other probe. */
		if (wanted && strcmp(bpf_program__name(prog), "probe_task_storage") == 0)
			task_storage = true;
		if (wanted && strcmp(bpf_program__name(prog), "probe_hash_alloc") == 0)
			hash_alloc = true;
	}
	bpf_map__set_autocreate(skel->maps.probe_task_store, task_storage);
	bpf_map__set_autocreate(skel->maps.probe_alloc_hash, hash_alloc);
	*step = "load";
	err = -probe_bpf__load(skel);
	if (err) {
		probe_bpf__destroy(skel);
		skel = NULL;
	}
out:
	bpf_quiet_end(old);
	errno = err;
	return skel;
}

/* Loads program @name alone; tracing programs are also attached and detached. */
static int probe_prog(const char *name, const char **step)
{
	const char *progs[] = { name, NULL };
	struct probe_bpf *skel = probe_load(progs, step);
	struct bpf_program *prog;
	struct bpf_link *link;
	int err = 0;

	if (!skel)
		return errno;
	prog = bpf_object__find_program_by_name(skel->obj, name);
	if (prog && bpf_program__type(prog) == BPF_PROG_TYPE_TRACING) {
		*step = "attach";
		link = bpf_program__attach(prog);
		err = link ? 0 : errno;
		bpf_link__destroy(link);
	}
	probe_bpf__destroy(skel);
	return err;
}

static int probe_btf(const char **step)
{
	*step = "open /sys/kernel/btf/vmlinux";
	return access("/sys/kernel/btf/vmlinux", R_OK) ? errno : 0;
}

/* A disabled cpu-clock event on CPU 0, as the on-CPU kind opens them; -1 and errno on failure. */
static int cpu_clock_event_open(void)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = 99,
		.disabled = 1,
	};

	return syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
}

static int probe_perf_event_open(const char **step)
{
	int fd = cpu_clock_event_open();

	*step = "perf_event_open";
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int probe_ringbuf(const char **step)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "ap_probe_rb", 0, 0, getpagesize(), NULL);

	*step = "map create";
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int probe_batch_ops(const char **step)
{
	__u32 keys[4], count = 4, out_batch;
	__u64 values[4];
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "ap_probe_batch", sizeof(__u32), sizeof(__u64), 4, NULL);
	int err = 0;

	*step = "map create";
	if (fd < 0)
		return errno;
	*step = "lookup_and_delete_batch";
	/* An empty map answers ENOENT when batching works, EINVAL when it does not. */
	if (bpf_map_lookup_and_delete_batch(fd, NULL, &out_batch, keys, values, &count, NULL) &&
	    errno != ENOENT)
		err = errno;
	close(fd);
	return err;
}

/* Attaches loaded @prog as an iterator (over @map_fd when >= 0) and reads it once. */
static int iter_attach_read(struct bpf_program *prog, int map_fd, const char **step)
{
	union bpf_iter_link_info linfo = { .map.map_fd = map_fd };
	LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	struct bpf_link *link;
	char buf[256];
	int err = 0, iter_fd;

	if (map_fd >= 0) {
		opts.link_info = &linfo;
		opts.link_info_len = sizeof(linfo);
	}
	*step = "attach";
	link = bpf_program__attach_iter(prog, &opts);
	if (!link)
		return errno;
	*step = "read";
	iter_fd = bpf_iter_create(bpf_link__fd(link));
	if (iter_fd < 0 || read(iter_fd, buf, sizeof(buf)) < 0)
		err = errno;
	if (iter_fd >= 0)
		close(iter_fd);
	bpf_link__destroy(link);
	return err;
}

static int probe_iter_task(const char **step)
{
	const char *progs[] = { "probe_iter_task", NULL };
	struct probe_bpf *skel = probe_load(progs, step);
	int err;

	if (!skel)
		return errno;
	err = iter_attach_read(skel->progs.probe_iter_task, -1, step);
	probe_bpf__destroy(skel);
	return err;
}

/*
 * The real iterator of bpf/iter.bpf.c, not a simplified one: a probe that
 * loads where the real program does not would promise pins that fail (the
 * kernel matrix caught exactly that on 6.1).
 */
static int probe_iter_map_elem(const char **step)
{
	libbpf_print_fn_t old = bpf_quiet_begin();
	struct bpf_program *prog, *folded = NULL;
	struct iter_bpf *skel;
	int err = 0, map_fd = -1;

	*step = "open";
	skel = iter_bpf__open();
	if (!skel) {
		err = errno;
		goto out;
	}
	bpf_object__for_each_program(prog, skel->obj) {
		bool mine = strcmp(bpf_program__name(prog), "folded") == 0;

		bpf_program__set_autoload(prog, mine);
		if (mine)
			folded = prog;
	}
	*step = "load";
	err = folded ? -iter_bpf__load(skel) : ENOENT;
	if (err)
		goto out;
	*step = "map create";
	map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "ap_probe_totals", sizeof(struct sample_key),
				sizeof(__u64), 1, NULL);
	err = map_fd < 0 ? errno : iter_attach_read(folded, map_fd, step);
out:
	if (map_fd >= 0)
		close(map_fd);
	iter_bpf__destroy(skel);
	bpf_quiet_end(old);
	return err;
}

/* The uprobe probe's target: a function of this very binary. */
__attribute__((noinline, used)) int features_uprobe_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

/* The file offset of the address at *@ctx, into *@ctx, once a mapping holds it (1). */
static int offset_line(const struct maps_line *m, void *ctx)
{
	uint64_t *addr = ctx;

	if (*addr < m->start || *addr >= m->end)
		return 0;
	*addr = *addr - m->start + m->offset;
	return 1;
}

/* File offset of @addr in the mapping of this executable that holds it. */
static long self_file_offset(uintptr_t addr)
{
	uint64_t at = addr;
	long off = -1;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return -1;
	if (maps_each(f, offset_line, &at) == 1)
		off = (long)at;
	fclose(f);
	return off;
}

static int probe_uprobe(const char **step)
{
	const char *progs[] = { "probe_uprobe", NULL };
	char exe[PATH_MAX];
	struct probe_bpf *skel;
	struct bpf_link *link;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	long off = self_file_offset((uintptr_t)features_uprobe_target);
	int err = 0;

	*step = "find own text";
	if (n <= 0 || off < 0)
		return ENOENT;
	exe[n] = 0;
	skel = probe_load(progs, step);
	if (!skel)
		return errno;
	*step = "attach";
	link = bpf_program__attach_uprobe(skel->progs.probe_uprobe, false, getpid(), exe, off);
	if (!link) {
		err = errno;
		goto out;
	}
	*step = "hit";
	if (features_uprobe_target(1) != 2 || skel->bss->probe_hits == 0)
		err = ENOEXEC;
	bpf_link__destroy(link);
out:
	probe_bpf__destroy(skel);
	return err;
}

/* Trampolines: some kernels refuse them at load, others only at attach. */
static int probe_fentry(const char **step)
{
	const char *progs[] = { "probe_fentry", NULL };
	struct probe_bpf *skel = probe_load(progs, step);
	struct bpf_link *link;
	int err = 0;

	if (!skel)
		return errno;
	*step = "attach";
	link = bpf_program__attach(skel->progs.probe_fentry);
	if (!link)
		err = errno;
	bpf_link__destroy(link);
	probe_bpf__destroy(skel);
	return err;
}

static bool fs_type_is(const char *path, long magic)
{
	struct statfs fs;

	return statfs(path, &fs) == 0 && fs.f_type == magic;
}

/* Does /proc/filesystems list @fstype? */
static bool fs_known(const char *fstype)
{
	char line[128], name[64];
	bool found = false;
	FILE *f = fopen("/proc/filesystems", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%*s %63s", name) == 1 ? strcmp(name, fstype) == 0 :
			sscanf(line, "%63s", name) == 1 && strcmp(name, fstype) == 0;
	fclose(f);
	return found;
}

/* Mounted at one of @paths (@mounted[i] in *@note), or at least known to the kernel. */
static int probe_fs(const char *const *paths, const char *const *mounted, long magic,
		    const char *fstype, const char **step, const char **note)
{
	for (int i = 0; paths[i]; i++) {
		if (fs_type_is(paths[i], magic)) {
			*note = mounted[i];
			return 0;
		}
	}
	*note = "not mounted; mountable";
	*step = "/proc/filesystems";
	return fs_known(fstype) ? 0 : ENODEV;
}

static int probe_bpffs(const char **step)
{
	static const char *const paths[] = { "/sys/fs/bpf", NULL };
	static const char *const mounted[] = { "mounted at /sys/fs/bpf" };

	return probe_fs(paths, mounted, BPF_FS_MAGIC, "bpf", step, &results[FEAT_BPFFS].note);
}

static int probe_tracefs(const char **step)
{
	static const char *const paths[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing", NULL };
	static const char *const mounted[] = { "mounted at /sys/kernel/tracing",
					       "mounted at /sys/kernel/debug/tracing" };

	return probe_fs(paths, mounted, TRACEFS_MAGIC, "tracefs", step, &results[FEAT_TRACEFS].note);
}

/* Whether safe_open.c can have the kernel resolve a process's paths inside its root. */
static int probe_openat2(const char **step)
{
	*step = "openat2";
	return target_open_has_openat2() ? 0 : ENOSYS;
}

/* A perf event's BPF link, as pinning the on-CPU kind's needs (the legacy attach has no link to pin). */
static int probe_perf_link(const char **step)
{
	const char *progs[] = { "probe_perf_event", NULL };
	struct probe_bpf *skel = probe_load(progs, step);
	int event_fd, link_fd, err = 0;

	if (!skel)
		return errno;
	*step = "perf_event_open";
	event_fd = cpu_clock_event_open();
	if (event_fd < 0) {
		err = errno;
		goto out;
	}
	*step = "link_create";
	link_fd = bpf_link_create(bpf_program__fd(skel->progs.probe_perf_event), event_fd, BPF_PERF_EVENT, NULL);
	if (link_fd < 0)
		err = -link_fd;
	else
		close(link_fd);
	close(event_fd);
out:
	probe_bpf__destroy(skel);
	return err;
}

static int probe_ksym_names(const char **step)
{
	return kernel_names_probe(step);
}

/* APERTURE_DISABLE_FEATURES=a,b (for tests): these count as missing. */
static bool disabled_by_env(enum feature f)
{
	const char *list = getenv("APERTURE_DISABLE_FEATURES");
	size_t len = strlen(descs[f].name);

	for (const char *s = list; s && *s; s += strcspn(s, ",") + (s[strcspn(s, ",")] == ',')) {
		if (strncmp(s, descs[f].name, len) == 0 && (s[len] == ',' || s[len] == 0))
			return true;
	}
	return false;
}

bool feature_switched_off(enum feature f)
{
	return disabled_by_env(f);
}

static void set_result(enum feature f, int err, const char *step)
{
	results[f].probed = true;
	results[f].ok = !err;
	results[f].err = err;
	results[f].step = step;
	if (err)
		log_info("feature %s: no (%s at %s)", descs[f].name, strerrorname_np(err) ?: "?", step);
}

static void probe_one(enum feature f)
{
	const char *step = "probe";
	int err;

	if (results[f].probed)
		return;
	for (int r = 0; r < FEAT_MAX; r++) {
		if ((descs[f].requires & FEAT_BIT(r)) && !feature_has(r)) {
			results[f] = (struct feature_result){ .probed = true, .err = results[r].err,
							      .step = descs[r].name };
			return;
		}
	}
	if (disabled_by_env(f)) {
		results[f] = (struct feature_result){ .probed = true, .step = "APERTURE_DISABLE_FEATURES" };
	} else {
		err = descs[f].probe ? descs[f].probe(&step) : probe_prog(descs[f].prog, &step);
		set_result(f, err, step);
	}
	if (f == FEAT_OPENAT2)	/* safe_open.c follows what was probed, or switched off for a test */
		target_open_force_fallback(!results[f].ok);
}

/* Whether @f goes in features_probe's one load: a program probe, not known yet, none of its requirements switched off. */
static bool batched(uint64_t mask, enum feature f)
{
	if (!(mask & FEAT_BIT(f)) || results[f].probed || !descs[f].prog || disabled_by_env(f))
		return false;
	for (int r = 0; r < FEAT_MAX; r++)
		if ((descs[f].requires & FEAT_BIT(r)) && disabled_by_env(r))
			return false;
	return true;
}

/*
 * The common case costs one load: all the program probes of @mask in one
 * object.  Only when that fails is each probed alone to tell which.
 */
void features_probe(uint64_t mask)
{
	const char *progs[FEAT_MAX + 1], *step;
	struct probe_bpf *skel;
	int n = 0;

	for (int f = 0; f < FEAT_MAX; f++)
		if (mask & FEAT_BIT(f))
			mask |= descs[f].requires;
	for (int f = 0; f < FEAT_MAX; f++)
		if (batched(mask, f))
			progs[n++] = descs[f].prog;
	progs[n] = NULL;
	if (n > 1 && feature_has(FEAT_BTF) && (skel = probe_load(progs, &step))) {
		int err = -probe_bpf__attach(skel);

		for (int f = 0; f < FEAT_MAX && !err; f++)
			if (batched(mask, f))
				set_result(f, 0, "load");
		probe_bpf__destroy(skel);
	}
	for (int f = 0; f < FEAT_MAX; f++)
		if (mask & FEAT_BIT(f))
			probe_one(f);
}

bool feature_has(enum feature f)
{
	probe_one(f);
	return results[f].ok;
}

const struct feature_result *feature_get(enum feature f)
{
	probe_one(f);
	return &results[f];
}

const char *feature_why(enum feature f, char *buf, size_t len)
{
	const struct feature_result *r = feature_get(f);
	const char *name;

	if (r->ok)
		snprintf(buf, len, "yes");
	else if (!r->err)
		snprintf(buf, len, "switched off by %s", r->step);
	else if ((name = strerrorname_np(r->err)))
		snprintf(buf, len, "%s at %s", name, r->step);
	else
		snprintf(buf, len, "errno %d at %s", r->err, r->step);
	return buf;
}

const char *feature_missing(enum feature f, char *buf, size_t len)
{
	char why[96];

	snprintf(buf, len, "%s: %s", feature_name(f), feature_why(f, why, sizeof(why)));
	return buf;
}

bool features_require(const char *who, uint64_t mask)
{
	char why[96];
	bool all = true;

	features_probe(mask);
	for (int f = 0; f < FEAT_MAX; f++) {
		if (!(mask & FEAT_BIT(f)) || feature_has(f))
			continue;
		log_error("%s: this kernel lacks %s (%s): %s", who, descs[f].name,
			  feature_why(f, why, sizeof(why)), descs[f].what);
		all = false;
	}
	return all;
}
