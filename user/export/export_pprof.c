// SPDX-License-Identifier: GPL-2.0
/*
 * pprof output: perftools.profiles.Profile (proto/pprof/profile.proto),
 * gzip-compressed as pprof expects.
 *
 * Two passes.  The first interns every string, mapping, function and
 * location into small hash tables (their number grows with the code that
 * ran, not with the number of samples).  The second streams the message
 * with nanopb straight into gzwrite: every big repeated field is an
 * FT_CALLBACK (see profile.options) that walks the tables or the samples,
 * so the encoded profile never exists in memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <pb_encode.h>
#include "pprof/profile.pb.h"
#include "exporter.h"
#include "util.h"

#define KERNEL_PATH "[kernel.kallsyms]"
/* Mapping key of the kernel mapping made up for kernel frames without one. */
#define KERNEL_MAPPING_KEY 1

_Static_assert(PROFILE_MAX_VALUES <= sizeof(((perftools_profiles_Profile *)0)->sample_type) /
	       sizeof(perftools_profiles_ValueType), "profile.options: sample_type max_count too small");

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	while (len--)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

/* Open addressing slots hold an index + 1 into the owner's array; 0 is empty. */
static int slots_grow(uint32_t **slots, size_t *nslots, size_t used)
{
	size_t n = *nslots ? *nslots : 256;

	while (used * 2 >= n)
		n *= 2;
	if (n == *nslots)
		return 0;
	free(*slots);
	*slots = calloc_logged(n, sizeof(**slots));
	*nslots = n;
	return *slots ? 1 : -ENOMEM;	/* 1: the caller must rehash */
}

static int array_grow(void **arr, size_t *cap, size_t want, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *bigger;

	if (want <= *cap)
		return 0;
	while (n < want)
		n *= 2;
	bigger = realloc(*arr, n * size);
	if (!bigger) {
		log_error("out of memory (%zu x %zu bytes)", n, size);
		return -ENOMEM;
	}
	*arr = bigger;
	*cap = n;
	return 0;
}

/* The string table: index 0 is "", every string once. Strings are not copied. */
struct strtab {
	struct pstr { const char *s; size_t len; uint64_t hash; } *strs;
	size_t n, cap;
	uint32_t *slots;
	size_t nslots;
};

static size_t strtab_slot(const struct strtab *t, const char *s, size_t len, uint64_t hash)
{
	size_t i = hash & (t->nslots - 1);
	const struct pstr *e;

	for (; t->slots[i]; i = (i + 1) & (t->nslots - 1)) {
		e = &t->strs[t->slots[i] - 1];
		if (e->hash == hash && e->len == len && memcmp(e->s, s, len) == 0)
			break;
	}
	return i;
}

static int strtab_rehash(struct strtab *t)
{
	int err = slots_grow(&t->slots, &t->nslots, t->n + 1);
	size_t i;

	if (err <= 0)
		return err;
	for (i = 0; i < t->n; i++)
		t->slots[strtab_slot(t, t->strs[i].s, t->strs[i].len, t->strs[i].hash)] = i + 1;
	return 0;
}

/* Returns the index of @s (adding it), or -ENOMEM. */
static int64_t strtab_intern_len(struct strtab *t, const char *s, size_t len)
{
	uint64_t hash = hash_bytes(s, len);
	size_t slot;
	int err;

	if ((err = strtab_rehash(t)) || (err = array_grow((void **)&t->strs, &t->cap, t->n + 1, sizeof(*t->strs))))
		return err;
	slot = strtab_slot(t, s, len, hash);
	if (t->slots[slot])
		return t->slots[slot] - 1;
	t->strs[t->n] = (struct pstr){ .s = s, .len = len, .hash = hash };
	t->slots[slot] = ++t->n;
	return t->n - 1;
}

static int64_t strtab_intern(struct strtab *t, const char *s)
{
	return strtab_intern_len(t, s ? s : "", s ? strlen(s) : 0);
}

/* Index of a string interned before; 0 ("") if it never was. */
static int64_t strtab_find(const struct strtab *t, const char *s, size_t len)
{
	size_t slot = strtab_slot(t, s, len, hash_bytes(s, len));

	return t->slots[slot] ? t->slots[slot] - 1 : 0;
}

/* (a, b) -> id 1..n in insertion order, with one word of data per id. */
struct idmap {
	struct idkey { uint64_t a, b, data; } *keys;	/* keys[id - 1] */
	size_t n, cap;
	uint32_t *slots;
	size_t nslots;
};

