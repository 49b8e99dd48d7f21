/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A set of non-zero 64-bit ids (stack ids), each with an optional value:
 * open addressing, linear probing, no deletion (a set is cleared whole).
 */
#ifndef IDSET_H
#define IDSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct idset {
	uint64_t *ids;		/* 0: an empty slot */
	void **values;		/* parallel to ids */
	size_t nslots;		/* a power of two, or 0 */
	size_t n;
};

/* Adds @id (non-zero) with @value, replacing the value of an @id already there.  0 or -ENOMEM. */
int idset_put(struct idset *set, uint64_t id, void *value);
static inline int idset_add(struct idset *set, uint64_t id)
{
	return idset_put(set, id, NULL);
}
bool idset_has(const struct idset *set, uint64_t id);
/* @id's value, or NULL (not there, or added without one). */
void *idset_get(const struct idset *set, uint64_t id);
/* Empties @set, freeing each value with @free_value (NULL: values are not owned); keeps the table. */
void idset_clear(struct idset *set, void (*free_value)(void *));
void idset_free(struct idset *set, void (*free_value)(void *));
/* Calls @fn for each id (and its value). */
void idset_each(const struct idset *set, void (*fn)(uint64_t id, void *value, void *ctx), void *ctx);
/* Bytes the table takes (not the values). */
size_t idset_bytes(const struct idset *set);

#endif /* IDSET_H */
