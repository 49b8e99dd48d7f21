// SPDX-License-Identifier: GPL-2.0
/*
 * A name lookup with a deadline (see lookup.h): getaddrinfo_a in glibc's
 * resolver thread, gai_suspend until the caller's deadline.  This file owns
 * the lookups glibc still runs after their caller gave up (the orphans).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include "lookup.h"
#include "util.h"

#define CANCEL_CHECK_NS 100000000ull	/* with a cancel flag, how often a wait looks at it */

/* One getaddrinfo_a request.  It owns copies of the names: glibc's thread reads them. */
struct lookup {
	struct gaicb cb;
	struct addrinfo hints;
	struct lookup *next_orphan;	/* on the orphans list below */
	char names[];			/* host NUL port NUL */
};

/*
 * Lookups given up while glibc's resolver thread still runs them: that thread
 * writes into them when it finishes, so they cannot be freed yet.  They are
 * kept here, reachable (LeakSanitizer), and freed once done: at the next
 * lookup, or when a caller drops one.
 */
static struct lookup *orphans;
static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER;

static void lookup_release(struct lookup *l)
{
	if (l->cb.ar_result)
		freeaddrinfo(l->cb.ar_result);
	free(l);
}

static void orphans_reap(void)
{
	struct lookup **at;

	pthread_mutex_lock(&orphans_lock);
	at = &orphans;
	while (*at) {
		struct lookup *l = *at;

		if (gai_error(&l->cb) == EAI_INPROGRESS) {
			at = &l->next_orphan;
			continue;
		}
		*at = l->next_orphan;
		lookup_release(l);
	}
	pthread_mutex_unlock(&orphans_lock);
}

static struct lookup *lookup_start(const char *host, const char *port, int *err)
{
	size_t hlen = strlen(host) + 1, plen = strlen(port) + 1;
	struct lookup *l = calloc(1, sizeof(*l) + hlen + plen);
	struct gaicb *list[1];

	orphans_reap();
	if (!l) {
		*err = EAI_MEMORY;
		return NULL;
	}
	memcpy(l->names, host, hlen);
	memcpy(l->names + hlen, port, plen);
	l->hints.ai_socktype = SOCK_STREAM;
	l->cb.ar_name = l->names;
	l->cb.ar_service = l->names + hlen;
	l->cb.ar_request = &l->hints;
	list[0] = &l->cb;
	*err = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
	if (*err) {
		free(l);
		return NULL;
	}
	return l;
}

/* The lookup's result (0 or EAI_*), or EAI_INPROGRESS when not done by @deadline_ns or once *@cancel is set. */
static int lookup_wait(struct lookup *l, uint64_t deadline_ns, const volatile int *cancel)
{
	const struct gaicb *const list[1] = { &l->cb };

	for (;;) {
		uint64_t now = now_ns(CLOCK_MONOTONIC), left;
		struct timespec ts;
		int rv = gai_error(&l->cb);

		if (rv != EAI_INPROGRESS || now >= deadline_ns || (cancel && *cancel))
			return rv;
		left = deadline_ns - now;
		if (cancel && left > CANCEL_CHECK_NS)
			left = CANCEL_CHECK_NS;
		ts.tv_sec = (time_t)(left / 1000000000ull);
		ts.tv_nsec = (long)(left % 1000000000ull);
		gai_suspend(list, 1, &ts);	/* done, timed out or interrupted: look again */
	}
}

void lookup_drop(struct lookup **pending)
{
	struct lookup *l = *pending;

	*pending = NULL;
	if (l && gai_cancel(&l->cb) == EAI_NOTCANCELED) {
		pthread_mutex_lock(&orphans_lock);
		l->next_orphan = orphans;
		orphans = l;
		pthread_mutex_unlock(&orphans_lock);
	} else if (l) {
		lookup_release(l);
	}
	orphans_reap();
}

int lookup_addrs(struct lookup **pending, const char *host, const char *port, uint64_t deadline_ns,
		 const volatile int *cancel, struct addrinfo **res)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST };
	int rv, saved_errno;

	*res = NULL;
	if (!*pending && getaddrinfo(host, port, &hints, res) == 0)
		return 0;
	*res = NULL;
	if (!*pending) {
		*pending = lookup_start(host, port, &rv);
		if (!*pending)
			return rv;
	}
	rv = lookup_wait(*pending, deadline_ns, cancel);
	if (rv == EAI_INPROGRESS)
		return rv;
	saved_errno = errno;
	*res = (*pending)->cb.ar_result;
	(*pending)->cb.ar_result = NULL;
	lookup_drop(pending);
	if (!rv && !*res)
		rv = EAI_NONAME;
	if (rv && *res) {
		freeaddrinfo(*res);
		*res = NULL;
	}
	errno = saved_errno;
	return rv;
}
