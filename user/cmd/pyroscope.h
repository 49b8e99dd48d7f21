/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The daemon's Pyroscope route (run --pyroscope URL): each interval's
 * profile of each kind is encoded as pprof and pushed to Grafana
 * Pyroscope's /ingest endpoint, through the agent's spool and ledger, so an
 * outage loses nothing until the spool's bound, and a restart sends what
 * the last run could not.
 */
#ifndef PYROSCOPE_H
#define PYROSCOPE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "output.h"

#define PYROSCOPE_MAX_LABELS 32

struct pyroscope_opts {
	const char *url;		/* NULL: off */
	const char *app;		/* the application (service) name */
	const char *labels[PYROSCOPE_MAX_LABELS];	/* "key=value" */
	int nlabels;
	const char *auth_file;		/* "user:password" for basic auth */
	const char *tenant_file;	/* the X-Scope-OrgID header */
	const char *ca_file;		/* https: the CA bundle (PEM); NULL: the system's */
	const char *state_dir;		/* the ledger's parent directory */
	uint64_t spool_bytes;		/* bound of what waits, in memory and on disk */
	const volatile int *stop;	/* once set, a push in progress ends at once */
};

/* Checks the options that need no I/O (URL, app name, labels); false after one line. */
bool pyroscope_check(const struct pyroscope_opts *o);
/* Reads the auth files, opens the ledger and takes over what it holds; NULL after one line. */
void *pyroscope_open(const struct pyroscope_opts *o);

/*
 * SIGHUP: @o's app, labels, auth and tenant files (read again) for the pushes from now on; the
 * running ones kept after one line when a file cannot be read.  0 or -errno.
 */
int pyroscope_reload(void *state, const struct pyroscope_opts *o);

extern const struct output_ops pyroscope_output;

#endif /* PYROSCOPE_H */
