// SPDX-License-Identifier: GPL-2.0
/*
 * Continuous profiling's silence windows, remembered per (OAP process id,
 * task kind) and written into the ledger, so that they outlive a restart.
 *
 * The ledger is root's own file, but a line is still checked before it is
 * believed: a known profiler, a start not in the future (a clock set back
 * would otherwise silence a process for as long as it is off), an id of
 * bounded length; at most SILENCE_MAX are kept.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "agent_silence.h"
#include "agent_store.h"
#include "profiler.h"
#include "util.h"

/* Clocks of a restarted host may differ by this much without the start counting as future. */
#define SILENCE_SKEW_MS 60000

static struct silence *find(const struct silences *s, const char *process_id, int kind)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].kind == kind && !strcmp(s->v[i].process_id, process_id))
			return &s->v[i];
	return NULL;
}

/* A free slot: a new one, or the oldest start's when SILENCE_MAX are kept. */
static struct silence *slot(struct silences *s)
{
	struct silence *oldest;

	if (s->n < SILENCE_MAX) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 16;
			struct silence *v = realloc(s->v, cap * sizeof(*v));

			if (!v)
				return NULL;
			s->v = v;
			s->cap = cap;
		}
		s->v[s->n] = (struct silence){ 0 };
		return &s->v[s->n++];
	}
	oldest = &s->v[0];
	for (size_t i = 1; i < s->n; i++)
		if (s->v[i].start_ms < oldest->start_ms)
			oldest = &s->v[i];
	free(oldest->process_id);
	*oldest = (struct silence){ 0 };
	return oldest;
}

void silences_note(struct silences *s, const char *process_id, int kind, int64_t start_ms)
{
	struct silence *e = find(s, process_id, kind);
	char *id;

	if (e) {
		if (start_ms > e->start_ms)
			e->start_ms = start_ms;
		return;
	}
	if (strlen(process_id) > SILENCE_ID_MAX)
		return;
	id = strdup(process_id);
	e = id ? slot(s) : NULL;
	if (!e) {
		free(id);
		log_warn("continuous: out of memory, the silence window of process %s is not kept", process_id);
		return;
	}
	*e = (struct silence){ .process_id = id, .kind = kind, .start_ms = start_ms };
}

int64_t silences_last(const struct silences *s, const char *process_id, int kind)
{
	const struct silence *e = find(s, process_id, kind);

	return e ? e->start_ms : 0;
}

static const char *kind_name(int kind)
{
	for (int i = 0; profilers[i]; i++)
		if ((int)profilers[i]->id == kind && profilers[i]->skywalking_target)
			return profilers[i]->name;
	return NULL;
}

static int kind_of(const char *name)
{
	for (int i = 0; profilers[i]; i++)
		if (profilers[i]->skywalking_target && !strcmp(profilers[i]->name, name))
			return (int)profilers[i]->id;
	return -1;
}

/* "silence KIND START_MS PROCESS_ID": KIND the profiler's name, PROCESS_ID escaped. */
void silences_put(FILE *f, const struct silences *s, int64_t now_ms, uint64_t window_s)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct silence *e = &s->v[i];
		const char *name = kind_name(e->kind);

		if (!name || now_ms - e->start_ms >= (int64_t)window_s * 1000)
			continue;	/* its window is over: nothing to keep */
		fprintf(f, "silence %s %" PRId64 " ", name, e->start_ms);
		store_put_field(f, e->process_id);
		fputc('\n', f);
	}
}

void silences_parse(struct silences *s, char **f, int n, int64_t now_ms)
{
	char *end;
	long long start;
	int kind;

	if (n < 1 || strcmp(f[0], "silence"))
		return;
	if (n != 4)
		goto refused;
	kind = kind_of(f[1]);
	errno = 0;
	start = strtoll(f[2], &end, 10);
	if (kind < 0 || errno || *end || start <= 0 || start > now_ms + SILENCE_SKEW_MS)
		goto refused;
	store_field(f[3]);
	if (!*f[3] || strlen(f[3]) > SILENCE_ID_MAX || s->n >= SILENCE_MAX)
		goto refused;
	silences_note(s, f[3], kind, start);
	s->restored++;
	return;
refused:
	s->refused++;
}

void silences_free(struct silences *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].process_id);
	free(s->v);
	*s = (struct silences){ 0 };
}
