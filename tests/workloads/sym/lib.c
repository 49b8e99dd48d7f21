// SPDX-License-Identifier: GPL-2.0
/* libapsym.so: a shared library whose function the fixture waits in. */
#include <unistd.h>

volatile unsigned long apsym_lib_spins;

__attribute__((noinline)) void apsym_lib_spin(void)
{
	for (;;) {
		apsym_lib_spins++;
		usleep(100000);
	}
}
