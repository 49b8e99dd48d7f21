// SPDX-License-Identifier: GPL-2.0
// C++ names for the demangling test: demo::Worker::spin(int) spins for SECONDS.
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace demo {
struct Worker {
	__attribute__((noinline)) long spin(int n, double seconds);
};

long Worker::spin(int n, double seconds)
{
	timespec start, now;
	long x = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (int i = 0; i < n; i++)
			x = x * 31 + i;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
	return x;
}
}

int main(int argc, char **argv)
{
	demo::Worker w;

	std::printf("%ld\n", w.spin(1000000, argc > 1 ? std::atof(argv[1]) : 2));
	return 0;
}
