/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The raw event stream: the seed's `ProfileEvent` (aperture_shared/types/
 * events.rs) in bincode 1.x's fixint little-endian layout
 * (DefaultOptions::new().with_fixint_encoding()), each record preceded by its
 * u32 LE byte length.
 *
 *   record    = u32 len, then len bytes: u32 variant tag, the variant's fields
 *   integers  = fixed width, little endian (Pid/Tid are i32)
 *   String    = u64 length + UTF-8 bytes
 *   Vec<u64>  = u64 count + items;  Vec<Option<String>> = u64 count + per item
 *               u8 0 (None) or u8 1 + String;  (u32, u32, u32) = its members
 *
 * One table of fields per variant (bincode.c) drives the writer, the reader
 * and the JSON printer, so that the three cannot disagree.  The variants'
 * structs are in user/core/profile_event.h, which the kinds fill.
 */
#ifndef BINCODE_H
#define BINCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "profile_event.h"

/* "CpuSample", "Lock", "Syscall", "GpuKernel"; "?" out of range. */
const char *pe_kind_name(uint32_t kind);
/* The common fields of every variant. */
uint64_t pe_timestamp(const struct profile_event *e);
int32_t pe_pid(const struct profile_event *e);

/*
 * Encodes @e (without the length prefix) into @buf when it fits in @cap;
 * returns the encoded length either way (pass cap 0 to measure).
 */
size_t pe_encode(const struct profile_event *e, uint8_t *buf, size_t cap);
/* Writes @e as one record (u32 length + body).  0, or -1 (errno set). */
int pe_write(FILE *f, const struct profile_event *e);

/*
 * Decodes one record body of exactly @len bytes (never reads beyond it) into
 * @e, whose strings and vectors are allocated (pe_free).  0, or -1 with the
 * reason in @err (and @e empty).
 */
int pe_decode(const uint8_t *p, size_t len, struct profile_event *e, char *err, size_t errlen);
void pe_free(struct profile_event *e);

/* Records larger than this are taken for corruption (a full CpuSample is a few KiB). */
#define PE_MAX_RECORD (16u << 20)

/* Reads records from a stream. */
struct pe_reader {
	FILE *f;
	uint64_t offset;	/* of the next record's length prefix */
	uint64_t count;		/* records decoded so far */
	uint8_t *buf;
	size_t cap;
};

void pe_reader_init(struct pe_reader *r, FILE *f);
void pe_reader_free(struct pe_reader *r);
/*
 * The next record: 1 (in @e; pe_free it), 0 at a clean end of file, -1 when
 * the file is truncated or corrupt: @err then names the byte offset of the
 * bad record and how many records were decoded before it.
 */
int pe_read(struct pe_reader *r, struct profile_event *e, char *err, size_t errlen);

/*
 * One line of JSON: serde_json's form of the enum, {"Kind":{fields...}} with
 * the seed's field names (tuples as arrays, None as null).
 */
void pe_print_json(FILE *out, const struct profile_event *e);

#endif /* BINCODE_H */
