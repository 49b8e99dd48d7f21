// SPDX-License-Identifier: GPL-2.0
/*
 * Symbolizer fixture: prints the runtime address of its hot function, then
 * waits in it forever.  Built several ways (PIE, stripped, minidebuginfo,
 * debuglink) with HOT naming the function.
 */
#include <stdio.h>
#include <unistd.h>

#ifndef HOT
#define HOT apsym_hot
#endif

volatile unsigned long apsym_spins;

__attribute__((noinline)) void HOT(void)
{
	for (;;) {
		apsym_spins++;
		usleep(100000);
	}
}

int main(void)
{
	void (*volatile fn)(void) = HOT;	/* volatile: the real address, not a folded constant */

	printf("%p\n", (void *)fn);
	fflush(stdout);
	fn();
	return 0;
}
