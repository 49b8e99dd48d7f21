// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: an events file (`record --events FILE`), as
 * `aperture events FILE` decodes it, in both forms (--json, --summary: to
 * /dev/null), and record by record through pe_decode: a record that decodes
 * must encode back to its own bytes when its length comes out the same
 * (strings holding a NUL come out shorter: a C string ends there).
 */
#include <string.h>
#include "bincode.h"
#include "events.h"
#include "fuzz_input.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	quiet_stdout();
	return 0;
}

/* Decodes and re-encodes one record body; abort() if the writer and the reader disagree. */
static void round_trip(const uint8_t *body, size_t len)
{
	struct profile_event e;
	char err[256];
	uint8_t *again;

	if (pe_decode(body, len, &e, err, sizeof(err)))
		return;
	again = malloc(len ? len : 1);
	if (!again)
		abort();
	if (pe_encode(&e, again, len) == len && memcmp(again, body, len))
		abort();
	free(again);
	pe_free(&e);
}

static void records(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (size - off >= 4) {
		uint32_t len = data[off] | data[off + 1] << 8 | data[off + 2] << 16 | (uint32_t)data[off + 3] << 24;

		if (len > size - off - 4)
			return;
		round_trip(data + off + 4, len);
		off += 4 + (size_t)len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *json[] = { "events", (char *)input_path(data, size), NULL };
	char *summary[] = { "events", "--summary", json[1], NULL };

	events_main(2, json);
	events_main(3, summary);
	records(data, size);
	return 0;
}
