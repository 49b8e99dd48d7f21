// SPDX-License-Identifier: GPL-2.0
/*
 * CPython processes for the BPF frame walk (see python.h).  A process is
 * looked at each time the unwinder reads its maps (at announce, and when a
 * sample meets a library loaded since); what was decided is kept per tgid,
 * so that re-reads cost nothing.  One that is CPython but not initialized
 * yet (announced at exec, before its runtime set the thread-state key) is
 * asked again every 100 ms for up to 10 s.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "cpython.h"
#include "python.h"
#include "util.h"
#include "python_tables.h"

#define RETRY_MAX 100

enum py_state { PY_NOT, PY_WALKED, PY_REFUSED, PY_WAITING };

struct py_known {
	uint32_t tgid;
	uint8_t state;		/* enum py_state */
	uint8_t tries;
};

struct pywalker {
	int procs_fd;
	struct py_known *known;
	size_t nknown, known_cap;
	uint32_t walked, refused, full;
};

struct pywalker *pywalker_new(int procs_fd)
{
	struct pywalker *w = calloc_logged(1, sizeof(*w));

	if (w)
		w->procs_fd = procs_fd;
	return w;
}

void pywalker_free(struct pywalker *w)
{
	if (!w)
		return;
	free(w->known);
	free(w);
}

static struct py_known *known_find(struct pywalker *w, uint32_t tgid)
{
	for (size_t i = 0; i < w->nknown; i++)
		if (w->known[i].tgid == tgid)
			return &w->known[i];
	return NULL;
}

/* Only CPython processes are kept: a process that is not costs nothing but the look. */
static void known_keep(struct pywalker *w, const struct py_known *k)
{
	struct py_known *slot = known_find(w, k->tgid);

	if (!slot && !array_reserve((void **)&w->known, &w->known_cap, w->nknown, sizeof(*w->known), 64))
		slot = &w->known[w->nknown++];
	if (slot)
		*slot = *k;
}

static uint16_t max16(unsigned int a, unsigned int b)
{
	return (uint16_t)(a > b ? a : b);
}

static void entry_from(struct python_proc *e, const struct cpython_proc *py)
{
	memset(e, 0, sizeof(*e));
	e->eval_start = py->eval_start;
	e->eval_end = py->eval_end;
	e->cold_start = py->cold_start;
	e->cold_end = py->cold_end;
	e->tss_addr = py->runtime + py->off.runtime_tss;
	e->tsd_offset = py->tsd_offset;
	e->layout = (uint16_t)py->layout;
	e->minor = (uint16_t)py->minor;
	e->ts_thread_id = py->off.ts_thread_id;
	e->ts_frame = py->off.ts_frame;
	e->cframe_current = py->off.cframe_current;
	e->frame_back = py->off.frame_back;
	e->frame_code = py->off.frame_code;
	e->frame_instr = py->off.frame_instr;
	e->frame_entry = py->off.frame_entry;
	e->code_adaptive = py->off.co_code_adaptive;
	e->code_name = py->off.co_name;
	e->code_firstlineno = py->off.co_firstlineno;
	e->frame_len = max16(max16(e->frame_back, e->frame_code), max16(e->frame_instr, e->frame_entry)) + 8;
	e->code_lo = e->code_firstlineno < e->code_name ? e->code_firstlineno : e->code_name;
	e->code_len = max16(e->code_firstlineno + 4, e->code_name + 8) - e->code_lo;
}

/* The walk reads a frame and a code object in one piece each: the spans must fit its buffer. */
static bool entry_fits(const struct python_proc *e)
{
	return e->frame_len <= PY_READ_MAX && e->code_len <= PY_READ_MAX;
}

static bool decide(struct pywalker *w, struct py_known *k)
{
	struct cpython_proc py;
	struct python_proc entry;
	char why[320];
	int err = cpython_find(k->tgid, &py, why, sizeof(why));

	if (err == -EAGAIN) {
		k->state = ++k->tries < RETRY_MAX ? PY_WAITING : PY_NOT;
		return false;
	}
	if (err == -ENOTSUP) {
		k->state = PY_REFUSED;
		w->refused++;
		log_warn("python: pid %u: %s", k->tgid, why);
		return false;
	}
	if (err) {
		k->state = PY_NOT;	/* not CPython (or gone): looked at again with its next maps */
		return false;
	}
	entry_from(&entry, &py);
	if (!entry_fits(&entry)) {
		k->state = PY_REFUSED;
		w->refused++;
		log_warn("python: pid %u: CPython 3.%d's frame or code fields span more than %d bytes: not walked",
			 k->tgid, py.minor, PY_READ_MAX);
		return false;
	}
	if (bpf_map_update_elem(w->procs_fd, &k->tgid, &entry, BPF_ANY)) {
		w->full++;
		k->state = PY_NOT;
		return false;
	}
	k->state = PY_WALKED;
	w->walked++;
	log_info("python: pid %u: CPython 3.%d (%s), frames walked", k->tgid, py.minor, py.file);
	return true;
}

bool pywalker_track(struct pywalker *w, uint32_t tgid)
{
	struct py_known *found = w ? known_find(w, tgid) : NULL, k = { .tgid = tgid, .state = PY_NOT };
	bool walked;

	if (!w)
		return false;
	if (found && found->state == PY_WALKED)
		return true;
	if (found && found->state == PY_REFUSED)
		return false;
	if (found)
		k = *found;
	walked = decide(w, &k);
	if (k.state != PY_NOT || found)
		known_keep(w, &k);
	return walked;
}

void pywalker_forget(struct pywalker *w, uint32_t tgid)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nknown; i++)
		if (w->known[i].tgid == tgid) {
			if (w->known[i].state == PY_WALKED)
				bpf_map_delete_elem(w->procs_fd, &tgid);
			w->known[i] = w->known[--w->nknown];
			return;
		}
}

bool pywalker_has_retries(const struct pywalker *w)
{
	for (size_t i = 0; w && i < w->nknown; i++)
		if (w->known[i].state == PY_WAITING)
			return true;
	return false;
}

size_t pywalker_take_retries(struct pywalker *w, uint32_t *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; w && i < w->nknown && n < max; i++)
		if (w->known[i].state == PY_WAITING) {
			w->known[i].state = PY_NOT;	/* decided again when re-tracked */
			out[n++] = w->known[i].tgid;
		}
	return n;
}

void pywalker_report(const struct pywalker *w, FILE *out)
{
	if (!w)
		return;
	fprintf(out, "aperture: python: %u processes walked, %u refused, %u not written (map full)\n",
		w->walked, w->refused, w->full);
}
