/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A name lookup with a deadline: HOST:PORT resolved in glibc's resolver
 * thread (getaddrinfo_a) and waited for no longer than the caller's deadline,
 * so a DNS server that never answers holds a caller for its own deadline, not
 * the resolver's timeout.  A lookup still running when its caller gives up is
 * kept (reachable) and freed once glibc is done with it.
 */
#ifndef LOOKUP_H
#define LOOKUP_H

#include <stdint.h>
#include <netdb.h>

struct lookup;

/*
 * The stream addresses of @host:@port into *@res (freeaddrinfo them): 0, an
 * EAI_* code (EAI_SYSTEM: see errno), or EAI_INPROGRESS when no answer came
 * by @deadline_ns (CLOCK_MONOTONIC) or once *@cancel (NULL: none) was set.
 * An address literal is answered at once.  A name's lookup that is not done
 * stays in *@pending (NULL at first), and the next call with it waits on the
 * same lookup instead of starting another.
 */
int lookup_addrs(struct lookup **pending, const char *host, const char *port, uint64_t deadline_ns,
		 const volatile int *cancel, struct addrinfo **res);

/* Ends *@pending (NULL: nothing): cancelled, or kept until glibc is done with it; *@pending = NULL. */
void lookup_drop(struct lookup **pending);

#endif /* LOOKUP_H */
