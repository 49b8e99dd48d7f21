// SPDX-License-Identifier: GPL-2.0
/*
 * CPython code objects to names (see pyframes.h).  A code object's fields
 * are read once: co_qualname (3.11+) or co_name, co_filename,
 * co_firstlineno and the line table, whose format changed twice (co_lnotab
 * before 3.10, co_linetable in 3.10, the location table from 3.11:
 * Objects/lnotab_notes.txt and Objects/codeobject.c at each tag).  A frame
 * carries its code object's generation at its address; it is named only
 * while the BPF side's python_codes says that generation still lives there
 * with the identity read now (co_name's address, co_firstlineno): a code
 * object freed and another allocated at its address is not named as the first.
 */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include "cpython.h"
#include "pyframes.h"
#include "util.h"
#include "python_tables.h"
#include "unwind_tables.h"

#define MAX_STR 512			/* bytes of a name or a path read */
#define MAX_LINETABLE (256 * 1024)

struct pyproc {
	uint32_t tgid;
	int state;			/* 1: described; -1: not CPython (or refused) */
	struct cpython_proc py;
};

struct pycode {
	uint32_t tgid;
	uint64_t code;			/* address >> 4, as in the frame */
	uint32_t check;
	bool ok;
	char *qualname, *filename;
	int32_t firstlineno;
	uint8_t *linetable;
	uint32_t linetable_len;
};

struct pyframes {
	void *codes;			/* tsearch tree of struct pycode */
	struct pyproc *procs;
	size_t nprocs, procs_cap;
	uint64_t named, unnamed;
	size_t bytes;
	bool no_prefetch;		/* test hook: name only at drain, as when a report was lost */
	pyframes_seen_fn seen;		/* python_codes, or NULL */
	void *seen_ctx;
};

void pyframes_set_seen(struct pyframes *pf, pyframes_seen_fn fn, void *ctx)
{
	if (pf) {
		pf->seen = fn;
		pf->seen_ctx = ctx;
	}
}

struct pyframes *pyframes_new(void)
{
	struct pyframes *pf = calloc_logged(1, sizeof(*pf));
	const char *hook = getenv("APERTURE_TEST_PYTHON_NO_PREFETCH");

	if (pf)
		pf->no_prefetch = hook && *hook == '1';
	return pf;
}

static void code_free(void *node)
{
	struct pycode *c = node;

	free(c->qualname);
	free(c->filename);
	free(c->linetable);
	free(c);
}

void pyframes_free(struct pyframes *pf)
{
	if (!pf)
		return;
	tdestroy(pf->codes, code_free);
	free(pf->procs);
	free(pf);
}

bool pyframes_is_frame(uint64_t ip)
{
	ip |= 1;	/* a caller's frame is looked up at ip - 1 */
	return (ip & PY_FRAME_TAG) && ip != APERTURE_IP_TRUNCATED + 1 && ip != APERTURE_IP_NO_TABLES + 1 &&
	       ip != (APERTURE_IP_TRUNCATED | 1) && ip != (APERTURE_IP_NO_TABLES | 1);
}

static int code_cmp(const void *a, const void *b)
{
	const struct pycode *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->code != y->code)
		return x->code < y->code ? -1 : 1;
	return x->check < y->check ? -1 : x->check > y->check;
}

static const struct cpython_proc *proc_get(struct pyframes *pf, uint32_t tgid)
{
	struct pyproc *p;
	char why[320];

	for (size_t i = 0; i < pf->nprocs; i++)
		if (pf->procs[i].tgid == tgid)
			return pf->procs[i].state > 0 ? &pf->procs[i].py : NULL;
	if (array_reserve((void **)&pf->procs, &pf->procs_cap, pf->nprocs, sizeof(*pf->procs), 16))
		return NULL;
	p = &pf->procs[pf->nprocs++];
	memset(p, 0, sizeof(*p));
	p->tgid = tgid;
	p->state = cpython_find(tgid, &p->py, why, sizeof(why)) == 0 ? 1 : -1;
	return p->state > 0 ? &p->py : NULL;
}

