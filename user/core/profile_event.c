// SPDX-License-Identifier: GPL-2.0
/* Reads a raw event's stacks into the ProfileEvent record a kind fills (profile_event.h). */
#include "profile_event.h"
#include "profiler.h"
#include "symbolize.h"

int raw_frames_add(struct raw_frames *f, struct profiler *p, uint32_t tgid, uint64_t stack_id, bool kernel)
{
	int at = f->used, room = (int)(sizeof(f->ips) / sizeof(f->ips[0])) - at;
	int n = profiler_stack(p, stack_id, f->ips + at, room < APERTURE_MAX_DEPTH ? room : APERTURE_MAX_DEPTH);
	uint64_t addrs[APERTURE_MAX_DEPTH];

	/* Callers' frames are return addresses: name the call, as the profiles do. */
	for (int i = 0; i < n; i++)
		addrs[i] = i == 0 || !f->ips[at + i] ? f->ips[at + i] : f->ips[at + i] - 1;
	if (kernel && f->sym && n > 0)
		symbolizer_kernel_prefetch(f->sym, addrs, (size_t)n);
	for (int i = 0; i < n; i++) {
		uint64_t addr = addrs[i];
		struct sym_frame frame;

		f->names[at + i] = NULL;
		if (!f->sym)
			continue;
		if (kernel)
			symbolizer_kernel(f->sym, addr, &frame);
		else
			symbolizer_user(f->sym, tgid, addr, &frame);
		f->names[at + i] = (char *)frame.function;
	}
	if (n > 0)
		f->used += n;
	return at;
}

struct pe_u64s raw_frames_ips(struct raw_frames *f, int from)
{
	return (struct pe_u64s){ f->ips + from, (uint64_t)(f->used - from) };
}

struct pe_syms raw_frames_names(struct raw_frames *f, int from)
{
	if (!f->sym)
		return (struct pe_syms){ NULL, 0 };
	return (struct pe_syms){ f->names + from, (uint64_t)(f->used - from) };
}
