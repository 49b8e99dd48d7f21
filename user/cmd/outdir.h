/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The daemon's local outputs (run --output-dir DIR): one file per interval
 * per kind, DIR/KIND-YYYYmmddTHHMMSSZ.SUFFIX, mode 0600, written whole or not
 * at all (a temporary file renamed into place), every name resolved through
 * the directory's fd without following a symlink, the oldest deleted past
 * --keep-files / --keep-mb.
 */
#ifndef OUTDIR_H
#define OUTDIR_H

#include <stdint.h>
#include <time.h>
#include "exporter.h"
#include "output.h"

struct outdir {
	int dirfd;
	const char *path;
	const struct exporter *exporter;
	uint64_t keep_files;		/* per kind; 0: no limit */
	uint64_t keep_bytes;		/* per kind; 0: no limit */
	uint64_t files_written, write_errors;
};

/* Opens DIR (created 0700 when missing; a symlink is refused); 0 or a negative errno after one line. */
int outdir_open(struct outdir *d, const char *path, const struct exporter *exporter);
/* Writes @prof as KIND-@when.SUFFIX, then rotates that kind's files; 0 or a negative errno after one line. */
int outdir_write(struct outdir *d, const struct profile *prof, time_t when);
/* The files and bytes of @kind now in the directory. */
void outdir_usage(const struct outdir *d, const char *kind, uint64_t *files, uint64_t *bytes);
void outdir_close(struct outdir *d);

/* The daemon's interval output (state: an open struct outdir): a file per profile. */
extern const struct output_ops outdir_output;

#endif /* OUTDIR_H */
