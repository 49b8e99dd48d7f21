// SPDX-License-Identifier: GPL-2.0
/* The table of output formats: lookup by --format name or by file name ending. */
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