/* UTF-8 of one code point into @out (room for 4). */
static size_t utf8_put(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18 & 7));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A compact str object at @addr as UTF-8 (malloc'ed), at most MAX_STR bytes of it; NULL when unreadable. */
static char *read_str(uint32_t tgid, const struct cpython_offsets *o, uint64_t addr)
{
	uint64_t head[5];	/* refcnt, type, length, hash, state */
	uint32_t state, kind;
	uint8_t raw[MAX_STR * 4];
	size_t len, n = 0, width;
	char *out;

	if (!cpython_read(tgid, addr, head, sizeof(head)))
		return NULL;
	state = (uint32_t)head[4];
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return NULL;	/* not compact: never a code object's name or file */
	len = head[2] < MAX_STR ? head[2] : MAX_STR;
	width = (state >> 6) & 1 ? 1 : kind;
	if (len && !cpython_read(tgid, addr + ((state >> 6) & 1 ? o->ascii_size : o->compact_size), raw,
				 len * width))
		return NULL;
	out = malloc(len * 4 + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		uint32_t cp = width == 1 ? raw[i] : width == 2 ? ((uint16_t *)raw)[i] : ((uint32_t *)raw)[i];

		n += utf8_put(cp, out + n);
	}
	out[n] = '\0';
	return out;
}

/* A bytes object's contents (malloc'ed) into @out, @len. */
static bool read_bytes(uint32_t tgid, uint64_t addr, uint8_t **out, uint32_t *len)
{
	uint64_t size;

	if (!cpython_read(tgid, addr + 16, &size, sizeof(size)) || size > MAX_LINETABLE)
		return false;
	*out = malloc(size + 1);
	if (!*out)
		return false;
	if (size && !cpython_read(tgid, addr + 32, *out, size)) {
		free(*out);
		*out = NULL;
		return false;
	}
	*len = (uint32_t)size;
	return true;
}

/*
 * The code object now at the address is the frame's: the BPF side's last
 * sighting there has the frame's generation and this object's identity.
 */
static bool code_is_the_sampled(struct pyframes *pf, const struct pycode *c, uint64_t name)
{
	uint64_t identity;
	uint32_t generation;

	if (!pf->seen)
		return true;	/* no map to ask (a reader of pinned maps): named as found */
	return pf->seen(pf->seen_ctx, c->tgid, c->code << 4, &identity, &generation) &&
	       (generation & ((1u << PY_CHECK_BITS) - 1)) == c->check &&
	       identity == py_code_identity(name, (uint32_t)c->firstlineno);
}

static void code_read(struct pyframes *pf, struct pycode *c, const struct cpython_proc *py)
{
	const struct cpython_offsets *o = &py->off;
	uint64_t addr = c->code << 4, name = 0, qualname = 0, filename = 0, linetable = 0;

	if (!cpython_read(c->tgid, addr + o->co_name, &name, 8) ||
	    !cpython_read(c->tgid, addr + o->co_filename, &filename, 8) ||
	    !cpython_read(c->tgid, addr + o->co_linetable, &linetable, 8) ||
	    !cpython_read(c->tgid, addr + o->co_firstlineno, &c->firstlineno, 4) ||
	    (o->co_qualname && !cpython_read(c->tgid, addr + o->co_qualname, &qualname, 8)))
		return;
	if (!code_is_the_sampled(pf, c, name))
		return;	/* not the code object sampled: freed, and its memory reused */
	c->qualname = read_str(c->tgid, o, qualname ? qualname : name);
	c->filename = read_str(c->tgid, o, filename);
	if (!c->qualname || !c->filename)
		return;
	if (!read_bytes(c->tgid, linetable, &c->linetable, &c->linetable_len))
		c->linetable_len = 0;
	c->ok = true;
	pf->named++;
	pf->bytes += sizeof(*c) + strlen(c->qualname) + strlen(c->filename) + c->linetable_len + 64;
}

static struct pycode *code_get(struct pyframes *pf, uint32_t tgid, uint64_t ip)
{
	struct pycode key = {
		.tgid = tgid,
		.code = (ip >> PY_CODE_SHIFT) & ((1ULL << PY_CODE_BITS) - 1),
		.check = (uint32_t)((ip >> PY_CHECK_SHIFT) & ((1ULL << PY_CHECK_BITS) - 1)),
	};
	const struct cpython_proc *py;
	struct pycode *c, **found = tfind(&key, &pf->codes, code_cmp);

	if (found)
		return *found;
	py = proc_get(pf, tgid);
	if (!py)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	*c = key;
	code_read(pf, c, py);
	if (!tsearch(c, &pf->codes, code_cmp)) {
		code_free(c);
		return NULL;
	}
	return c;
}

bool pyframes_is_python(struct pyframes *pf, uint32_t tgid)
{
	return pf && proc_get(pf, tgid);
}

void pyframes_prefetch(struct pyframes *pf, uint32_t tgid, uint64_t ip)
{
	if (pf && !pf->no_prefetch && pyframes_is_frame(ip))
		code_get(pf, tgid, ip | 1);
}

/* ---- line tables ---- */

/* 3.8, 3.9: co_lnotab, (bytecode bytes, signed line) increments. */
static int line_lnotab(const struct pycode *c, uint32_t offset)
{
	int line = c->firstlineno;
	uint32_t addr = 0;

	for (uint32_t i = 0; i + 1 < c->linetable_len; i += 2) {
		addr += c->linetable[i];
		if (addr > offset)
			break;
		line += (int8_t)c->linetable[i + 1];
	}
	return line;
}

/* 3.10: co_linetable, (bytecode bytes, signed line or -128 for none) per range. */
static int line_310(const struct pycode *c, uint32_t offset)
{
	int line = c->firstlineno, range_line = line;
	uint32_t start = 0, end = 0;

	for (uint32_t i = 0; i + 1 < c->linetable_len; i += 2) {
		int8_t ldelta = (int8_t)c->linetable[i + 1];

		start = end;
		end += c->linetable[i];
		if (ldelta == -128) {
			range_line = -1;
		} else {
			line += ldelta;
			range_line = line;
		}
		if (offset >= start && offset < end)
			return range_line;
	}
	return -1;
}

static uint32_t varint(const uint8_t *t, uint32_t len, uint32_t *i)
{
	uint32_t v = 0, shift = 0;

	while (*i < len) {
		uint8_t b = t[(*i)++];

		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64) || shift > 30)
			break;
	}
	return v;
}

