// SPDX-License-Identifier: GPL-2.0
/*
 * ProfileEvent records in bincode's fixint little-endian layout (bincode.h).
 * Each variant is a table of fields: type and place in struct profile_event.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "bincode.h"

enum ftype { F_U32, F_I32, F_U64, F_I64, F_STR, F_U64S, F_SYMS, F_U32X3 };

struct field {
	const char *name;
	enum ftype type;
	size_t off;		/* in struct profile_event */
};

#define CPU(f) offsetof(struct profile_event, cpu.f)
#define LCK(f) offsetof(struct profile_event, lock.f)
#define SYS(f) offsetof(struct profile_event, sys.f)
#define GPU(f) offsetof(struct profile_event, gpu.f)

static const struct field cpu_fields[] = {
	{ "timestamp", F_U64, CPU(timestamp) }, { "pid", F_I32, CPU(pid) }, { "tid", F_I32, CPU(tid) },
	{ "cpu_id", F_U32, CPU(cpu_id) }, { "user_stack", F_U64S, CPU(user_stack) },
	{ "kernel_stack", F_U64S, CPU(kernel_stack) }, { "comm", F_STR, CPU(comm) },
	{ "user_stack_symbols", F_SYMS, CPU(user_stack_symbols) },
	{ "kernel_stack_symbols", F_SYMS, CPU(kernel_stack_symbols) }, { NULL },
};
static const struct field lock_fields[] = {
	{ "timestamp", F_U64, LCK(timestamp) }, { "pid", F_I32, LCK(pid) }, { "tid", F_I32, LCK(tid) },
	{ "lock_addr", F_U64, LCK(lock_addr) }, { "hold_time_ns", F_U64, LCK(hold_time_ns) },
	{ "wait_time_ns", F_U64, LCK(wait_time_ns) }, { "stack_trace", F_U64S, LCK(stack_trace) },
	{ "comm", F_STR, LCK(comm) }, { "stack_symbols", F_SYMS, LCK(stack_symbols) }, { NULL },
};
static const struct field sys_fields[] = {
	{ "timestamp", F_U64, SYS(timestamp) }, { "pid", F_I32, SYS(pid) }, { "tid", F_I32, SYS(tid) },
	{ "syscall_id", F_U32, SYS(syscall_id) }, { "duration_ns", F_U64, SYS(duration_ns) },
	{ "return_value", F_I64, SYS(return_value) }, { "comm", F_STR, SYS(comm) }, { NULL },
};
static const struct field gpu_fields[] = {
	{ "timestamp", F_U64, GPU(timestamp) }, { "pid", F_I32, GPU(pid) },
	{ "kernel_name", F_STR, GPU(kernel_name) }, { "duration_ns", F_U64, GPU(duration_ns) },
	{ "grid_size", F_U32X3, GPU(grid_size) }, { "block_size", F_U32X3, GPU(block_size) }, { NULL },
};

static const struct {
	const char *name;
	const struct field *fields;
} kinds[PE_KINDS] = {
	[PE_CPU_SAMPLE] = { "CpuSample", cpu_fields },
	[PE_LOCK] = { "Lock", lock_fields },
	[PE_SYSCALL] = { "Syscall", sys_fields },
	[PE_GPU_KERNEL] = { "GpuKernel", gpu_fields },
};

/* Every variant starts with timestamp and pid, at the same place in the union. */
_Static_assert(CPU(timestamp) == LCK(timestamp) && CPU(timestamp) == SYS(timestamp) &&
	       CPU(timestamp) == GPU(timestamp), "timestamp first");
_Static_assert(CPU(pid) == LCK(pid) && CPU(pid) == SYS(pid) && CPU(pid) == GPU(pid), "pid second");

const char *pe_kind_name(uint32_t kind)
{
	return kind < PE_KINDS ? kinds[kind].name : "?";
}

uint64_t pe_timestamp(const struct profile_event *e)
{
	return e->cpu.timestamp;
}

int32_t pe_pid(const struct profile_event *e)
{
	return e->cpu.pid;
}

#define AT(e, f, T) ((T *)((char *)(e) + (f)->off))
#define CAT(e, f, T) ((const T *)((const char *)(e) + (f)->off))

/* --- writer: a cursor that counts what it could not store */