static size_t idmap_slot(const struct idmap *m, uint64_t a, uint64_t b)
{
	size_t i = mix64(a * 31 + mix64(b)) & (m->nslots - 1);
	const struct idkey *k;

	for (; m->slots[i]; i = (i + 1) & (m->nslots - 1)) {
		k = &m->keys[m->slots[i] - 1];
		if (k->a == a && k->b == b)
			break;
	}
	return i;
}

/* Returns the id of (a, b), adding it with @data when new; or -ENOMEM. */
static int64_t idmap_get(struct idmap *m, uint64_t a, uint64_t b, uint64_t data)
{
	size_t slot, i;
	int err;

	err = slots_grow(&m->slots, &m->nslots, m->n + 1);
	if (err < 0)
		return err;
	for (i = 0; err && i < m->n; i++)
		m->slots[idmap_slot(m, m->keys[i].a, m->keys[i].b)] = i + 1;
	slot = idmap_slot(m, a, b);
	if (m->slots[slot])
		return m->slots[slot];
	if ((err = array_grow((void **)&m->keys, &m->cap, m->n + 1, sizeof(*m->keys))))
		return err;
	m->keys[m->n] = (struct idkey){ .a = a, .b = b, .data = data };
	m->slots[slot] = ++m->n;
	return m->n;
}

/* 0 when (a, b) was never added. */
static uint64_t idmap_find(const struct idmap *m, uint64_t a, uint64_t b)
{
	if (!m->nslots)
		return 0;
	return m->slots[idmap_slot(m, a, b)];
}

static void idmap_free(struct idmap *m)
{
	free(m->keys);
	free(m->slots);
}

struct pmapping {
	const struct sym_mapping *m;	/* NULL: the made-up kernel mapping */
	uint64_t start, limit;
};

struct pprof_writer {
	const struct profile *p;
	struct strtab strings;
	struct idmap mappings;		/* (frame_mapping_key, 0) -> pprof mapping id */
	struct pmapping *pmaps;		/* pmaps[id - 1] */
	size_t pmaps_cap;
	struct idmap functions;		/* (name, filename) string ids -> function id */
	struct idmap locations;		/* (mapping id, address) -> location id; data: function id, the line << 32 */
	uint64_t *stack_ids;		/* location ids of the sample being encoded */
	size_t max_frames;
	int64_t key_comm, key_pid, key_thread;
	/* set by the sample callback for its nested callbacks */
	const struct profile_sample *cur;
	uint32_t cur_nframes;
};

static bool sample_is_empty(const struct profile *p, const struct profile_sample *s)
{
	int i;

	for (i = 0; i < p->nvalues; i++)
		if (s->values[i])
			return false;
	return true;
}

static uint64_t frame_mapping_key(const struct profile_frame *f)
{
	if (f->sym.mapping)
		return (uintptr_t)f->sym.mapping;
	return f->kernel ? KERNEL_MAPPING_KEY : 0;
}

/* pprof mapping id of @f (0: none), adding it on first sight. */
static int64_t intern_mapping(struct pprof_writer *w, const struct profile_frame *f)
{
	uint64_t key = frame_mapping_key(f);
	size_t known = w->mappings.n;
	struct pmapping *pm;
	int64_t id;
	int err;

	if (!key)
		return 0;
	id = idmap_get(&w->mappings, key, 0, 0);
	if (id < 0)
		return id;
	if (w->mappings.n != known) {
		err = array_grow((void **)&w->pmaps, &w->pmaps_cap, w->mappings.n, sizeof(*w->pmaps));
		if (err)
			return err;
		w->pmaps[id - 1] = (struct pmapping){
			.m = f->sym.mapping,
			.start = f->sym.mapping ? f->sym.mapping->start : f->sym.addr,
			.limit = f->sym.mapping ? f->sym.mapping->end : f->sym.addr + 1,
		};
	}
	pm = &w->pmaps[id - 1];
	if (!pm->m) {
		/* the made-up kernel mapping covers every kernel address seen */
		if (f->sym.addr < pm->start)
			pm->start = f->sym.addr;
		if (f->sym.addr >= pm->limit)
			pm->limit = f->sym.addr + 1;
	}
	return id;
}

