// SPDX-License-Identifier: GPL-2.0
/*
 * hostile: a process that names files for root to open (tests/stacks/85-hostile.t).
 *
 *   hostile anon DIR SECONDS
 *	DIR holds two copies of the stand-in CUDA driver, libcuda.so.1 and
 *	libevil.so.  dlopens both, deletes libcuda.so.1 and plants libevil.so
 *	under the name its maps line now shows ("DIR/libcuda.so.1 (deleted)"),
 *	maps a memfd named "libcuda.so.1", names an anonymous mapping
 *	"[anon:DIR/libcuda.so.1]" (prctl PR_SET_VMA_ANON_NAME, where the kernel
 *	has it; libevil.so planted as "DIR/libcuda.so.1]", what a parser that
 *	takes the first '/' reads), then calls libevil.so's cuLaunchKernel every
 *	millisecond for SECONDS.  Prints "pid=PID anon_name=yes|no" at the start
 *	and "launches=N" at the end.  Where DIR also holds libc.so.6 (any
 *	library) and libcplant.so (a copy of the real C library), the same trick
 *	names libcplant.so "DIR/libc.so.6 (deleted)" (for --lock-hold).
 *   hostile jit SECONDS [ROOT]
 *	copies a loop into anonymous executable memory (as a JIT does), prints
 *	"pid=PID jit=ADDR", then (ROOT given: chroot ROOT, then become nobody)
 *	runs it for SECONDS.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef int (*launch_fn)(void *, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
			 unsigned int, unsigned int, void *, void **, void **);

/*
 * Maps names that say "libcuda" for files that are not what is mapped, and
 * calls into a library whose own name matches no probe: a probe that fires
 * went where the names pointed.
 */
static int anon(const char *dir, double secs)
{
	char driver[4096], evil[4096], deleted[4096], anon_name[4096], bracketed[4096];
	char libc[4096], libc_plant[4096], libc_deleted[4096];
	long page = sysconf(_SC_PAGESIZE), launches = 0;
	void *handle, *anon_map, *memfd_map;
	int memfd = memfd_create("libcuda.so.1", MFD_CLOEXEC);
	double end = now_s() + secs;
	launch_fn launch;

	snprintf(driver, sizeof(driver), "%s/libcuda.so.1", dir);
	snprintf(evil, sizeof(evil), "%s/libevil.so", dir);
	snprintf(deleted, sizeof(deleted), "%s/libcuda.so.1 (deleted)", dir);
	snprintf(anon_name, sizeof(anon_name), "%s/libcuda.so.1", dir);
	snprintf(bracketed, sizeof(bracketed), "%s/libcuda.so.1]", dir);
	snprintf(libc, sizeof(libc), "%s/libc.so.6", dir);
	snprintf(libc_plant, sizeof(libc_plant), "%s/libcplant.so", dir);
	snprintf(libc_deleted, sizeof(libc_deleted), "%s/libc.so.6 (deleted)", dir);
	/* 1. a driver mapped, then deleted: its maps line says "PATH (deleted)", and that name is planted */
	if (!dlopen(driver, RTLD_NOW) || !(handle = dlopen(evil, RTLD_NOW)) ||
	    !(launch = (launch_fn)dlsym(handle, "cuLaunchKernel"))) {
		fprintf(stderr, "hostile: %s\n", dlerror());
		return 1;
	}
	if (unlink(driver) || link(evil, deleted)) {
		perror("hostile: plant");
		return 1;
	}
	/* 1b. the same for a C library, where DIR has one: libc.so.6 (mapped, deleted), libcplant.so (planted) */
	if (!access(libc, F_OK)) {
		if (!dlopen(libc, RTLD_NOW) || unlink(libc) || link(libc_plant, libc_deleted)) {
			fprintf(stderr, "hostile: libc: %s\n", dlerror() ?: strerror(errno));
			return 1;
		}
	}
	/* 2. a memfd named like the driver */
	if (memfd < 0 || ftruncate(memfd, page) ||
	    (memfd_map = mmap(NULL, page, PROT_READ, MAP_SHARED, memfd, 0)) == MAP_FAILED)
		return 1;
	/* 3. an anonymous mapping named "[anon:DIR/libcuda.so.1]", where the kernel lets it be named */
	anon_map = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon_map == MAP_FAILED || link(evil, bracketed))
		return 1;
	printf("pid=%d anon_name=%s\n", (int)getpid(),
	       prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)anon_map, page, (unsigned long)anon_name) ?
	       "no" : "yes");
	fflush(stdout);
	while (now_s() < end) {
		launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
		launches++;
		usleep(1000);
	}
	printf("launches=%ld\n", launches);
	(void)memfd_map;
	return 0;
}

/* dec %rdi; jnz .-3; ret: a loop of @rdi rounds with no frame of its own */
static const unsigned char loop_code[] = { 0x48, 0xff, 0xcf, 0x75, 0xfb, 0xc3 };

static int jit(double secs, const char *root)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *code = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void (*loop)(long);
	double end;

	if (code == MAP_FAILED)
		return 1;
	memcpy(code, loop_code, sizeof(loop_code));
	if (mprotect(code, page, PROT_READ | PROT_EXEC))
		return 1;
	loop = (void (*)(long))(uintptr_t)code;
	printf("pid=%d jit=%lx\n", (int)getpid(), (unsigned long)(uintptr_t)code);
	fflush(stdout);
	if (root && (chroot(root) || chdir("/") || setgid(65534) || setuid(65534))) {
		perror("hostile: chroot");
		return 1;
	}
	for (end = now_s() + secs; now_s() < end;)
		loop(1000000);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "anon") == 0)
		return anon(argv[2], atof(argv[3]));
	if (argc >= 3 && strcmp(argv[1], "jit") == 0)
		return jit(atof(argv[2]), argc > 3 ? argv[3] : NULL);
	fprintf(stderr, "usage: hostile anon DIR SECONDS | hostile jit SECONDS [ROOT]\n");
	return 2;
}
