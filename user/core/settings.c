// SPDX-License-Identifier: GPL-2.0
/*
 * Settings loaded BPF programs can take and settings they cannot: the running value kept and
 * named for SIGHUP and takeover (settings.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "settings.h"
#include "util.h"

void changed_keys_add(struct changed_keys *keys, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (keys->len + 2 >= sizeof(keys->text)) {
		keys->n++;	/* no room left to name it: the count still says how many */
		return;
	}
	if (keys->n)
		keys->len += snprintf(keys->text + keys->len, sizeof(keys->text) - keys->len, ", ");
	va_start(ap, fmt);
	n = vsnprintf(keys->text + keys->len, sizeof(keys->text) - keys->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		keys->len += (size_t)n < sizeof(keys->text) - keys->len ? (size_t)n : sizeof(keys->text) - keys->len - 1;
	keys->n++;
}

uint32_t settings_unwind_rows(const struct profiler_opts *o)
{
	if (o->stack_mode == STACK_MODE_KERNEL || o->unwind == UNWIND_FP || !feature_has(FEAT_DWARF_UNWIND))
		return 0;
	return o->unwind_rows ?: UNWIND_ROWS_DEFAULT;
}

/* "oncpu,offcpu": the profilers of @kinds. */
static const char *kind_names(uint32_t kinds, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; profilers[i] && used < len; i++)
		if (kinds & (1u << profilers[i]->id))
			used += snprintf(buf + used, len - used, "%s%s", used ? "," : "", profilers[i]->name);
	return buf[0] ? buf : "none";
}

/* @may_add: profilers not loaded yet can be (a takeover loads them beside the pinned ones). */
static void keep_kinds(const struct profiler_opts *now, struct profiler_opts *next, bool may_add,
		       struct changed_keys *keys)
{
	uint32_t fixed = may_add ? now->kinds : now->kinds | next->kinds;
	char want[96], have[96];

	if ((now->kinds & fixed) != (next->kinds & fixed))
		changed_keys_add(keys, "profilers %s (loaded: %s)", kind_names(next->kinds, want, sizeof(want)),
				 kind_names(now->kinds, have, sizeof(have)));
	next->kinds = may_add ? now->kinds | next->kinds : now->kinds;
}

/* A kernel-only @next has no user stack to unwind: the loaded tables only wait unused. */
static void keep_unwind(const struct profiler_opts *now, struct profiler_opts *next, struct changed_keys *keys)
{
	uint32_t have = settings_unwind_rows(now), want = settings_unwind_rows(next);

	if (next->stack_mode != STACK_MODE_KERNEL && have != want) {
		if (have && want)
			changed_keys_add(keys, "--unwind-rows %u (loaded: %u)", want, have);
		else
			changed_keys_add(keys, "--unwind %s (loaded: %s)", want ? "dwarf" : "fp",
					 have ? "dwarf" : "fp, or -K");
	}
	next->unwind = now->unwind;
	next->unwind_rows = now->unwind_rows;
}

static void keep_sizes(const struct profiler_opts *now, struct profiler_opts *next, struct changed_keys *keys)
{
	uint32_t have = now->stacks_entries ?: PROFILER_STACKS_DEFAULT;
	uint32_t want = next->stacks_entries ?: PROFILER_STACKS_DEFAULT;

	if (have != want)
		changed_keys_add(keys, "--stacks-max %u (loaded: %u)", want, have);
	have = now->counts_entries ?: PROFILER_COUNTS_DEFAULT;
	want = next->counts_entries ?: PROFILER_COUNTS_DEFAULT;
	if (have != want)
		changed_keys_add(keys, "--counts-max %u (loaded: %u)", want, have);
	next->stacks_entries = now->stacks_entries;
	next->counts_entries = now->counts_entries;
}

int settings_keep_fixed(const struct profiler_opts *now, struct profiler_opts *next, bool may_add_kinds,
			struct changed_keys *keys)
{
	int before = keys->n;

	keep_kinds(now, next, may_add_kinds, keys);
	keep_unwind(now, next, keys);
	keep_sizes(now, next, keys);
	for (int i = 0; profilers[i]; i++)
		if ((now->kinds & (1u << profilers[i]->id)) && profilers[i]->config.keep_fixed)
			profilers[i]->config.keep_fixed(profiler_config(now, profilers[i]),
						 profiler_config(next, profilers[i]), keys);
	return keys->n - before;
}
