/* SPDX-License-Identifier: GPL-2.0 */
#ifndef EVENTS_H
#define EVENTS_H

/*
 * `aperture events FILE [--json|--summary]`: decodes a raw event stream
 * (record --events FILE; bincode.h): one JSON object a line (the default), or
 * counts per kind and per pid.  A truncated or corrupt record ends it with one
 * line naming its byte offset and the records decoded before it, exit 1.
 */
int events_main(int argc, char **argv);

#endif
