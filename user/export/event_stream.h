/* SPDX-License-Identifier: GPL-2.0 */
/*
 * `record --events FILE`: the raw events of the ring buffer (struct
 * aperture_raw_event) written as they arrive, as the seed's ProfileEvent
 * records (bincode.h), stacks read from the emitting profiler's stacks map
 * and symbolized with the run's symbolizer.
 */
#ifndef EVENT_STREAM_H
#define EVENT_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include "aperture.h"

struct profiler;
struct symbolizer;
struct event_stream;

/* Creates @path; NULL after one line. */
struct event_stream *event_stream_open(const char *path, struct symbolizer *sym);
/* The profiler whose stacks map a kind's event ids point into. */
void event_stream_add_profiler(struct event_stream *s, struct profiler *p);
/* A raw_event_fn (run_watch_events): writes one record. */
void event_stream_raw(const struct aperture_raw_event *ev, size_t size, void *stream);
void event_stream_flush(struct event_stream *s);
/*
 * Closes the file and prints one line: records written per kind, and the
 * raw events each profiler lost (ring buffer full) or sent that were not
 * written.  Non-zero when the file could not be written.
 */
int event_stream_close(struct event_stream *s);

#endif