static int intern_frame(struct pprof_writer *w, const struct profile_frame *f)
{
	int64_t mapping_id, name, filename, function_id, location_id;
	const char *path = NULL;

	mapping_id = intern_mapping(w, f);
	if (mapping_id < 0)
		return mapping_id;
	if (f->sym.file)	/* a Python frame: its function, source file and line */
		path = f->sym.file;
	else if (f->sym.mapping)
		path = f->sym.mapping->path;
	else if (f->kernel)
		path = KERNEL_PATH;
	name = strtab_intern(&w->strings, f->sym.file ? f->sym.function :
				 f->sym.name && *f->sym.name ? f->sym.name : "[unknown]");
	filename = strtab_intern(&w->strings, path);
	if (name < 0 || filename < 0)
		return -ENOMEM;
	function_id = idmap_get(&w->functions, name, filename, 0);
	if (function_id < 0)
		return function_id;
	/* data: the function id, and the source line above it (Python frames) */
	location_id = idmap_get(&w->locations, mapping_id, f->sym.addr,
				(uint64_t)function_id | (uint64_t)f->sym.line << 32);
	return location_id < 0 ? location_id : 0;
}

/*
 * pprof takes mapping[0] for the main binary: number executables first,
 * then shared objects and [vdso]-like mappings, the kernel last.
 */
static int mapping_rank(const struct profile_frame *f)
{
	const char *name;

	if (f->kernel)
		return 2;
	if (!f->sym.mapping)
		return -1;	/* no mapping to number */
	name = f->sym.mapping->name ? f->sym.mapping->name : f->sym.mapping->path;
	return name && (name[0] == '[' || strstr(name, ".so")) ? 1 : 0;
}

static int intern_frames(struct pprof_writer *w)
{
	const struct profile *p = w->p;
	const struct profile_sample *s;
	uint32_t i, nframes;
	size_t n;
	int rank;

	/* ranks 0..2 number the mappings, then every frame gets its function and location */
	for (rank = 0; rank <= 3; rank++) {
		for (n = 0; n < p->nsamples; n++) {
			s = &p->samples[n];
			nframes = s->nkernel + s->nuser;
			if (sample_is_empty(p, s))
				continue;
			if (nframes > w->max_frames)
				w->max_frames = nframes;
			for (i = 0; i < nframes; i++) {
				const struct profile_frame *f = &s->frames[i];
				int64_t ret = 0;

				if (rank == 3)
					ret = intern_frame(w, f);
				else if (mapping_rank(f) == rank)
					ret = intern_mapping(w, f);
				if (ret < 0)
					return ret;
			}
		}
	}
	return 0;
}

static int intern_all(struct pprof_writer *w)
{
	const struct profile *p = w->p;
	size_t n;
	int i, err;

	if (strtab_intern(&w->strings, "") != 0)
		return -ENOMEM;
	for (i = 0; i < p->nvalues; i++)
		if (strtab_intern(&w->strings, p->value_types[i].type) < 0 ||
		    strtab_intern(&w->strings, p->value_types[i].unit) < 0)
			return -ENOMEM;
	if (strtab_intern(&w->strings, p->period_type.type) < 0 ||
	    strtab_intern(&w->strings, p->period_type.unit) < 0)
		return -ENOMEM;
	w->key_comm = strtab_intern(&w->strings, "comm");
	w->key_pid = strtab_intern(&w->strings, "pid");
	w->key_thread = strtab_intern(&w->strings, "thread");
	if (w->key_comm < 0 || w->key_pid < 0 || w->key_thread < 0)
		return -ENOMEM;
	for (n = 0; n < p->nsamples; n++) {
		const struct profile_sample *s = &p->samples[n];

		if (!sample_is_empty(p, s) &&
		    strtab_intern_len(&w->strings, s->comm, strnlen(s->comm, sizeof(s->comm))) < 0)
			return -ENOMEM;
	}
	err = intern_frames(w);
	if (err)
		return err;
	for (n = 0; n < w->mappings.n; n++) {
		const struct sym_mapping *m = w->pmaps[n].m;

		if (strtab_intern(&w->strings, m ? m->path : KERNEL_PATH) < 0 ||
		    strtab_intern(&w->strings, m ? m->build_id : "") < 0)
			return -ENOMEM;
	}
	w->stack_ids = calloc_logged(w->max_frames, sizeof(*w->stack_ids));
	return w->stack_ids ? 0 : -ENOMEM;
}

static int64_t str_id(const struct pprof_writer *w, const char *s)
{
	return s ? strtab_find(&w->strings, s, strlen(s)) : 0;
}

/* Writes @n varints as one packed repeated field. */
static bool encode_packed(pb_ostream_t *stream, const pb_field_iter_t *field, const uint64_t *vals, size_t n)
{
	pb_ostream_t sizing = PB_OSTREAM_SIZING;
	size_t i;

	for (i = 0; i < n; i++)
		if (!pb_encode_varint(&sizing, vals[i]))
			return false;
	if (!pb_encode_tag(stream, PB_WT_STRING, field->tag) || !pb_encode_varint(stream, sizing.bytes_written))
		return false;
	for (i = 0; i < n; i++)
		if (!pb_encode_varint(stream, vals[i]))
			return false;
	return true;
}

