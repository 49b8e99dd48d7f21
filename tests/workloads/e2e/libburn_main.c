// SPDX-License-Identifier: GPL-2.0
/*
 * libburn_main [SECONDS]: spends its time in libburn.so's libburn_spin; at
 * exit prints cpu_ns=N, the CPU time it used (less than SECONDS when busy).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void libburn_spin(double seconds);

int main(int argc, char **argv)
{
	struct timespec cpu;

	libburn_spin(argc > 1 ? atof(argv[1]) : 5.0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	printf("cpu_ns=%lld\n", (long long)cpu.tv_sec * 1000000000 + cpu.tv_nsec);
	return 0;
}
