// SPDX-License-Identifier: GPL-2.0
/* record --events FILE: raw ring-buffer events -> ProfileEvent records (event_stream.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bincode.h"
#include "event_stream.h"
#include "profiler.h"
#include "util.h"

struct event_stream {
	FILE *f;
	char *path;
	struct symbolizer *sym;
	struct profiler *profs[PROFILER_MAX];
	uint64_t written[PE_KINDS];
	uint64_t dropped;	/* unknown type, or no profiler to read its stacks */
	int write_errno;	/* the first write error */
	struct raw_frames frames;	/* scratch for one record: two stacks and their names */
};

struct event_stream *event_stream_open(const char *path, struct symbolizer *sym)
{
	struct event_stream *s = calloc_logged(1, sizeof(*s));

	if (!s)
		return NULL;
	s->path = strdup_logged(path);
	s->f = s->path ? fopen_output(path) : NULL;
	if (!s->f) {
		if (s->path)
			log_error("--events %s: %s", path, strerror(errno));
		free(s->path);
		free(s);
		return NULL;
	}
	s->sym = sym;
	return s;
}

void event_stream_add_profiler(struct event_stream *s, struct profiler *p)
{
	if (s && p->ops->id < PROFILER_MAX)
		s->profs[p->ops->id] = p;
}

/* The profiler that sends raw events of @type (ops->raw_type), with a hook to write them; NULL: none. */
static struct profiler *sender(const struct event_stream *s, uint32_t type)
{
	for (int i = 0; i < PROFILER_MAX; i++)
		if (s->profs[i] && s->profs[i]->ops->raw_type == type && s->profs[i]->ops->raw_event)
			return s->profs[i];
	return NULL;
}

void event_stream_raw(const struct aperture_raw_event *ev, size_t size, void *stream)
{
	struct event_stream *s = stream;
	struct raw_frames *f = &s->frames;
	struct profile_event e = { 0 };
	struct profiler *p = sender(s, ev->hdr.type);
	int err;

	f->used = 0;
	f->sym = s->sym;
	f->owned = NULL;
	memcpy(f->comm, ev->comm, APERTURE_COMM_LEN);
	f->comm[APERTURE_COMM_LEN] = 0;
	/* timestamp, pid, tid: the same place in every variant (bincode.c asserts it). */
	e.cpu.timestamp = ev->timestamp;
	e.cpu.pid = (int32_t)ev->hdr.tgid;
	e.cpu.tid = (int32_t)ev->tid;
	if (!p || !p->ops->raw_event(p, ev, size, f, &e) || e.kind >= PE_KINDS) {
		free(f->owned);
		s->dropped++;
		return;
	}
	err = pe_write(s->f, &e);
	free(f->owned);
	if (err < 0) {
		if (!s->write_errno)
			s->write_errno = errno ? errno : EIO;
		return;
	}
	s->written[e.kind]++;
}

void event_stream_flush(struct event_stream *s)
{
	if (s && fflush(s->f) && !s->write_errno)
		s->write_errno = errno;
}

int event_stream_close(struct event_stream *s)
{
	char kinds[256] = "", lost[256] = "";
	uint64_t total = 0, nlost = 0, sent = 0, stats[STAT_MAX];
	size_t k = 0, l = 0;
	int err;

	if (!s)
		return 0;
	for (int i = 0; i < PE_KINDS; i++) {
		total += s->written[i];
		if (s->written[i] && k < sizeof(kinds))
			k += snprintf(kinds + k, sizeof(kinds) - k, "%s%s %" PRIu64, k ? ", " : "",
				      pe_kind_name(i), s->written[i]);
	}
	for (int i = 0; i < PROFILER_MAX; i++) {
		if (!s->profs[i] || profiler_stats(s->profs[i], stats))
			continue;
		sent += stats[STAT_RAW_SENT];
		nlost += stats[STAT_RAW_LOST];
		if (stats[STAT_RAW_LOST] && l < sizeof(lost))
			l += snprintf(lost + l, sizeof(lost) - l, "%s%s %" PRIu64, l ? ", " : "",
				      s->profs[i]->ops->name, stats[STAT_RAW_LOST]);
	}
	err = fclose(s->f) ? errno : s->write_errno;
	if (err)
		log_error("--events %s: %s", s->path, strerror(err));
	/* sent but not written: arrived after the last read, or a write failed */
	fprintf(stderr, "aperture: events: wrote %" PRIu64 " records to %s%s%s%s, %" PRIu64
		" lost (ring buffer full%s%s), %" PRIu64 " unread\n", total, s->path, k ? " (" : "",
		kinds, k ? ")" : "", nlost, l ? ": " : "", lost,
		sent > total + s->dropped ? sent - total - s->dropped : 0);
	if (s->dropped)
		log_warn("events: %" PRIu64 " raw events of an unknown kind were not written", s->dropped);
	free(s->path);
	free(s);
	return err ? -1 : 0;
}
