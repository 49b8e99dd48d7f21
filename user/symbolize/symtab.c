// SPDX-License-Identifier: GPL-2.0
/* Sorted address -> name tables shared by the kernel and ELF symbol readers. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "symtab.h"

#define SYMTAB_MAX_POOL	(1u << 31)	/* name_off is 32 bits; far above any real binary */

static int grow(void **buf, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 256;
	void *nbuf;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	nbuf = realloc(*buf, ncap * elem);
	if (!nbuf)
		return -ENOMEM;
	*buf = nbuf;
	*cap = ncap;
	return 0;
}

int symtab_add(struct symtab *tab, uint64_t start, uint64_t size, const char *name, uint32_t rank)
{
	size_t len = strlen(name) + 1;
	struct sym_ranked *s;

	if (tab->syms)
		return -EINVAL;	/* finished: built once */
	if (tab->pool_len + len > SYMTAB_MAX_POOL)
		return -ENOMEM;
	if (grow((void **)&tab->adding, &tab->cap, tab->nsyms + 1, sizeof(*tab->adding)) ||
	    grow((void **)&tab->pool, &tab->pool_cap, tab->pool_len + len, 1))
		return -ENOMEM;
	memcpy(tab->pool + tab->pool_len, name, len);
	s = &tab->adding[tab->nsyms++];
	s->sym.start = start;
	s->sym.size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
	s->sym.name_off = (uint32_t)tab->pool_len;
	s->rank = rank;
	tab->pool_len += len;
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym_ranked *x = a, *y = b;

	if (x->sym.start != y->sym.start)
		return x->sym.start < y->sym.start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->sym.name_off > y->sym.name_off) - (x->sym.name_off < y->sym.name_off);
}

static bool sorted(const struct sym_ranked *r, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (cmp_sym(&r[i - 1], &r[i]) > 0)
			return false;
	return true;
}

/*
 * The ranked symbols, sorted, into plain ones in the same block: sym i
 * (16 bytes at 16i) is written after ranked i (24 bytes at 24i) was read,
 * and no later ranked one starts below 16i + 16.
 */
static struct sym *drop_ranks(struct sym_ranked *ranked, size_t n)
{
	struct sym *plain = (struct sym *)ranked;

	for (size_t i = 0; i < n; i++)
		memmove(&plain[i], &ranked[i].sym, sizeof(*plain));
	return plain;
}

/*
 * A table is kept for the run (kallsyms: 122k symbols, 4.9 MB): the room
 * doubling left (up to half of it) and the ranks go back.  A failed shrink
 * keeps the bigger block.
 */
static void shrink_to_fit(struct symtab *tab)
{
	struct sym *syms = realloc(tab->syms, tab->nsyms * sizeof(*tab->syms));
	char *pool = tab->pool_len ? realloc(tab->pool, tab->pool_len) : NULL;

	if (syms)
		tab->syms = syms;
	tab->cap = syms ? tab->nsyms : tab->cap * sizeof(*tab->adding) / sizeof(*tab->syms);
	if (pool) {
		tab->pool = pool;
		tab->pool_cap = tab->pool_len;
	}
}

void symtab_finish(struct symtab *tab)
{
	struct sym_ranked *r = tab->adding;
	size_t i, kept = 0;

	if (!r)
		return;	/* nothing added, or finished already */
	if (!sorted(r, tab->nsyms))	/* /proc/kallsyms comes sorted: n - 1 comparisons, not n log n */
		qsort(r, tab->nsyms, sizeof(*r), cmp_sym);
	/* One symbol per address: the best ranked (sorted first). */
	for (i = 0; i < tab->nsyms; i++) {
		if (kept && r[kept - 1].sym.start == r[i].sym.start)
			continue;
		r[kept++] = r[i];
	}
	tab->nsyms = kept;
	tab->adding = NULL;
	if (!kept) {	/* only a failed add: realloc to 0 bytes would free the block */
		free(r);
		tab->cap = 0;
		return;
	}
	tab->syms = drop_ranks(r, kept);
	/* Sizeless symbols (assembly, kallsyms) cover the gap to the next one. */
	for (i = 0; i < kept; i++) {
		struct sym *s = &tab->syms[i];
		uint64_t gap;

		if (s->size)
			continue;
		gap = i + 1 < kept ? tab->syms[i + 1].start - s->start : 1;
		s->size = gap > UINT32_MAX ? UINT32_MAX : (uint32_t)gap;
	}
	shrink_to_fit(tab);
}

const struct sym *symtab_find(const struct symtab *tab, uint64_t addr)
{
	size_t lo = 0, hi = tab->syms ? tab->nsyms : 0;	/* not finished: nothing to find */
	const struct sym *s;

	/* Last symbol starting at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tab->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &tab->syms[lo - 1];
	return addr - s->start < s->size ? s : NULL;
}

void symtab_free(struct symtab *tab)
{
	free(tab->adding);
	free(tab->syms);
	free(tab->pool);
	memset(tab, 0, sizeof(*tab));
}
