// SPDX-License-Identifier: GPL-2.0
/* Prints where libapsym.so's apsym_lib_spin lives, then waits in it. */
#include <stdio.h>

void apsym_lib_spin(void);

int main(void)
{
	void (*volatile fn)(void) = apsym_lib_spin;	/* PIE: the library's address, not a PLT stub */

	printf("%p\n", (void *)fn);
	fflush(stdout);
	fn();
	return 0;
}