struct out {
	uint8_t *p;
	size_t cap, len;
};

static void put(struct out *o, uint64_t v, int width)
{
	for (int i = 0; i < width; i++, o->len++)
		if (o->len < o->cap)
			o->p[o->len] = (uint8_t)(v >> (8 * i));
}

static void put_bytes(struct out *o, const void *b, size_t n)
{
	if (o->len + n <= o->cap)
		memcpy(o->p + o->len, b, n);
	o->len += n;
}

static bool utf8_valid(const uint8_t *s, size_t n);

/* A String must be UTF-8: a comm that is not has its non-ASCII bytes written as '?'. */
static void put_str(struct out *o, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	put(o, n, 8);
	if (utf8_valid((const uint8_t *)s, n)) {
		put_bytes(o, s, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		put(o, (unsigned char)s[i] < 0x80 ? (unsigned char)s[i] : '?', 1);
}

size_t pe_encode(const struct profile_event *e, uint8_t *buf, size_t cap)
{
	struct out o = { buf, cap, 0 };

	if (e->kind >= PE_KINDS)
		return 0;
	put(&o, e->kind, 4);
	for (const struct field *f = kinds[e->kind].fields; f->name; f++) {
		switch (f->type) {
		case F_U32: case F_I32:
			put(&o, *CAT(e, f, uint32_t), 4);
			break;
		case F_U64: case F_I64:
			put(&o, *CAT(e, f, uint64_t), 8);
			break;
		case F_STR:
			put_str(&o, *CAT(e, f, char *));
			break;
		case F_U64S: {
			const struct pe_u64s *v = CAT(e, f, struct pe_u64s);

			put(&o, v->n, 8);
			for (uint64_t i = 0; i < v->n; i++)
				put(&o, v->v[i], 8);
			break;
		}
		case F_SYMS: {
			const struct pe_syms *v = CAT(e, f, struct pe_syms);

			put(&o, v->n, 8);
			for (uint64_t i = 0; i < v->n; i++) {
				put(&o, v->v[i] != NULL, 1);
				if (v->v[i])
					put_str(&o, v->v[i]);
			}
			break;
		}
		case F_U32X3:
			for (int i = 0; i < 3; i++)
				put(&o, CAT(e, f, uint32_t)[i], 4);
			break;
		}
	}
	return o.len;
}

int pe_write(FILE *f, const struct profile_event *e)
{
	uint8_t small[4096], *buf = small;
	size_t len = pe_encode(e, small + 4, sizeof(small) - 4);
	int ret = 0;

	if (len == 0 || len > PE_MAX_RECORD) {
		errno = EINVAL;
		return -1;
	}
	if (len + 4 > sizeof(small)) {
		buf = malloc(len + 4);
		if (!buf)
			return -1;
		pe_encode(e, buf + 4, len);
	}
	for (int i = 0; i < 4; i++)
		buf[i] = (uint8_t)(len >> (8 * i));
	if (fwrite(buf, 1, len + 4, f) != len + 4)
		ret = -1;
	if (buf != small)
		free(buf);
	return ret;
}

/* --- reader: a bounded cursor; the first error sticks */

struct in {
	const uint8_t *p;
	size_t len, pos;
	char *err;
	size_t errlen;
	bool failed;
};

static void in_fail(struct in *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void in_fail(struct in *in, const char *fmt, ...)
{
	va_list ap;

	if (in->failed)
		return;
	in->failed = true;
	va_start(ap, fmt);
	vsnprintf(in->err, in->errlen, fmt, ap);
	va_end(ap);
}

static bool need(struct in *in, uint64_t n, const char *what)
{
	if (in->failed)
		return false;
	if (n > in->len - in->pos) {
		in_fail(in, "%s needs %llu bytes at record byte %zu, the record has %zu left", what,
			(unsigned long long)n, in->pos, in->len - in->pos);
		return false;
	}
	return true;
}

static uint64_t get(struct in *in, int width, const char *what)
{
	uint64_t v = 0;

	if (!need(in, width, what))
		return 0;
	for (int i = 0; i < width; i++)
		v |= (uint64_t)in->p[in->pos + i] << (8 * i);
	in->pos += width;
	return v;
}

/* Strict UTF-8 (what Rust's String accepts): no overlongs, surrogates or > U+10FFFF. */
static bool utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		int k = (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (k < 0 || (size_t)k > n - i - 1)
			return false;
		cp = c & (0x3f >> k);
		for (int j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}

static char *get_str(struct in *in, const char *what)
{
	uint64_t n = get(in, 8, what);
	char *s;

	if (!need(in, n, what))
		return NULL;
	if (!utf8_valid(in->p + in->pos, n)) {
		in_fail(in, "%s is not UTF-8 (record byte %zu)", what, in->pos);
		return NULL;
	}
	s = malloc(n + 1);
	if (!s) {
		in_fail(in, "out of memory");
		return NULL;
	}
	memcpy(s, in->p + in->pos, n);
	s[n] = 0;
	in->pos += n;
	return s;
}

int pe_decode(const uint8_t *p, size_t len, struct profile_event *e, char *err, size_t errlen)
{
	struct in in = { p, len, 0, err, errlen, false };
	uint32_t kind;

	memset(e, 0, sizeof(*e));
	kind = get(&in, 4, "the variant tag");
	if (!in.failed && kind >= PE_KINDS)
		in_fail(&in, "unknown variant tag %u", kind);
	if (in.failed)
		return -1;
	e->kind = kind;
	for (const struct field *f = kinds[kind].fields; f->name && !in.failed; f++) {
		switch (f->type) {
		case F_U32: case F_I32:
			*AT(e, f, uint32_t) = get(&in, 4, f->name);
			break;
		case F_U64: case F_I64:
			*AT(e, f, uint64_t) = get(&in, 8, f->name);
			break;
		case F_STR:
			*AT(e, f, char *) = get_str(&in, f->name);
			break;
		case F_U64S: {
			struct pe_u64s *v = AT(e, f, struct pe_u64s);
			uint64_t n = get(&in, 8, f->name);

			/* Sized from what the record holds, never from the count alone. */
			if (!in.failed && n > (in.len - in.pos) / 8) {
				in_fail(&in, "%s: %llu items at record byte %zu, the record has %zu bytes left",
					f->name, (unsigned long long)n, in.pos, in.len - in.pos);
				break;
			}
			v->v = malloc(n ? n * 8 : 1);
			if (!v->v) {
				in_fail(&in, "out of memory");
				break;
			}
			v->n = n;
			for (uint64_t i = 0; i < n; i++)
				v->v[i] = get(&in, 8, f->name);
			break;
		}
		case F_SYMS: {
			struct pe_syms *v = AT(e, f, struct pe_syms);
			uint64_t n = get(&in, 8, f->name);

			if (!in.failed && n > in.len - in.pos) {	/* at least one byte an item */
				in_fail(&in, "%s: %llu items at record byte %zu, the record has %zu bytes left",
					f->name, (unsigned long long)n, in.pos, in.len - in.pos);
				break;
			}
			v->v = calloc(n ? n : 1, sizeof(char *));
			if (!v->v) {
				in_fail(&in, "out of memory");
				break;
			}
			v->n = n;
			for (uint64_t i = 0; i < n && !in.failed; i++) {
				uint64_t some = get(&in, 1, f->name);

				if (some == 1)
					v->v[i] = get_str(&in, f->name);
				else if (some)
					in_fail(&in, "%s: Option tag %llu is neither 0 nor 1", f->name,
						(unsigned long long)some);
			}
			break;
		}
		case F_U32X3:
			for (int i = 0; i < 3; i++)
				AT(e, f, uint32_t)[i] = get(&in, 4, f->name);
			break;
		}
	}
	if (!in.failed && in.pos != len)
		in_fail(&in, "%zu bytes left over after the %s", len - in.pos, kinds[kind].name);
	if (in.failed) {
		pe_free(e);
		return -1;
	}
	return 0;
}

void pe_free(struct profile_event *e)
{
	if (e->kind < PE_KINDS) {
		for (const struct field *f = kinds[e->kind].fields; f->name; f++) {
			if (f->type == F_STR) {
				free(*AT(e, f, char *));
			} else if (f->type == F_U64S) {
				free(AT(e, f, struct pe_u64s)->v);
			} else if (f->type == F_SYMS) {
				struct pe_syms *v = AT(e, f, struct pe_syms);

				for (uint64_t i = 0; v->v && i < v->n; i++)
					free(v->v[i]);
				free(v->v);
			}
		}
	}
	memset(e, 0, sizeof(*e));
}

void pe_reader_init(struct pe_reader *r, FILE *f)
{
	memset(r, 0, sizeof(*r));
	r->f = f;
}

void pe_reader_free(struct pe_reader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->cap = 0;
}

int pe_read(struct pe_reader *r, struct profile_event *e, char *err, size_t errlen)
{
	uint8_t pre[4];
	size_t got = fread(pre, 1, 4, r->f);
	char why[200];
	uint32_t len;

	memset(e, 0, sizeof(*e));
	if (got == 0 && feof(r->f))
		return 0;
	if (got < 4) {
		snprintf(err, errlen, "truncated record at byte %llu: %zu of the 4 length bytes; "
			 "%llu records decoded before it", (unsigned long long)r->offset, got,
			 (unsigned long long)r->count);
		return -1;
	}
	len = pre[0] | pre[1] << 8 | pre[2] << 16 | (uint32_t)pre[3] << 24;
	if (len < 4 || len > PE_MAX_RECORD) {
		snprintf(err, errlen, "corrupt record at byte %llu: length %u is out of range (4..%u); "
			 "%llu records decoded before it", (unsigned long long)r->offset, len,
			 PE_MAX_RECORD, (unsigned long long)r->count);
		return -1;
	}
	if (len > r->cap) {
		uint8_t *b = realloc(r->buf, len);

		if (!b) {
			snprintf(err, errlen, "out of memory at byte %llu", (unsigned long long)r->offset);
			return -1;
		}
		r->buf = b;
		r->cap = len;
	}
	got = fread(r->buf, 1, len, r->f);
	if (got < len) {
		snprintf(err, errlen, "truncated record at byte %llu: its length says %u bytes, %zu "
			 "follow; %llu records decoded before it", (unsigned long long)r->offset, len,
			 got, (unsigned long long)r->count);
		return -1;
	}
	if (pe_decode(r->buf, len, e, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "corrupt record at byte %llu (%u bytes): %s; %llu records "
			 "decoded before it", (unsigned long long)r->offset, len, why,
			 (unsigned long long)r->count);
		return -1;
	}
	r->offset += 4 + (uint64_t)len;
	r->count++;
	return 1;
}

/* --- JSON */

static void json_str(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(out, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(out, "\\u%04x", *c);
		else
			fputc(*c, out);
	}
	fputc('"', out);
}

void pe_print_json(FILE *out, const struct profile_event *e)
{
	const char *sep = "";

	if (e->kind >= PE_KINDS)
		return;
	fprintf(out, "{\"%s\":{", kinds[e->kind].name);
	for (const struct field *f = kinds[e->kind].fields; f->name; f++, sep = ",") {
		fprintf(out, "%s\"%s\":", sep, f->name);
		switch (f->type) {
		case F_U32:
			fprintf(out, "%u", *CAT(e, f, uint32_t));
			break;
		case F_I32:
			fprintf(out, "%d", *CAT(e, f, int32_t));
			break;
		case F_U64:
			fprintf(out, "%llu", (unsigned long long)*CAT(e, f, uint64_t));
			break;
		case F_I64:
			fprintf(out, "%lld", (long long)*CAT(e, f, int64_t));
			break;
		case F_STR:
			json_str(out, *CAT(e, f, char *) ? *CAT(e, f, char *) : "");
			break;
		case F_U64S: {
			const struct pe_u64s *v = CAT(e, f, struct pe_u64s);

			fputc('[', out);
			for (uint64_t i = 0; i < v->n; i++)
				fprintf(out, "%s%llu", i ? "," : "", (unsigned long long)v->v[i]);
			fputc(']', out);
			break;
		}
		case F_SYMS: {
			const struct pe_syms *v = CAT(e, f, struct pe_syms);

			fputc('[', out);
			for (uint64_t i = 0; i < v->n; i++) {
				if (i)
					fputc(',', out);
				json_str(out, v->v[i]);
			}
			fputc(']', out);
			break;
		}
		case F_U32X3: {
			const uint32_t *t = CAT(e, f, uint32_t);

			fprintf(out, "[%u,%u,%u]", t[0], t[1], t[2]);
			break;
		}
		}
	}
	fputs("}}\n", out);
}
