// SPDX-License-Identifier: GPL-2.0
/*
 * SIGHUP: the command line and its --config file are read again, to be
 * applied between two turns of the loop, so nothing in flight is cut: the
 * spool, the ledger, the tasks and their counts stay.  What a running agent
 * cannot change is named in one line and kept.
 */
#include <stdlib.h>
#include <string.h>
#include "agent_reload.h"
#include "config.h"
#include "util.h"

static bool str_differs(const char *x, const char *y)
{
	return (x == NULL) != (y == NULL) || (x && strcmp(x, y));
}

static bool labels_differ(const struct agent_opts *now, const struct agent_opts *next)
{
	if (now->nlabels != next->nlabels || now->nexe_labels != next->nexe_labels)
		return true;
	for (int i = 0; i < now->nlabels; i++)
		if (strcmp(now->labels[i], next->labels[i]))
			return true;
	for (int i = 0; i < now->nexe_labels; i++)
		if (strcmp(now->exe_labels[i].glob, next->exe_labels[i].glob))
			return true;
	return false;
}

/* What the OAP knows a process by: a change makes every process a new one. */
static bool identity_differs(const struct agent_opts *now, const struct agent_opts *next)
{
	return str_differs(now->service, next->service) || str_differs(now->instance, next->instance) ||
	       strcmp(now->layer, next->layer) || labels_differ(now, next);
}

static bool channel_differs(const struct agent_opts *now, const struct agent_opts *next)
{
	return strcmp(now->oap, next->oap) || str_differs(now->token, next->token) ||
	       now->backoff_max_ms != next->backoff_max_ms || now->tls.enabled != next->tls.enabled ||
	       now->tls.skip_verify != next->tls.skip_verify || str_differs(now->tls.ca_file, next->tls.ca_file) ||
	       str_differs(now->tls.cert_file, next->tls.cert_file) ||
	       str_differs(now->tls.key_file, next->tls.key_file);
}

/* Keeps what needs a restart (named in one line when the file changed it). */
static void keep_restart_keys(const struct agent_opts *now, struct agent_opts *next)
{
	char keys[128] = "";
	size_t len = 0;

#define KEEP(key, field, changed)							\
	do {										\
		if ((changed) && len < sizeof(keys))					\
			len += snprintf(keys + len, sizeof(keys) - len, "%s%s", len ? ", " : "", key); \
		next->field = now->field;						\
	} while (0)
	KEEP("pin", pin_dir, str_differs(now->pin_dir, next->pin_dir));
	KEEP("state-dir", state_dir, strcmp(now->state_dir, next->state_dir));
	KEEP("duration", duration_s, now->duration_s != next->duration_s);
	KEEP("jvm-perfmap", jvm_perfmap_s, now->jvm_perfmap_s != next->jvm_perfmap_s);
#undef KEEP
	if (len)
		log_warn("reload: %s changed: not applied, they need a restart", keys);
}

/*
 * The new channel first: if it cannot be made, the old one and the old
 * address, token and TLS settings stay.  Nothing is in flight between two
 * turns of the loop; what was not acknowledged is in the spool and goes to
 * the new address.
 */
static bool swap_channel(struct oap *oap, const struct agent_opts *next)
{
	struct grpc_channel *ch = oap_channel_new(next);

	if (!ch) {
		log_error("reload: cannot use OAP %s as given; the running connection is kept", next->oap);
		return false;
	}
	oap_set_channel(oap, ch);
	log_notice("reload: OAP %s%s", next->oap, next->tls.enabled ? " over TLS" : "");
	return true;
}

bool reload_read(const struct agent_opts *now, int argc, char **argv, struct oap *oap,
		 struct agent_opts *next, bool *identity)
{
	memset(next, 0, sizeof(*next));
	log_notice("SIGHUP: reading %s again", config_path() ? config_path() : "the command line");
	if (opts_parse(next, argc, argv)) {
		log_error("reload: the settings above are wrong; the running ones are kept");
		free(next->token);
		return false;
	}
	keep_restart_keys(now, next);
	if (channel_differs(now, next) && !swap_channel(oap, next)) {
		free(next->token);
		return false;
	}
	*identity = identity_differs(now, next);
	return true;
}
