// SPDX-License-Identifier: GPL-2.0
/* A set of non-zero 64-bit ids with optional values, open addressing (idset.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "idset.h"

#define IDSET_FIRST_SLOTS 256

/* Stack ids are hashes already, but other ids may not be: mix them (splitmix64's finalizer). */
static size_t slot_of(uint64_t id, size_t nslots)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdULL;
	id ^= id >> 33;
	return (size_t)id & (nslots - 1);
}

static size_t find_slot(const struct idset *set, uint64_t id)
{
	size_t i = slot_of(id, set->nslots);

	while (set->ids[i] && set->ids[i] != id)
		i = (i + 1) & (set->nslots - 1);
	return i;
}

/* Doubles the table (kept at most half full); 0 or -ENOMEM with @set unchanged. */
static int grow(struct idset *set)
{
	size_t nslots = set->nslots ? set->nslots * 2 : IDSET_FIRST_SLOTS;
	struct idset bigger = { .nslots = nslots, .n = set->n };

	bigger.ids = calloc(nslots, sizeof(*bigger.ids));
	bigger.values = calloc(nslots, sizeof(*bigger.values));
	if (!bigger.ids || !bigger.values) {
		free(bigger.ids);
		free(bigger.values);
		return -ENOMEM;
	}
	for (size_t i = 0; i < set->nslots; i++) {
		size_t to;

		if (!set->ids[i])
			continue;
		to = find_slot(&bigger, set->ids[i]);
		bigger.ids[to] = set->ids[i];
		bigger.values[to] = set->values[i];
	}
	free(set->ids);
	free(set->values);
	*set = bigger;
	return 0;
}

int idset_put(struct idset *set, uint64_t id, void *value)
{
	size_t i;

	if (!id)
		return -EINVAL;
	if ((set->n + 1) * 2 > set->nslots && grow(set))
		return -ENOMEM;
	i = find_slot(set, id);
	if (!set->ids[i]) {
		set->ids[i] = id;
		set->n++;
	}
	set->values[i] = value;
	return 0;
}

bool idset_has(const struct idset *set, uint64_t id)
{
	return id && set->nslots && set->ids[find_slot(set, id)] == id;
}

void *idset_get(const struct idset *set, uint64_t id)
{
	size_t i;

	if (!id || !set->nslots)
		return NULL;
	i = find_slot(set, id);
	return set->ids[i] == id ? set->values[i] : NULL;
}

void idset_clear(struct idset *set, void (*free_value)(void *))
{
	for (size_t i = 0; free_value && i < set->nslots; i++)
		if (set->ids[i])
			free_value(set->values[i]);
	if (set->nslots) {
		memset(set->ids, 0, set->nslots * sizeof(*set->ids));
		memset(set->values, 0, set->nslots * sizeof(*set->values));
	}
	set->n = 0;
}

void idset_free(struct idset *set, void (*free_value)(void *))
{
	idset_clear(set, free_value);
	free(set->ids);
	free(set->values);
	memset(set, 0, sizeof(*set));
}

void idset_each(const struct idset *set, void (*fn)(uint64_t id, void *value, void *ctx), void *ctx)
{
	for (size_t i = 0; i < set->nslots; i++)
		if (set->ids[i])
			fn(set->ids[i], set->values[i], ctx);
}

size_t idset_bytes(const struct idset *set)
{
	return set->nslots * (sizeof(*set->ids) + sizeof(*set->values));
}
