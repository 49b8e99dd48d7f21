// SPDX-License-Identifier: GPL-2.0
/*
 * A pretend JIT: anonymous executable memory named in /tmp/perf-PID.map, as
 * JITs that support perf do.  Prints the code address, then sleeps.
 */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void)
{
	char path[64];
	FILE *f;
	void *code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (code == MAP_FAILED)
		return 1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx 40 apsym_jit_other\n", (unsigned long)code + 0x100);
	fprintf(f, "%lx 80 apsym_jit_fn\n", (unsigned long)code);
	fclose(f);
	printf("%p\n", code);
	fflush(stdout);
	for (;;)
		pause();
}
