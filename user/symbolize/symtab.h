/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A sorted table of address ranges with names, for the symbolizer: built once
 * (add, add, ..., finish), then searched by address.  Names live in one pool
 * owned by the table.
 */
#ifndef SYMTAB_H
#define SYMTAB_H

#include <stddef.h>
#include <stdint.h>

/* 16 bytes: kallsyms alone is 122k of them, kept for the run. */
struct sym {
	uint64_t start;
	uint32_t size;		/* after symtab_finish: never 0 */
	uint32_t name_off;	/* into the pool */
};

/* A symbol while the table is built: the rank picks one among those at an address. */
struct sym_ranked {
	struct sym sym;
	uint32_t rank;		/* among symbols at one address the lowest rank wins */
};

struct symtab {
	struct sym_ranked *adding;	/* while built (cap of them); NULL after symtab_finish */
	struct sym *syms;		/* after symtab_finish, sorted (cap of them) */
	size_t nsyms, cap;
	char *pool;
	size_t pool_len, pool_cap;
};

/* Copies @name.  Returns 0 or -ENOMEM. */
int symtab_add(struct symtab *tab, uint64_t start, uint64_t size, const char *name, uint32_t rank);
/* Sorts, drops duplicate addresses, gives sizeless symbols the gap up to the next one. */
void symtab_finish(struct symtab *tab);
/* The symbol covering @addr, or NULL. */
const struct sym *symtab_find(const struct symtab *tab, uint64_t addr);
static inline const char *symtab_name(const struct symtab *tab, const struct sym *s)
{
	return tab->pool + s->name_off;
}
void symtab_free(struct symtab *tab);
/* The heap bytes the table holds, for the memory accounting. */
static inline size_t symtab_bytes(const struct symtab *tab)
{
	return tab->cap * sizeof(*tab->syms) + tab->pool_cap;
}

#endif /* SYMTAB_H */
