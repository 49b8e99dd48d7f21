// SPDX-License-Identifier: GPL-2.0
/*
 * Folded stacks, as flamegraph.pl and speedscope read them:
 *   comm;userroot;...;userleaf;kernroot_[k];...;kernleaf_[k] WEIGHT
 * One line per distinct stack, sorted, zero weights left out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exporter.h"
#include "util.h"

struct folded_line {
	char *stack;
	uint64_t weight;
};

struct sbuf {
	char *s;
	size_t len, cap;
};

static int sbuf_reserve(struct sbuf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 256;
	char *bigger;

	if (b->len + more + 1 <= b->cap)
		return 0;
	while (cap < b->len + more + 1)
		cap *= 2;
	bigger = realloc(b->s, cap);
	if (!bigger) {
		log_error("out of memory (%zu bytes)", cap);
		return -ENOMEM;
	}
	b->s = bigger;
	b->cap = cap;
	return 0;
}

/*
 * Appends a frame name with what would break the format replaced: ';'
 * separates frames and whitespace separates the weight, in every reader.
 */
static int sbuf_add_frame(struct sbuf *b, const char *name, size_t maxlen, const char *suffix)
{
	size_t n = name ? strnlen(name, maxlen) : 0, m = strlen(suffix), i;

	if (n == 0) {
		name = "[unknown]";
		n = strlen(name);
	}
	if (sbuf_reserve(b, n + m + 1))
		return -ENOMEM;
	if (b->len)
		b->s[b->len++] = ';';
	for (i = 0; i < n; i++) {
		unsigned char c = name[i];

		b->s[b->len++] = (c == ';' || c <= ' ' || c == 0x7f) ? '_' : c;
	}
	memcpy(b->s + b->len, suffix, m + 1);
	b->len += m;
	return 0;
}

/* Root first: comm, user frames root .. leaf, then kernel frames syscall entry .. leaf. */
static int fold_sample(const struct profile_sample *s, struct sbuf *b)
{
	uint32_t i;

	b->len = 0;
	if (sbuf_add_frame(b, s->comm, sizeof(s->comm), ""))
		return -ENOMEM;
	for (i = s->nkernel + s->nuser; i-- > s->nkernel;)
		if (sbuf_add_frame(b, s->frames[i].sym.name, SIZE_MAX, ""))
			return -ENOMEM;
	for (i = s->nkernel; i-- > 0;)	/* an object frame (a lock's name) is no kernel frame */
		if (sbuf_add_frame(b, s->frames[i].sym.name, SIZE_MAX, s->frames[i].kernel ? "_[k]" : ""))
			return -ENOMEM;
	return 0;
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->stack, ((const struct folded_line *)b)->stack);
}

/* Sorted, merged lines into @out / @count; the caller frees every stack and the array. */
static int fold_profile(const struct profile *p, int idx, struct folded_line **out, size_t *count)
{
	struct folded_line *lines = calloc_logged(p->nsamples, sizeof(*lines));
	struct sbuf b = { 0 };
	size_t n = 0, i, merged = 0;
	int err = 0;

	if (!lines)
		return -ENOMEM;
	for (i = 0; i < p->nsamples; i++) {
		if (!p->samples[i].values[idx])
			continue;
		err = fold_sample(&p->samples[i], &b);
		if (err)
			goto out;
		lines[n].stack = strdup_logged(b.s);
		if (!lines[n].stack) {
			err = -ENOMEM;
			goto out;
		}
		lines[n++].weight = p->samples[i].values[idx];
	}
	qsort(lines, n, sizeof(*lines), cmp_lines);
	for (i = 0; i < n; i++) {
		if (merged && strcmp(lines[merged - 1].stack, lines[i].stack) == 0) {
			lines[merged - 1].weight += lines[i].weight;
			free(lines[i].stack);
			continue;
		}
		lines[merged++] = lines[i];
	}
	n = merged;
out:
	free(b.s);
	if (err) {
		while (n)
			free(lines[--n].stack);
		free(lines);
		return err;
	}
	*out = lines;
	*count = n;
	return 0;
}

static int folded_write(const struct profile *p, const char *path, const struct export_opts *opts)
{
	struct folded_line *lines = NULL;
	size_t n = 0, i;
	FILE *f = NULL;
	int idx, err;

	idx = export_value_index(p, opts, path);
	if (idx < 0)
		return idx;
	err = fold_profile(p, idx, &lines, &n);
	if (err) {
		log_error("cannot write %s: %s", path, strerror(-err));
		return err;
	}
	f = export_open(path, &err);
	if (!f)
		goto out;
	for (i = 0; i < n; i++)
		fprintf(f, "%s %llu\n", lines[i].stack, (unsigned long long)lines[i].weight);
	err = export_close(f, path);
out:
	for (i = 0; i < n; i++)
		free(lines[i].stack);
	free(lines);
	return err;
}

static const char *const folded_suffixes[] = { ".folded", ".txt", NULL };

const struct exporter exporter_folded = {
	.name = "folded",
	.suffixes = folded_suffixes,
	.write = folded_write,
};
