/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Asking a HotSpot JVM (JDK 17+) to write its /tmp/perf-PID.map, as
 * `jcmd PID Compiler.perfmap` does, through the HotSpot attach socket: no
 * agent in the JVM, no restart.  The JVM is a process that may be hostile:
 * every file is opened in its root without following links, the socket must
 * be a socket owned by the JVM's user, and every wait is bounded.
 */
#ifndef JVM_ATTACH_H
#define JVM_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether @pid maps a file named libjvm.so (a HotSpot JVM). */
bool jvm_maps_libjvm(uint32_t pid);

/*
 * Sends "jcmd Compiler.perfmap" to @pid, starting its attach listener first
 * when it has none (a trigger file and SIGQUIT, only to a process that
 * catches SIGQUIT).  At most @timeout_ms for the listener and as much for
 * the reply.  0 when the JVM answered 0, else -errno with a reason in @why.
 */
int jvm_request_perfmap(uint32_t pid, unsigned int timeout_ms, char *why, size_t why_len);

#endif /* JVM_ATTACH_H */
