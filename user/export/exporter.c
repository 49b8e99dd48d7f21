// SPDX-License-Identifier: GPL-2.0
/* The table of output formats: lookup by --format name or by file name ending. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "exporter.h"
#include "util.h"

static const struct exporter *const exporters[] = {
	&exporter_pprof,
	&exporter_folded,
	&exporter_svg,
	&exporter_skywalking,
};

#define NR_EXPORTERS (sizeof(exporters) / sizeof(exporters[0]))

const struct exporter *exporter_by_name(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < NR_EXPORTERS; i++)
		if (strcmp(exporters[i]->name, name) == 0)
			return exporters[i];
	return NULL;
}

const struct exporter *exporter_for_path(const char *path)
{
	const char *const *suffix;
	size_t i;

	if (!path)
		return NULL;
	for (i = 0; i < NR_EXPORTERS; i++)
		for (suffix = exporters[i]->suffixes; suffix && *suffix; suffix++)
			if (str_ends_with(path, *suffix))
				return exporters[i];
	return NULL;
}

const char *exporter_names(void)
{
	static char names[256];
	size_t i, len = 0;

	if (names[0])
		return names;
	for (i = 0; i < NR_EXPORTERS && len < sizeof(names); i++)
		len += snprintf(names + len, sizeof(names) - len, "%s%s",
				i ? ", " : "", exporters[i]->name);
	return names;
}

int export_value_index(const struct profile *p, const struct export_opts *opts, const char *path)
{
	int idx = opts && opts->value_index >= 0 ? opts->value_index : p->default_value;

	if (idx < 0 || idx >= p->nvalues) {
		log_error("cannot write %s: no value %d in a profile of %d values", path, idx, p->nvalues);
		return -EINVAL;
	}
	return idx;
}

FILE *export_open(const char *path, int *err)
{
	FILE *f = fopen_output(path);

	*err = f ? 0 : -errno;
	if (!f)
		log_error("cannot write %s: %s", path, strerror(errno));
	else
		errno = 0;
	return f;
}

int export_close(FILE *f, const char *path)
{
	int err = 0;

	if (ferror(f))
		err = -(errno ? errno : EIO);
	if (fclose(f) && !err)
		err = -(errno ? errno : EIO);
	/* A partial file stays: @path may be a device or a link, not ours to remove. */
	if (err)
		log_error("cannot write %s: %s", path, strerror(-err));
	return err;
}
