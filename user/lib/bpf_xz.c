// SPDX-License-Identifier: GPL-2.0
/* Decompresses the embedded BPF objects (xz streams) once each, on first use (bpf_xz.h). */
#include "bpf_xz.h"

#include <errno.h>
#include <lzma.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* One per embedded object (7 today); a skeleton included by two files may count twice. */
#define BPF_XZ_MAX 32

static struct {
	const char *xz;
	void *elf;
} cache[BPF_XZ_MAX];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static void *inflate(const char *xz, size_t xzlen, size_t rawlen)
{
	uint64_t memlimit = UINT64_MAX;
	size_t in_pos = 0, out_pos = 0;
	uint8_t *elf = malloc(rawlen);

	if (!elf)
		return NULL;
	if (lzma_stream_buffer_decode(&memlimit, 0, NULL, (const uint8_t *)xz, &in_pos, xzlen,
				      elf, &out_pos, rawlen) != LZMA_OK || out_pos != rawlen) {
		free(elf);
		errno = EINVAL;
		return NULL;
	}
	return elf;
}

const void *bpf_xz_elf(const char *xz, size_t xzlen, size_t rawlen, size_t *sz)
{
	void *elf = NULL;
	int i;

	*sz = 0;
	pthread_mutex_lock(&cache_lock);
	for (i = 0; i < BPF_XZ_MAX && cache[i].xz; i++)
		if (cache[i].xz == xz) {
			elf = cache[i].elf;
			break;
		}
	if (!elf && i < BPF_XZ_MAX && (elf = inflate(xz, xzlen, rawlen)))
		cache[i] = (typeof(cache[i])){ .xz = xz, .elf = elf };
	else if (!elf && i == BPF_XZ_MAX)
		errno = ENOSPC;
	pthread_mutex_unlock(&cache_lock);
	if (elf)
		*sz = rawlen;
	return elf;
}
