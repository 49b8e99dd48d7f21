/* SPDX-License-Identifier: GPL-2.0 */
/*
 * SIGHUP: the command line and its --config file read again, and what of it
 * a running agent may take.
 */
#ifndef AGENT_RELOAD_H
#define AGENT_RELOAD_H

#include <stdbool.h>
#include "agent_oap.h"
#include "agent_opts.h"

/*
 * Parses @argc/@argv into @next, keeping from @now what needs a restart;
 * a changed OAP address, token or TLS setting gets @oap a new channel.
 * true: apply @next (*@identity: the processes' identity changed, report
 * them again); false (said): keep @now, @next is freed.
 */
bool reload_read(const struct agent_opts *now, int argc, char **argv, struct oap *oap,
		 struct agent_opts *next, bool *identity);

#endif /* AGENT_RELOAD_H */
