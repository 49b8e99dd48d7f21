/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DAEMON_H
#define DAEMON_H

/*
 * `aperture run` without --oap: a local daemon whose interface is its pinned
 * maps (bpftool, cat, tools/aperture-ctl).  Also `aperture run --unpin`.
 */
int daemon_main(int argc, char **argv);

#endif
