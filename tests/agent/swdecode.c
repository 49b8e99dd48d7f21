// SPDX-License-Identifier: GPL-2.0
/*
 * Decodes a file of length-delimited (varint prefix) EBPFProfilingData
 * messages with protobuf-c, an implementation independent of the nanopb
 * code that wrote them.  One line per message:
 *   task=ID process=ID start=MS current=MS onCPU count=N [KERNEL id=I a;b] [USER id=I x;y]
 *   ... offCPU count=N duration=NS ...
 * Exit 1 on any decoding error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "ebpf/profiling/Profile.pb-c.h"

static void print_stacks(size_t n, Skywalking__V3__EBPFProfilingStackMetadata **stacks)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		Skywalking__V3__EBPFProfilingStackMetadata *s = stacks[i];

		printf(" [%s id=%d ", s->stacktype == SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_USER_SPACE ?
		       "USER" : "KERNEL", s->stackid);
		for (j = 0; j < s->n_stacksymbols; j++)
			printf("%s%s", j ? ";" : "", s->stacksymbols[j]);
		printf("]");
	}
}

static int read_varint(FILE *f, uint64_t *out)
{
	int c, shift = 0;

	*out = 0;
	while ((c = fgetc(f)) != EOF) {
		*out |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 1;
		shift += 7;
		if (shift > 63)
			return -1;
	}
	return shift ? -1 : 0;
}

int main(int argc, char **argv)
{
	FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
	uint64_t len;
	int rv, n = 0;

	if (!f) {
		fprintf(stderr, "usage: swdecode FILE\n");
		return 2;
	}
	while ((rv = read_varint(f, &len)) == 1) {
		uint8_t *buf = malloc(len ? len : 1);
		Skywalking__V3__EBPFProfilingData *d;

		if (!buf || fread(buf, 1, len, f) != len) {
			fprintf(stderr, "swdecode: truncated message %d\n", n);
			free(buf);
			fclose(f);
			return 1;
		}
		d = skywalking__v3__ebpfprofiling_data__unpack(NULL, len, buf);
		free(buf);
		if (!d) {
			fprintf(stderr, "swdecode: message %d does not decode\n", n);
			fclose(f);
			return 1;
		}
		if (d->task)
			printf("task=%s process=%s start=%lld current=%lld", d->task->taskid,
			       d->task->processid, (long long)d->task->profilingstarttime,
			       (long long)d->task->currenttime);
		else
			printf("task=-");
		if (d->profiling_case == SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_ON_CPU) {
			printf(" onCPU count=%d", d->oncpu->dumpcount);
			print_stacks(d->oncpu->n_stacks, d->oncpu->stacks);
		} else if (d->profiling_case == SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_OFF_CPU) {
			printf(" offCPU count=%d duration=%lld", d->offcpu->switchcount,
			       (long long)d->offcpu->duration);
			print_stacks(d->offcpu->n_stacks, d->offcpu->stacks);
		} else {
			printf(" none");
		}
		printf("\n");
		skywalking__v3__ebpfprofiling_data__free_unpacked(d, NULL);
		n++;
	}
	fclose(f);
	if (rv < 0) {
		fprintf(stderr, "swdecode: bad length prefix after message %d\n", n);
		return 1;
	}
	return 0;
}
