// SPDX-License-Identifier: GPL-2.0
/* Reads a raw event's stacks into the ProfileEvent record a kind fills (profile_event.h). */
#include "profile_event.h"
#include "profiler.h"
#include "symbolize.h"

int raw_frames_add(struct raw_frames *f, struct profiler *p, uint32_t tgid, uint64_t stack_id, bool kernel)
{
	int at = f->used, room = (int)(sizeof(f->ips) / sizeof(f->ips[0])) - at;
	int n = profiler_stack(p, stack_id, f->ips + at, room < APERTURE_MAX_DEPTH ? room : APERTURE_MAX_DEPTH);
	struct sym_frame names[APERTURE_MAX_DEPTH];
	uint64_t addrs[APERTURE_MAX_DEPTH];

	for (int i = 0; i < n; i++) {
		addrs[i] = symbolizer_lookup_addr(f->ips[at + i], (size_t)i);	/* named as the profiles name them */
		f->names[at + i] = NULL;
	}
	if (n <= 0)
		return at;
	f->used += n;
	if (!f->sym)
		return at;	/* frames without names */
	if (kernel)
		symbolizer_kernel_frames(f->sym, addrs, (size_t)n, names);
	for (int i = 0; i < n; i++) {
		if (!kernel)
			symbolizer_user(f->sym, tgid, addrs[i], &names[i]);
		f->names[at + i] = (char *)names[i].function;
	}
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
