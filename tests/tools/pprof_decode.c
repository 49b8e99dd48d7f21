// SPDX-License-Identifier: GPL-2.0
/*
 * An independent reader of pprof files for tests: protobuf-c (not nanopb,
 * which writes them) over zlib.  Checks the profile's invariants, then prints
 *   samples N
 *   type TYPE UNIT total SUM            one per sample type
 *   default TYPE
 *   period TYPE UNIT PERIOD
 *   time_nanos T duration_nanos D
 *   mapping ID FILENAME START LIMIT OFFSET BUILD_ID functions=0|1
 *   counts mappings=M locations=L functions=F strings=S
 *   stack comm=C pid=P thread=T V1,V2 root;...;leaf     one per sample
 * and exits 1 with a message on stderr at the first violation.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Function Function;

static const char *file;

static void die(const char *what, uint64_t n)
{
	fprintf(stderr, "pprof_decode: %s: %s (%" PRIu64 ")\n", file, what, n);
	exit(1);
}

static unsigned char *read_gz(const char *path, size_t *len)
{
	gzFile gz = gzopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	unsigned char *buf = malloc(cap);
	int got;

	if (!gz || !buf)
		die("cannot open", 0);
	while ((got = gzread(gz, buf + n, cap - n)) > 0) {
		n += got;
		if (n == cap && !(buf = realloc(buf, cap *= 2)))
			die("out of memory", cap);
	}
	if (got < 0)
		die("gzip data is corrupt", n);
	gzclose(gz);
	*len = n;
	return buf;
}

static const char *str(const Profile *p, int64_t i)
{
	if (i < 0 || (size_t)i >= p->n_string_table)
		die("string index out of range", i);
	return p->string_table[i];
}

static void check_strings(const Profile *p)
{
	size_t i, j;

	if (p->n_string_table == 0 || p->string_table[0][0])
		die("string_table[0] is not \"\"", 0);
	/* quadratic, fine for test profiles */
	for (i = 0; i < p->n_string_table && p->n_string_table < 20000; i++)
		for (j = i + 1; j < p->n_string_table; j++)
			if (strcmp(p->string_table[i], p->string_table[j]) == 0)
				die("duplicate string in the table", j);
}

static const Mapping *mapping(const Profile *p, uint64_t id)
{
	size_t i;

	for (i = 0; i < p->n_mapping; i++)
		if (p->mapping[i]->id == id)
			return p->mapping[i];
	die("no mapping with id", id);
	return NULL;
}

static const Function *function(const Profile *p, uint64_t id)
{
	/* ids are 1..n in order in aperture's files; fall back to a search */
	if (id >= 1 && id <= p->n_function && p->function[id - 1]->id == id)
		return p->function[id - 1];
	for (size_t i = 0; i < p->n_function; i++)
		if (p->function[i]->id == id)
			return p->function[i];
	die("no function with id", id);
	return NULL;
}

static const Location *location(const Profile *p, uint64_t id)
{
	if (id >= 1 && id <= p->n_location && p->location[id - 1]->id == id)
		return p->location[id - 1];
	for (size_t i = 0; i < p->n_location; i++)
		if (p->location[i]->id == id)
			return p->location[i];
	die("no location with id", id);
	return NULL;
}

static void check_tables(const Profile *p)
{
	size_t i, j;

	for (i = 0; i < p->n_mapping; i++) {
		const Mapping *m = p->mapping[i];

		if (!m->id || m->memory_limit < m->memory_start)
			die("bad mapping", m->id);
		str(p, m->filename);
		str(p, m->build_id);
		for (j = 0; j < i; j++)
			if (p->mapping[j]->id == m->id)
				die("duplicate mapping id", m->id);
	}
	for (i = 0; i < p->n_function; i++) {
		const Function *f = p->function[i];

		if (!f->id || !str(p, f->name)[0])
			die("bad function", f->id);
		str(p, f->system_name);
		str(p, f->filename);
	}
	for (i = 0; i < p->n_location; i++) {
		const Location *l = p->location[i];

		if (!l->id || l->n_line != 1)
			die("location without exactly one line", l->id);
		function(p, l->line[0]->function_id);
		if (l->mapping_id) {
			const Mapping *m = mapping(p, l->mapping_id);

			if (l->address < m->memory_start || l->address >= m->memory_limit)
				die("location address outside its mapping", l->address);
		}
	}
}

static void print_sample(const Profile *p, const Perftools__Profiles__Sample *s, uint64_t *totals)
{
	const char *comm = "-";
	int64_t pid = -1, thread = -1;
	size_t i;

	if (s->n_value != p->n_sample_type)
		die("sample value count differs from sample_type count", s->n_value);
	for (i = 0; i < s->n_label; i++) {
		const char *key = str(p, s->label[i]->key);

		if (strcmp(key, "comm") == 0)
			comm = str(p, s->label[i]->str);
		else if (strcmp(key, "pid") == 0)
			pid = s->label[i]->num;
		else if (strcmp(key, "thread") == 0)
			thread = s->label[i]->num;
	}
	printf("stack comm=%s pid=%" PRId64 " thread=%" PRId64 " ", comm, pid, thread);
	for (i = 0; i < s->n_value; i++) {
		printf("%s%" PRId64, i ? "," : "", s->value[i]);
		totals[i] += s->value[i];
	}
	putchar(' ');
	for (i = s->n_location_id; i-- > 0;) {
		const Location *l = location(p, s->location_id[i]);

		printf("%s%s", str(p, function(p, l->line[0]->function_id)->name), i ? ";" : "");
	}
	putchar('\n');
}

int main(int argc, char **argv)
{
	uint64_t totals[16] = { 0 };
	unsigned char *buf;
	Profile *p;
	size_t len, i;

	if (argc != 2) {
		fprintf(stderr, "usage: pprof_decode FILE.pb.gz\n");
		return 2;
	}
	file = argv[1];
	buf = read_gz(file, &len);
	p = perftools__profiles__profile__unpack(NULL, len, buf);
	if (!p)
		die("protobuf-c cannot unpack it", len);
	if (p->n_sample_type == 0 || p->n_sample_type > 16)
		die("bad sample_type count", p->n_sample_type);
	check_strings(p);
	check_tables(p);
	printf("samples %zu\n", p->n_sample);
	for (i = 0; i < p->n_sample; i++)
		print_sample(p, p->sample[i], totals);
	for (i = 0; i < p->n_sample_type; i++)
		printf("type %s %s total %" PRIu64 "\n", str(p, p->sample_type[i]->type),
		       str(p, p->sample_type[i]->unit), totals[i]);
	printf("default %s\n", str(p, p->default_sample_type));
	if (p->period_type)
		printf("period %s %s %" PRId64 "\n", str(p, p->period_type->type), str(p, p->period_type->unit),
		       p->period);
	printf("time_nanos %" PRId64 " duration_nanos %" PRId64 "\n", p->time_nanos, p->duration_nanos);
	for (i = 0; i < p->n_mapping; i++) {
		const Mapping *m = p->mapping[i];

		printf("mapping %" PRIu64 " %s 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64 " %s functions=%d\n", m->id,
		       str(p, m->filename), m->memory_start, m->memory_limit, m->file_offset,
		       *str(p, m->build_id) ? str(p, m->build_id) : "-", m->has_functions);
	}
	printf("counts mappings=%zu locations=%zu functions=%zu strings=%zu\n", p->n_mapping, p->n_location,
	       p->n_function, p->n_string_table);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(buf);
	return 0;
}
