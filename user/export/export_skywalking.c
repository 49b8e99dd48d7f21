// SPDX-License-Identifier: GPL-2.0
/*
 * --format skywalking: the EBPFProfilingData messages the agent would send
 * the SkyWalking OAP for this profile, each prefixed by its length as a
 * varint (protobuf's delimited stream format, as Java's writeDelimitedTo and
 * Python's _VarintEncoder write it).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "exporter.h"
#include "skywalking.h"
#include "util.h"

static int put_varint(FILE *f, uint64_t v)
{
	uint8_t buf[10];
	size_t n = 0;

	do {
		buf[n] = v & 0x7f;
		v >>= 7;
		if (v)
			buf[n] |= 0x80;
		n++;
	} while (v);
	return fwrite(buf, 1, n, f) == n ? 0 : -EIO;
}

static int write_delimited(const struct sw_msgs *msgs, FILE *f)
{
	for (size_t i = 0; i < msgs->n; i++) {
		if (put_varint(f, msgs->v[i].len) ||
		    fwrite(msgs->v[i].data, 1, msgs->v[i].len, f) != msgs->v[i].len)
			return -EIO;
	}
	return 0;
}

static int skywalking_write(const struct profile *p, const char *path, const struct export_opts *opts)
{
	struct sw_task_meta meta = {
		.task_id = "aperture-record",
		.process_id = "",
		.start_ms = p->time_ns / 1000000,
		.current_ms = (p->time_ns + p->duration_ns) / 1000000,
	};
	struct sw_msgs msgs = { 0 };
	FILE *f = NULL;
	int err;

	err = sw_profile_messages(p, NULL, 0, &meta, &msgs, NULL);
	if (err < 0) {
		log_error("skywalking: cannot encode profile: %s", strerror(-err));
		goto out;
	}
	f = export_open(path, &err);
	if (!f)
		goto out;
	err = write_delimited(&msgs, f);
	if (err) {
		fclose(f);
		log_error("cannot write %s: %s", path, strerror(-err));
		goto out;
	}
	err = export_close(f, path);
out:
	sw_msgs_free(&msgs);
	return err < 0 ? err : 0;
}

static const char *const skywalking_suffixes[] = { ".swdata", NULL };

const struct exporter exporter_skywalking = {
	.name = "skywalking",
	.suffixes = skywalking_suffixes,
	.write = skywalking_write,
};
