// SPDX-License-Identifier: GPL-2.0
/*
 * cfitest FILE...: builds each file's unwind table with the unwinder's own
 * code (user/unwind/cfi.c) and prints one line per file:
 *   FILE <tab> ok fdes=N rows=N work=N sum=HEX ms=N
 *   FILE <tab> error=MESSAGE ms=N
 * sum hashes every row and function start, so that two builds of the same
 * code (with and without .eh_frame_hdr) can be compared.  For tests/unit/cfi.t.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <gelf.h>
#include "cfi.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;	/* FNV-1a over 64-bit words */
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1e3 + (t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static int one(const char *path)
{
	struct cfi_table t;
	struct timespec t0;
	uint64_t sum = 0xcbf29ce484222325ull;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	Elf *elf;

	if (fd < 0) {
		printf("%s\terror=%s ms=0\n", path, strerror(errno));
		return 1;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = elf ? cfi_table_build(elf, &t) : -EINVAL;
	if (err) {
		printf("%s\terror=%s ms=%.0f\n", path, strerror(-err), ms_since(&t0));
	} else {
		for (size_t i = 0; i < t.nrows; i++) {
			const struct unwind_row *r = &t.rows[i];

			sum = mix(sum, r->pc);
			sum = mix(sum, ((uint64_t)r->cfa_rule << 32) | (uint32_t)r->cfa_off);
			sum = mix(sum, ((uint64_t)r->rbp_rule << 32) | (uint16_t)r->rbp_off);
		}
		for (size_t i = 0; i < t.nfdes; i++)
			sum = mix(sum, t.fde_starts[i]);
		printf("%s\tok fdes=%zu rows=%zu work=%zu sum=%016" PRIx64 " ms=%.0f\n", path, t.nfdes, t.nrows,
		       t.work, sum, ms_since(&t0));
		cfi_table_free(&t);
	}
	elf_end(elf);
	close(fd);
	return err != 0;
}

int main(int argc, char **argv)
{
	int failed = 0;

	elf_version(EV_CURRENT);
	for (int i = 1; i < argc; i++)
		failed |= one(argv[i]);
	return failed;
}
