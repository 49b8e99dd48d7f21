// SPDX-License-Identifier: GPL-2.0
/*
 * Driver for tests/unit/events.t: the ProfileEvent encoder and decoder
 * (user/export/bincode.c) and `aperture events` (user/cmd/events.c).
 *   hex-syscall | hex-cpu   the body of a fixed record, in hex (no length prefix)
 *   write-cpu FILE          the hex-cpu CpuSample alone, through pe_write
 *   write-all FILE          one record of every kind, edge values included
 *   roundtrip FILE          decodes every record, encodes it again: same bytes?
 *   fuzz FILE N SEED        every truncation of FILE, N mutated copies and N random
 *                           buffers through the reader (run under ASan)
 *   events ARGS...          aperture events ARGS...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bincode.h"
#include "events.h"

static void hex(const struct profile_event *e)
{
	uint8_t buf[4096];
	size_t n = pe_encode(e, buf, sizeof(buf));

	for (size_t i = 0; i < n; i++)
		printf("%02x", buf[i]);
	printf("\n");
}

/* A CpuSample whose bytes tests/unit/events.t computes by hand. */
static struct profile_event example_cpu(void)
{
	static uint64_t ustack[] = { 0x400000, 0x400100 };
	static char *usyms[] = { "main", NULL };
	struct profile_event e = { .kind = PE_CPU_SAMPLE };

	e.cpu = (struct pe_cpu_sample){ .timestamp = 0x0102030405060708ULL, .pid = 1000,
		.tid = 1001, .cpu_id = 3, .user_stack = { ustack, 2 }, .comm = "test",
		.user_stack_symbols = { usyms, 2 } };
	return e;
}

/* Writes @e alone to @path as one record, through pe_write. */
static int write_one(const char *path, struct profile_event e)
{
	FILE *f = fopen(path, "w");
	int err;

	if (!f) {
		perror(path);
		return 1;
	}
	err = pe_write(f, &e);
	if (fclose(f) || err) {
		perror(path);
		return 1;
	}
	return 0;
}

/* The seed's test_profile_event_bincode_serialization event. */
static struct profile_event seed_syscall(void)
{
	struct profile_event e = { .kind = PE_SYSCALL };

	e.sys = (struct pe_syscall){ .timestamp = 0x1122334455667788ULL, .pid = 0x11111111,
				     .tid = 0x22222222, .syscall_id = 198, .duration_ns = 1000,
				     .return_value = 0, .comm = "test" };
	return e;
}

static int write_all(const char *path)
{
	static uint64_t ustack[] = { 0x400000, 0x400100 }, kstack[] = { 0xffffffff81000010ULL };
	static char *usyms[] = { "main", NULL }, *ksyms[] = { "do_syscall_64" };
	static uint64_t lstack[] = { 0x7f0000001234, 0x401000, 0x401100 };
	static char *lsyms[] = { NULL, "worker \"quoted\"\\", "\xc3\xa9t\xc3\xa9" };
	struct profile_event ev[5] = {
		{ .kind = PE_CPU_SAMPLE, .cpu = { 0x0102030405060708ULL, 1000, 1001, 3,
			{ ustack, 2 }, { kstack, 1 }, "cpuburn", { usyms, 2 }, { ksyms, 1 } } },
		{ .kind = PE_CPU_SAMPLE, .cpu = { 1, -1, 0, 0, { NULL, 0 }, { NULL, 0 }, "",
			{ NULL, 0 }, { NULL, 0 } } },
		{ .kind = PE_LOCK, .lock = { 42, 77, 78, 0xdeadbeef, 0, 123456789, { lstack, 3 },
			"lock\tburn", { lsyms, 3 } } },
		{ .kind = PE_SYSCALL, .sys = { 18446744073709551615ULL, 5, 6, 230, 20000000,
			-9223372036854775807LL - 1, "sysburn" } },
		{ .kind = PE_GPU_KERNEL, .gpu = { 7, 2147483647, "vector_add<float>", 1500,
			{ 4294967295u, 2, 1 }, { 256, 1, 1 } } },
	};
	FILE *f = fopen(path, "wb");

	if (!f)
		return 1;
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
		if (pe_write(f, &ev[i]) < 0)
			return 1;
	return fclose(f) != 0;
}

