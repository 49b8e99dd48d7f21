/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every output format implements this.  Adding a format is adding a file
 * user/export/export_X.c with one `const struct exporter exporter_X` and a line in
 * the table in exporter.c.
 */
#ifndef EXPORTER_H
#define EXPORTER_H

#include <stdio.h>
#include "profile.h"

struct export_opts {
	int value_index;	/* which profile value folded/svg weigh by; -1: the profile's default */
};

struct exporter {
	const char *name;		/* --format NAME */
	const char *const *suffixes;	/* file name endings that select it, NULL-terminated */
	/* Writes @p to @path; returns 0 or a negative errno, having printed why. */
	int (*write)(const struct profile *p, const char *path, const struct export_opts *opts);
};

/* Helpers for exporters; each logs one line naming @path on failure. */
/* The value index @opts asks for, or the profile's default; -EINVAL if out of range. */
int export_value_index(const struct profile *p, const struct export_opts *opts, const char *path);
/* fopen for writing; NULL with *err set. */
FILE *export_open(const char *path, int *err);
/* Flushes and closes @f; 0 or a negative errno (a write error seen earlier included). */
int export_close(FILE *f, const char *path);

const struct exporter *exporter_by_name(const char *name);
const struct exporter *exporter_for_path(const char *path);
/* "pprof, folded, svg, ..." for --help and errors. */
const char *exporter_names(void);

extern const struct exporter exporter_pprof;
extern const struct exporter exporter_folded;
extern const struct exporter exporter_svg;
extern const struct exporter exporter_skywalking;

#endif /* EXPORTER_H */
