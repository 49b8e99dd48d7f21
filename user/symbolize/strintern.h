/* SPDX-License-Identifier: GPL-2.0 */
/* Interned strings for the symbolizer: one copy each, alive until strintern_free(). */
#ifndef STRINTERN_H
#define STRINTERN_H

#include <stddef.h>

struct strintern {
	const char **slots;	/* open addressing, power-of-two size */
	size_t nslots, used;
	struct strblock *blocks;	/* arena: strings never move */
	size_t block_left;
	size_t bytes, max_bytes;
};

void strintern_init(struct strintern *in, size_t max_bytes);
/* The one copy of @s, or NULL when out of memory or over max_bytes. */
const char *strintern(struct strintern *in, const char *s);
void strintern_free(struct strintern *in);

#endif /* STRINTERN_H */