static int roundtrip(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct pe_reader r;
	struct profile_event e;
	uint8_t orig[8192], again[8192];
	char err[512];
	long pos = 0;
	int rc, bad = 0;

	if (!f)
		return 1;
	pe_reader_init(&r, f);
	while ((rc = pe_read(&r, &e, err, sizeof(err))) > 0) {
		FILE *g = fopen(path, "rb");
		size_t len = (size_t)(r.offset - pos - 4), n;

		fseek(g, pos + 4, SEEK_SET);
		n = fread(orig, 1, len, g);
		fclose(g);
		if (n != len || pe_encode(&e, again, sizeof(again)) != len || memcmp(orig, again, len)) {
			printf("record %llu (%s) differs\n", (unsigned long long)r.count, pe_kind_name(e.kind));
			bad++;
		}
		pos = (long)r.offset;
		pe_free(&e);
	}
	if (rc < 0)
		printf("error: %s\n", err);
	printf("%llu records, %d differ\n", (unsigned long long)r.count, bad);
	pe_reader_free(&r);
	fclose(f);
	return rc < 0 || bad;
}

static FILE *devnull;

/* Reads @len bytes of @buf as a file: how many records, and whether it ended in an error. */
static int read_mem(const uint8_t *buf, size_t len, uint64_t *count)
{
	FILE *f = fmemopen((void *)buf, len ? len : 1, "rb");
	struct profile_event e;
	struct pe_reader r;
	char err[512];
	int rc;

	if (!len) {	/* fmemopen refuses size 0 */
		fclose(f);
		f = fopen("/dev/null", "rb");
	}
	pe_reader_init(&r, f);
	while ((rc = pe_read(&r, &e, err, sizeof(err))) > 0) {
		pe_print_json(devnull, &e);	/* the printer walks what was decoded */
		pe_free(&e);
	}
	*count = r.count;
	pe_reader_free(&r);
	fclose(f);
	return rc;
}

static int fuzz(const char *path, int n, unsigned seed)
{
	static uint8_t file[65536], buf[65536];
	FILE *f = fopen(path, "rb");
	size_t len = f ? fread(file, 1, sizeof(file), f) : 0;
	unsigned long errors = 0, clean = 0;
	uint64_t count;

	if (!f)
		return 1;
	fclose(f);
	devnull = fopen("/dev/null", "w");
	srandom(seed);
	for (size_t cut = 0; cut < len; cut++) {	/* every truncation */
		memcpy(buf, file, cut);
		if (read_mem(buf, cut, &count) < 0)
			errors++;
		else
			clean++;
	}
	printf("truncations %zu errors %lu clean %lu\n", len, errors, clean);
	errors = 0;
	for (int i = 0; i < n; i++) {		/* a few bytes changed */
		memcpy(buf, file, len);
		for (int k = 1 + random() % 4; k > 0; k--)
			buf[random() % len] = random();
		errors += read_mem(buf, len, &count) < 0;
	}
	printf("mutations %d errors %lu\n", n, errors);
	errors = 0;
	for (int i = 0; i < n; i++) {		/* random bytes, a plausible length first */
		size_t m = 4 + random() % 512;

		for (size_t j = 0; j < m; j++)
			buf[j] = random();
		buf[0] = m - 4, buf[1] = (m - 4) >> 8, buf[2] = buf[3] = 0;
		buf[4] &= 3, buf[5] = buf[6] = buf[7] = 0;	/* a valid tag, now and then */
		errors += read_mem(buf, m, &count) < 0;
	}
	printf("random %d errors %lu\n", n, errors);
	return 0;
}

int main(int argc, char **argv)
{
	struct profile_event e;

	if (argc >= 2 && !strcmp(argv[1], "hex-syscall")) {
		e = seed_syscall();
		hex(&e);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "hex-cpu")) {
		e = example_cpu();
		hex(&e);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "write-cpu"))
		return write_one(argv[2], example_cpu());
	if (argc == 3 && !strcmp(argv[1], "write-all"))
		return write_all(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "roundtrip"))
		return roundtrip(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "fuzz"))
		return fuzz(argv[2], atoi(argv[3]), (unsigned)atoi(argv[4]));
	if (argc >= 2 && !strcmp(argv[1], "events"))
		return events_main(argc - 1, argv + 1);
	fprintf(stderr, "usage: events_test hex-syscall|hex-cpu|write-cpu F|write-all F|roundtrip F|fuzz F N SEED|events ARGS\n");
	return 2;
}
