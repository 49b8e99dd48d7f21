// SPDX-License-Identifier: GPL-2.0
/* fuzz_config's `aperture run` part: daemon.c's option parser (static, hence the include). */
#include "../../user/cmd/daemon.c"

int fuzz_daemon_parse(int argc, char **argv);

int fuzz_daemon_parse(int argc, char **argv)
{
	struct daemon_opts o = { 0 };

	return parse_args(&o, argc, argv);
}
