// SPDX-License-Identifier: GPL-2.0
/*
 * Loader of programs of bench/hookcost.bpf.o (bench/hookcost.sh): attaches
 * each named program to its section's hook and holds them for SECONDS or
 * until SIGINT/SIGTERM.  Bench only: never part of aperture.
 *
 * usage: hookcost OBJECT SECONDS [PROGRAM...]
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig __attribute__((unused)))
{
	stop = 1;
}

int main(int argc, char **argv)
{
	struct bpf_link *links[16];
	struct bpf_object *obj;
	struct bpf_program *prog;
	int wanted = 0, nlinks = 0, err = 0;
	double seconds;

	if (argc < 3) {
		fprintf(stderr, "usage: hookcost OBJECT SECONDS [PROGRAM...]\n");
		return 2;
	}
	seconds = atof(argv[2]);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "hookcost: open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		bool it = false;

		for (int i = 3; i < argc; i++)
			it |= strcmp(bpf_program__name(prog), argv[i]) == 0;
		bpf_program__set_autoload(prog, it);
		wanted += it;
	}
	if (wanted != argc - 3 || wanted > 16) {
		fprintf(stderr, "hookcost: %s lacks some of the programs named\n", argv[1]);
		return 2;
	}
	if (wanted && bpf_object__load(obj)) {
		fprintf(stderr, "hookcost: load: %s\n", strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__autoload(prog))
			continue;
		links[nlinks] = bpf_program__attach(prog);
		if (!links[nlinks]) {
			fprintf(stderr, "hookcost: attach %s: %s\n", bpf_program__name(prog), strerror(errno));
			err = 1;
			goto cleanup;
		}
		nlinks++;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (double t = 0; t < seconds && !stop; t += 0.1)
		usleep(100000);
cleanup:
	while (nlinks > 0)
		bpf_link__destroy(links[--nlinks]);
	bpf_object__close(obj);
	return err;
}