static bool encode_location_ids(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
	const struct pprof_writer *w = *arg;

	return encode_packed(stream, field, w->stack_ids, w->cur_nframes);
}

static bool encode_values(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
	const struct pprof_writer *w = *arg;

	return encode_packed(stream, field, w->cur->values, w->p->nvalues);
}

static bool encode_labels(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
	const struct pprof_writer *w = *arg;
	const struct profile_sample *s = w->cur;
	perftools_profiles_Label labels[] = {
		{ .key = w->key_comm, .str = strtab_find(&w->strings, s->comm, strnlen(s->comm, sizeof(s->comm))) },
		{ .key = w->key_pid, .num = s->tgid },
		{ .key = w->key_thread, .num = s->pid },
	};
	size_t i;

	for (i = 0; i < sizeof(labels) / sizeof(labels[0]); i++)
		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_submessage(stream, perftools_profiles_Label_fields, &labels[i]))
			return false;
	return true;
}

/* Location ids of @s, leaf first: kernel frames then user frames, as pprof wants. */
static void resolve_stack(struct pprof_writer *w, const struct profile_sample *s)
{
	uint32_t i, n = s->nkernel + s->nuser;

	for (i = 0; i < n; i++) {
		const struct profile_frame *f = &s->frames[i];
		uint64_t mapping_key = frame_mapping_key(f);
		uint64_t mapping_id = mapping_key ? idmap_find(&w->mappings, mapping_key, 0) : 0;

		w->stack_ids[i] = idmap_find(&w->locations, mapping_id, f->sym.addr);
	}
	w->cur = s;
	w->cur_nframes = n;
}

static bool encode_samples(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
	struct pprof_writer *w = *arg;
	perftools_profiles_Sample msg = {
		.location_id = { .funcs.encode = encode_location_ids, .arg = w },
		.value = { .funcs.encode = encode_values, .arg = w },
		.label = { .funcs.encode = encode_labels, .arg = w },
	};
	size_t n;

	for (n = 0; n < w->p->nsamples; n++) {
		if (sample_is_empty(w->p, &w->p->samples[n]))
			continue;
		resolve_stack(w, &w->p->samples[n]);
		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_submessage(stream, perftools_profiles_Sample_fields, &msg))
			return false;
	}
	return true;
}

static bool encode_mappings(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
	const struct pprof_writer *w = *arg;
	size_t n;

	for (n = 0; n < w->mappings.n; n++) {
		const struct pmapping *pm = &w->pmaps[n];
		perftools_profiles_Mapping msg = {
			.id = n + 1,
			.memory_start = pm->start,
			.memory_limit = pm->limit,
			.file_offset = pm->m ? pm->m->file_offset : 0,
			.filename = str_id(w, pm->m ? pm->m->path : KERNEL_PATH),
			.build_id = str_id(w, pm->m ? pm->m->build_id : ""),
			/*
			 * Every location has its Line: a function, or "module+0xOFF"
			 * when the symbolizer found none.  Saying so keeps pprof from
			 * symbolizing again from files that may not be on this
			 * machine (and warning about each one); -symbolize=force
			 * still does.
			 */
			.has_functions = true,
		};

		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_submessage(stream, perftools_profiles_Mapping_fields, &msg))
			return false;
	}
	return true;
}

static bool encode_line(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
	uint64_t data = *(const uint64_t *)*arg;
	perftools_profiles_Line line = { .function_id = data & 0xffffffffu, .line = (int64_t)(data >> 32) };

	return pb_encode_tag_for_field(stream, field) &&
	       pb_encode_submessage(stream, perftools_profiles_Line_fields, &line);
}

static bool encode_locations(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
	const struct pprof_writer *w = *arg;
	size_t n;

	for (n = 0; n < w->locations.n; n++) {
		const struct idkey *k = &w->locations.keys[n];
		perftools_profiles_Location msg = {
			.id = n + 1,
			.mapping_id = k->a,
			.address = k->b,
			.line = { .funcs.encode = encode_line, .arg = (void *)&k->data },
		};

		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_submessage(stream, perftools_profiles_Location_fields, &msg))
			return false;
	}
	return true;
}

