/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fuzzer's input in the forms the parsers take: a FILE (fmemopen, for
 * the seams that parse a stream) or a path (one memfd rewritten per input,
 * opened again through /proc/self/fd: for the code that opens a path itself).
 */
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* A read-only stream over @data; abort() when it cannot be made (nothing to fuzz then). */
static inline FILE *input_stream(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)data, size, "r");

	if (!f)
		abort();
	return f;
}

/* The memfd holding the current input (made on first use, kept for the process). */
static inline int input_fd(const uint8_t *data, size_t size)
{
	static int fd = -1;

	if (fd < 0)
		fd = memfd_create("fuzz-input", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	return fd;
}

/* A path that opens the current input. */
static inline const char *input_path(const uint8_t *data, size_t size)
{
	static char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", input_fd(data, size));
	return path;
}

/* What the code under test prints (--check-config, --json) goes nowhere. */
static inline void quiet_stdout(void)
{
	if (!freopen("/dev/null", "w", stdout))
		abort();
}

#endif /* FUZZ_INPUT_H */
