// SPDX-License-Identifier: GPL-2.0
/* libburn_main [SECONDS]: spends its time in libburn.so's libburn_spin. */
#include <stdlib.h>

void libburn_spin(double seconds);

int main(int argc, char **argv)
{
	libburn_spin(argc > 1 ? atof(argv[1]) : 5.0);
	return 0;
}