static int svarint(const uint8_t *t, uint32_t len, uint32_t *i)
{
	uint32_t v = varint(t, len, i);

	return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
}

/* 3.11+: the location table (Objects/locations.md); @instr in code units. */
static int line_locations(const struct pycode *c, uint32_t instr)
{
	const uint8_t *t = c->linetable;
	uint32_t i = 0, len = c->linetable_len, at = 0;
	int line = c->firstlineno;

	while (i < len) {
		uint8_t first = t[i++];
		uint32_t code = (first >> 3) & 15, units = (first & 7) + 1;
		int entry_line;

		if (!(first & 0x80))
			break;	/* not at an entry: a table we do not understand */
		if (code == 15) {
			entry_line = -1;
		} else if (code == 14) {
			line += svarint(t, len, &i);
			entry_line = line;
			varint(t, len, &i);
			varint(t, len, &i);
			varint(t, len, &i);
		} else if (code == 13) {
			line += svarint(t, len, &i);
			entry_line = line;
		} else if (code >= 10) {
			line += (int)code - 10;
			entry_line = line;
			i += 2;
		} else {
			entry_line = line;
			i += 1;
		}
		if (instr >= at && instr < at + units)
			return entry_line;
		at += units;
	}
	return -1;
}

static int code_line(const struct pycode *c, int minor, uint32_t instr)
{
	if (!c->linetable_len)
		return c->firstlineno;
	if (minor <= 9)
		return line_lnotab(c, instr * 2);
	if (minor == 10)
		return line_310(c, instr * 2);
	return line_locations(c, instr);
}

bool pyframes_name(struct pyframes *pf, uint32_t tgid, uint64_t ip, struct pyframe_name *out)
{
	struct pycode *c;
	const struct cpython_proc *py;
	int line;

	ip |= 1;
	c = pf ? code_get(pf, tgid, ip) : NULL;
	py = c && c->ok ? proc_get(pf, tgid) : NULL;
	if (!py) {
		if (pf)
			pf->unnamed++;
		return false;
	}
	line = code_line(c, py->minor, (uint32_t)((ip >> PY_INSTR_SHIFT) & ((1ULL << PY_INSTR_BITS) - 1)));
	out->qualname = c->qualname;
	out->filename = c->filename;
	out->line = line > 0 ? (uint32_t)line : 0;
	return true;
}

struct forget_walk {
	uint32_t tgid;
	struct pycode **found;
	size_t n, cap;
};

static void forget_visit(const void *node, VISIT which, void *arg)
{
	struct pycode *c = *(struct pycode *const *)node;
	struct forget_walk *fw = arg;

	if ((which != postorder && which != leaf) || c->tgid != fw->tgid)
		return;
	if (!array_reserve((void **)&fw->found, &fw->cap, fw->n, sizeof(*fw->found), 64))
		fw->found[fw->n++] = c;
}

void pyframes_forget(struct pyframes *pf, uint32_t tgid)
{
	struct forget_walk fw = { .tgid = tgid };

	if (!pf)
		return;
	for (size_t i = 0; i < pf->nprocs; i++)
		if (pf->procs[i].tgid == tgid) {
			pf->procs[i] = pf->procs[--pf->nprocs];
			break;
		}
	twalk_r(pf->codes, forget_visit, &fw);
	for (size_t i = 0; i < fw.n; i++) {
		tdelete(fw.found[i], &pf->codes, code_cmp);
		code_free(fw.found[i]);
	}
	free(fw.found);
}

void pyframes_usage(const struct pyframes *pf, struct pyframes_usage *out)
{
	memset(out, 0, sizeof(*out));
	if (!pf)
		return;
	out->named = pf->named;
	out->unnamed = pf->unnamed;
	out->bytes = pf->bytes;
}
