// SPDX-License-Identifier: GPL-2.0
/* record --events FILE: raw ring-buffer events -> ProfileEvent records (event_stream.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bincode.h"
#include "event_stream.h"
#include "gpu_kernels.h"
#include "profiler.h"
#include "symbolize.h"
#include "util.h"

/* Which profiler sends which kind, and the ProfileEvent variant it becomes. */
static const struct {
	enum profiler_id profiler;
	enum pe_kind kind;
} raw_kinds[] = {
	[EVENT_CPU_SAMPLE] = { PROFILER_ONCPU, PE_CPU_SAMPLE },
	[EVENT_LOCK] = { PROFILER_LOCKS, PE_LOCK },
	[EVENT_SYSCALL] = { PROFILER_SYSCALLS, PE_SYSCALL },
	[EVENT_UNWIND_MISS] = { PROFILER_MAX, PE_KINDS },	/* never a raw event */
	[EVENT_GPU_KERNEL] = { PROFILER_GPU, PE_GPU_KERNEL },
};
#define NRAW_KINDS (sizeof(raw_kinds) / sizeof(raw_kinds[0]))

struct event_stream {
	FILE *f;
	char *path;
	struct symbolizer *sym;
	struct profiler *profs[PROFILER_MAX];
	uint64_t written[PE_KINDS];
	uint64_t dropped;	/* unknown type, or no profiler to read its stacks */
	int write_errno;	/* the first write error */
	/* Scratch for one record: two stacks and their names. */
	uint64_t ips[2 * APERTURE_MAX_DEPTH];
	char *names[2 * APERTURE_MAX_DEPTH];
};

struct event_stream *event_stream_open(const char *path, struct symbolizer *sym)
{
	struct event_stream *s = calloc_logged(1, sizeof(*s));

	if (!s)
		return NULL;
	s->path = strdup_logged(path);
	s->f = s->path ? fopen_output(path) : NULL;
	if (!s->f) {
		if (s->path)
			log_error("--events %s: %s", path, strerror(errno));
		free(s->path);
		free(s);
		return NULL;
	}
	s->sym = sym;
	return s;
}

void event_stream_add_profiler(struct event_stream *s, struct profiler *p)
{
	if (s && p->ops->id < PROFILER_MAX)
		s->profs[p->ops->id] = p;
}

/*
 * Appends the frames of @stack_id (leaf first) at s->ips + @at, their names
 * at s->names + @at when symbolizing (the function, NULL when no symbol covers
 * it); returns how many.  A stack that is not there gives none.
 */
static int add_stack(struct event_stream *s, struct profiler *p, uint32_t tgid, uint64_t stack_id,
		     bool kernel, int at)
{
	int n = profiler_stack(p, stack_id, s->ips + at, APERTURE_MAX_DEPTH);

	for (int i = 0; i < n; i++) {
		/* Callers' frames are return addresses: name the call, as the profiles do. */
		uint64_t addr = i == 0 || !s->ips[at + i] ? s->ips[at + i] : s->ips[at + i] - 1;
		struct sym_frame frame;

		s->names[at + i] = NULL;
		if (!s->sym)
			continue;
		if (kernel)
			symbolizer_kernel(s->sym, addr, &frame);
		else
			symbolizer_user(s->sym, tgid, addr, &frame);
		s->names[at + i] = (char *)frame.function;
	}
	return n > 0 ? n : 0;
}

/*
 * A launch's fields (EVENT_GPU_KERNEL: the type says the record is the longer
 * struct): the kernel's name (malloc'ed), the launch call's time, the dims.
 */
static void gpu_kernel_fields(struct profiler *p, struct symbolizer *sym,
			      const struct aperture_gpu_raw_event *ev,
			      struct pe_gpu_kernel *gpu)
{
	gpu->kernel_name = gpu_object_label(p, sym, ev->raw.hdr.tgid, ev->raw.object);
	gpu->duration_ns = ev->raw.duration_ns;	/* the launch call on the CPU, not GPU execution */
	memcpy(gpu->grid_size, ev->grid, sizeof(gpu->grid_size));
	memcpy(gpu->block_size, ev->block, sizeof(gpu->block_size));
}

