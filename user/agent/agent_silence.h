/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Continuous profiling's silence windows: when a task last started for each
 * (OAP process id, task kind), kept in the ledger so that an agent restarted
 * within --continuous-silence starts no second task for the same trip.
 * Rover keeps them in memory only (trigger/common.go); a restart there
 * re-arms every policy at once.
 */
#ifndef AGENT_SILENCE_H
#define AGENT_SILENCE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* At most this many starts are kept; past it the oldest goes (its window may end early). */
#define SILENCE_MAX 4096
/* A process id longer than this (the OAP's are 64 hex digits) is not kept. */
#define SILENCE_ID_MAX 256

struct silence {
	char *process_id;
	int kind;			/* the profiler's id */
	int64_t start_ms;		/* wall clock */
};

struct silences {
	struct silence *v;
	size_t n, cap;
	uint64_t restored, refused;	/* ledger lines taken, and refused (malformed, future, unknown kind) */
};

/* A task of @kind started for @process_id at @start_ms (replaces an older start). */
void silences_note(struct silences *s, const char *process_id, int kind, int64_t start_ms);
/* The last start for @process_id and @kind, 0 when none is known. */
int64_t silences_last(const struct silences *s, const char *process_id, int kind);
/* The ledger's lines: the starts still within @window_s of @now_ms. */
void silences_put(FILE *f, const struct silences *s, int64_t now_ms, uint64_t window_s);
/* A ledger line (@f, @n fields) if it is one of ours; others are left alone. */
void silences_parse(struct silences *s, char **f, int n, int64_t now_ms);
void silences_free(struct silences *s);

#endif /* AGENT_SILENCE_H */
