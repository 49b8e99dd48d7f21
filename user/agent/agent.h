/* SPDX-License-Identifier: GPL-2.0 */
/*
 * `aperture run --oap HOST:PORT ...`: a daemon that registers the selected
 * host processes with an Apache SkyWalking OAP, runs the ON_CPU / OFF_CPU
 * profiling tasks it hands out and streams the data back.  argv[0] is "run".
 */
#ifndef AGENT_H
#define AGENT_H

int agent_main(int argc, char **argv);

#endif /* AGENT_H */