void event_stream_raw(const struct aperture_raw_event *ev, void *stream)
{
	struct event_stream *s = stream;
	struct profile_event e = { 0 };
	char comm[APERTURE_COMM_LEN + 1];
	struct profiler *p;
	int nk, nu, err;

	if (ev->hdr.type < EVENT_CPU_SAMPLE || ev->hdr.type >= NRAW_KINDS ||
	    raw_kinds[ev->hdr.type].profiler >= PROFILER_MAX ||
	    !(p = s->profs[raw_kinds[ev->hdr.type].profiler])) {
		s->dropped++;
		return;
	}
	memcpy(comm, ev->comm, APERTURE_COMM_LEN);
	comm[APERTURE_COMM_LEN] = 0;
	e.kind = raw_kinds[ev->hdr.type].kind;
	/* timestamp, pid, tid: the same place in every variant (bincode.c asserts it). */
	e.cpu.timestamp = ev->timestamp;
	e.cpu.pid = (int32_t)ev->hdr.tgid;
	e.cpu.tid = (int32_t)ev->tid;
	switch (e.kind) {
	case PE_CPU_SAMPLE:
		nu = add_stack(s, p, ev->hdr.tgid, ev->user_stack_id, false, 0);
		nk = add_stack(s, p, ev->hdr.tgid, ev->kernel_stack_id, true, nu);
		e.cpu.cpu_id = ev->cpu;
		e.cpu.user_stack = (struct pe_u64s){ s->ips, nu };
		e.cpu.kernel_stack = (struct pe_u64s){ s->ips + nu, nk };
		e.cpu.comm = comm;
		if (s->sym) {
			e.cpu.user_stack_symbols = (struct pe_syms){ s->names, nu };
			e.cpu.kernel_stack_symbols = (struct pe_syms){ s->names + nu, nk };
		}
		break;
	case PE_LOCK:
		/* One stack, leaf first: the kernel's frames (kernel locks), then the user's. */
		nk = add_stack(s, p, ev->hdr.tgid, ev->kernel_stack_id, true, 0);
		nu = add_stack(s, p, ev->hdr.tgid, ev->user_stack_id, false, nk);
		e.lock.lock_addr = ev->object;
		e.lock.hold_time_ns = ev->hold_ns;	/* --lock-hold; else 0: not measured */
		e.lock.wait_time_ns = ev->duration_ns;
		e.lock.stack_trace = (struct pe_u64s){ s->ips, nk + nu };
		e.lock.comm = comm;
		if (s->sym)
			e.lock.stack_symbols = (struct pe_syms){ s->names, nk + nu };
		break;
	case PE_SYSCALL:
		e.sys.syscall_id = (uint32_t)ev->object;
		e.sys.duration_ns = ev->duration_ns;
		e.sys.return_value = ev->ret;
		e.sys.comm = comm;
		break;
	case PE_GPU_KERNEL:
		gpu_kernel_fields(p, s->sym, (const struct aperture_gpu_raw_event *)ev, &e.gpu);
		break;
	default:
		s->dropped++;
		return;
	}
	err = pe_write(s->f, &e);
	if (e.kind == PE_GPU_KERNEL)
		free(e.gpu.kernel_name);
	if (err < 0) {
		if (!s->write_errno)
			s->write_errno = errno ? errno : EIO;
		return;
	}
	s->written[e.kind]++;
}

void event_stream_flush(struct event_stream *s)
{
	if (s && fflush(s->f) && !s->write_errno)
		s->write_errno = errno;
}

int event_stream_close(struct event_stream *s)
{
	char kinds[256] = "", lost[256] = "";
	uint64_t total = 0, nlost = 0, sent = 0, stats[STAT_MAX];
	size_t k = 0, l = 0;
	int err;

	if (!s)
		return 0;
	for (int i = 0; i < PE_KINDS; i++) {
		total += s->written[i];
		if (s->written[i] && k < sizeof(kinds))
			k += snprintf(kinds + k, sizeof(kinds) - k, "%s%s %" PRIu64, k ? ", " : "",
				      pe_kind_name(i), s->written[i]);
	}
	for (int i = 0; i < PROFILER_MAX; i++) {
		if (!s->profs[i] || profiler_stats(s->profs[i], stats))
			continue;
		sent += stats[STAT_RAW_SENT];
		nlost += stats[STAT_RAW_LOST];
		if (stats[STAT_RAW_LOST] && l < sizeof(lost))
			l += snprintf(lost + l, sizeof(lost) - l, "%s%s %" PRIu64, l ? ", " : "",
				      s->profs[i]->ops->name, stats[STAT_RAW_LOST]);
	}
	err = fclose(s->f) ? errno : s->write_errno;
	if (err)
		log_error("--events %s: %s", s->path, strerror(err));
	/* sent but not written: arrived after the last read, or a write failed */
	fprintf(stderr, "aperture: events: wrote %" PRIu64 " records to %s%s%s%s, %" PRIu64
		" lost (ring buffer full%s%s), %" PRIu64 " unread\n", total, s->path, k ? " (" : "",
		kinds, k ? ")" : "", nlost, l ? ": " : "", lost,
		sent > total + s->dropped ? sent - total - s->dropped : 0);
	if (s->dropped)
		log_warn("events: %" PRIu64 " raw events of an unknown kind were not written", s->dropped);
	free(s->path);
	free(s);
	return err ? -1 : 0;
}
