// SPDX-License-Identifier: GPL-2.0
/*
 * Names user frames FILE+0xADDR from the unwinder's maps, as the pinned iterator does
 * (framefile.h).
 */
#include <stdlib.h>
#include <bpf/bpf.h>
#include "framefile.h"
#include "unwind_tables.h"
#include "util.h"

struct frame_files {
	int procs_fd;
	int files_fd;
	bool have_proc;			/* proc holds the current process's mappings */
	struct unwind_proc proc;	/* 5 KiB: why this is allocated */
	uint32_t file_id;		/* the last file looked up, 0: none */
	bool have_file;
	struct unwind_file_info file;
};

struct frame_files *frame_files_new(int procs_fd, int files_fd)
{
	struct frame_files *ff = calloc_logged(1, sizeof(*ff));

	if (ff) {
		ff->procs_fd = procs_fd;
		ff->files_fd = files_fd;
	}
	return ff;
}

void frame_files_free(struct frame_files *ff)
{
	free(ff);
}

void frame_files_set_process(struct frame_files *ff, uint32_t tgid)
{
	ff->have_proc = bpf_map_lookup_elem(ff->procs_fd, &tgid, &ff->proc) == 0;
	if (ff->have_proc && ff->proc.nmappings > UNWIND_MAX_MAPPINGS)
		ff->proc.nmappings = UNWIND_MAX_MAPPINGS;
}

/* The mapping holding @addr (sorted by start, as bpf/unwind/mappings.bpf.h searches them), or NULL. */
static const struct unwind_mapping *mapping_find(const struct unwind_proc *proc, uint64_t addr)
{
	uint32_t lo = 0, hi = proc->nmappings;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		const struct unwind_mapping *m = &proc->mappings[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

static const struct unwind_file_info *file_find(struct frame_files *ff, uint32_t id)
{
	if (!id)
		return NULL;
	if (id != ff->file_id) {
		ff->file_id = id;
		ff->have_file = bpf_map_lookup_elem(ff->files_fd, &id, &ff->file) == 0;
	}
	return ff->have_file ? &ff->file : NULL;
}

void frame_files_print(struct frame_files *ff, uint64_t ip, bool leaf, FILE *out)
{
	/* A return address belongs to the call before it (the iterator looks up ip - 1 too). */
	const struct unwind_mapping *m = ff->have_proc ? mapping_find(&ff->proc, leaf ? ip : ip - 1) : NULL;
	const struct unwind_file_info *f = m ? file_find(ff, m->file_id) : NULL;

	if (f)
		fprintf(out, ";%.*s+0x%llx", (int)sizeof(f->path), f->path, (unsigned long long)(ip - m->bias));
	else
		fprintf(out, ";0x%llx", (unsigned long long)ip);
}