static bool encode_functions(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
	const struct pprof_writer *w = *arg;
	size_t n;

	for (n = 0; n < w->functions.n; n++) {
		const struct idkey *k = &w->functions.keys[n];
		perftools_profiles_Function msg = {
			.id = n + 1,
			.name = k->a,
			.system_name = k->a,
			.filename = k->b,
		};

		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_submessage(stream, perftools_profiles_Function_fields, &msg))
			return false;
	}
	return true;
}

static bool encode_strings(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
	const struct pprof_writer *w = *arg;
	size_t n;

	for (n = 0; n < w->strings.n; n++)
		if (!pb_encode_tag_for_field(stream, field) ||
		    !pb_encode_string(stream, (const pb_byte_t *)w->strings.strs[n].s, w->strings.strs[n].len))
			return false;
	return true;
}

static bool gz_stream_write(pb_ostream_t *stream, const pb_byte_t *buf, size_t count)
{
	gzFile gz = stream->state;

	return count == 0 || gzwrite(gz, buf, count) == (int)count;
}

static bool encode_profile(struct pprof_writer *w, gzFile gz)
{
	const struct profile *p = w->p;
	pb_ostream_t stream = { .callback = gz_stream_write, .state = gz, .max_size = SIZE_MAX };
	perftools_profiles_Profile msg = {
		.sample = { .funcs.encode = encode_samples, .arg = w },
		.mapping = { .funcs.encode = encode_mappings, .arg = w },
		.location = { .funcs.encode = encode_locations, .arg = w },
		.function = { .funcs.encode = encode_functions, .arg = w },
		.string_table = { .funcs.encode = encode_strings, .arg = w },
		.time_nanos = p->time_ns,
		.duration_nanos = p->duration_ns,
		.has_period_type = p->period_type.type != NULL,
		.period_type = {
			.type = str_id(w, p->period_type.type),
			.unit = str_id(w, p->period_type.unit),
		},
		.period = p->period,
	};
	int i;

	msg.sample_type_count = p->nvalues;
	for (i = 0; i < p->nvalues; i++) {
		msg.sample_type[i].type = str_id(w, p->value_types[i].type);
		msg.sample_type[i].unit = str_id(w, p->value_types[i].unit);
	}
	if (p->default_value >= 0 && p->default_value < p->nvalues)
		msg.default_sample_type = msg.sample_type[p->default_value].type;
	return pb_encode(&stream, perftools_profiles_Profile_fields, &msg);
}

static void writer_free(struct pprof_writer *w)
{
	free(w->strings.strs);
	free(w->strings.slots);
	idmap_free(&w->mappings);
	idmap_free(&w->functions);
	idmap_free(&w->locations);
	free(w->pmaps);
	free(w->stack_ids);
}

/* -errno of a failed gz call, -EIO when zlib itself failed. */
static int gz_errno(gzFile gz)
{
	int zerr = Z_OK;

	gzerror(gz, &zerr);
	if (zerr == Z_ERRNO && errno)
		return -errno;
	return zerr == Z_MEM_ERROR ? -ENOMEM : -EIO;
}

static int pprof_write(const struct profile *p, const char *path, const struct export_opts *opts)
{
	struct pprof_writer w = { .p = p };
	gzFile gz = NULL;
	int fd = -1, err, zerr;

	if (p->nvalues < 1 || p->nvalues > PROFILE_MAX_VALUES) {
		log_error("cannot write %s: profile has %d values", path, p->nvalues);
		return -EINVAL;
	}
	err = intern_all(&w);
	if (err) {
		log_error("cannot write %s: %s", path, strerror(-err));
		goto out;
	}
	fd = open_output(path);
	if (fd < 0) {
		err = -errno;
		log_error("cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	gz = gzdopen(fd, "wb");
	if (!gz) {
		err = -ENOMEM;
		close(fd);
		log_error("cannot write %s: gzdopen failed", path);
		goto out;
	}
	gzbuffer(gz, 128 * 1024);
	errno = 0;
	if (!encode_profile(&w, gz)) {
		err = gz_errno(gz);
		log_error("cannot write %s: %s", path, strerror(-err));
		gzclose(gz);
		goto out;
	}
	errno = 0;
	zerr = gzclose(gz);
	if (zerr != Z_OK) {
		err = zerr == Z_ERRNO && errno ? -errno : -EIO;
		log_error("cannot write %s: %s", path, strerror(-err));
		goto out;
	}
out:
	writer_free(&w);
	return err;
}

static const char *const pprof_suffixes[] = { ".pb.gz", ".pprof", ".pb", NULL };

const struct exporter exporter_pprof = {
	.name = "pprof",
	.suffixes = pprof_suffixes,
	.write = pprof_write,
};
