// SPDX-License-Identifier: GPL-2.0
/* A string set backed by an arena, so that handed-out names stay valid while it grows. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "strintern.h"

#define BLOCK_SIZE	(64u << 10)

struct strblock {
	struct strblock *next;
	char data[];
};

void strintern_init(struct strintern *in, size_t max_bytes)
{
	memset(in, 0, sizeof(*in));
	in->max_bytes = max_bytes;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static size_t find_slot(const char **slots, size_t nslots, const char *s)
{
	size_t i = hash_str(s) & (nslots - 1);

	while (slots[i] && strcmp(slots[i], s))
		i = (i + 1) & (nslots - 1);
	return i;
}

static int grow_slots(struct strintern *in)
{
	size_t i, n = in->nslots ? in->nslots * 2 : 1024;
	const char **slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -1;
	for (i = 0; i < in->nslots; i++)
		if (in->slots[i])
			slots[find_slot(slots, n, in->slots[i])] = in->slots[i];
	free(in->slots);
	in->slots = slots;
	in->nslots = n;
	return 0;
}

static char *arena_copy(struct strintern *in, const char *s, size_t len)
{
	struct strblock *b;
	char *dst;

	if (len > in->block_left) {
		size_t size = len > BLOCK_SIZE ? len : BLOCK_SIZE;

		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->next = in->blocks;
		in->blocks = b;
		in->block_left = size;
		in->bytes += size;
	}
	/* The newest block is at the head; its free tail is its last block_left bytes. */
	b = in->blocks;
	dst = b->data + (len > BLOCK_SIZE ? 0 : BLOCK_SIZE - in->block_left);
	memcpy(dst, s, len);
	in->block_left = len > BLOCK_SIZE ? 0 : in->block_left - len;
	return dst;
}

const char *strintern(struct strintern *in, const char *s)
{
	size_t i, len = strlen(s) + 1;
	char *copy;

	if ((in->used + 1) * 2 > in->nslots && grow_slots(in))
		return NULL;
	i = find_slot(in->slots, in->nslots, s);
	if (in->slots[i])
		return in->slots[i];
	if (in->bytes + len > in->max_bytes)
		return NULL;
	copy = arena_copy(in, s, len);
	if (!copy)
		return NULL;
	in->slots[i] = copy;
	in->used++;
	return copy;
}

void strintern_free(struct strintern *in)
{
	while (in->blocks) {
		struct strblock *next = in->blocks->next;

		free(in->blocks);
		in->blocks = next;
	}
	free(in->slots);
	memset(in, 0, sizeof(*in));
}
