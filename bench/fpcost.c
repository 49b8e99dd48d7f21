// SPDX-License-Identifier: GPL-2.0
/*
 * Loader of programs of bench/fpcost.bpf.o (bench/unwind.sh, table U4):
 * fills the control and config maps as aperture record does for a
 * whole-machine on-CPU run (both stacks, no pid filter, no totals), attaches
 * each named program to a cpu-clock perf event of its own per CPU at HZ and
 * holds them for SECONDS or until SIGINT/SIGTERM.  The programs share the
 * maps (as one aperture run's programs do).  bench/unwind.sh reads their
 * cost from bpf_stats.  Bench only: never part of aperture.
 *
 * usage: fpcost OBJECT HZ SECONDS PROGRAM...
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "aperture.h"
#include "oncpu.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

int main(int argc, char **argv)
{
	struct aperture_control ctl = {
		.layout_version = APERTURE_LAYOUT_VERSION,
		.enabled = 1u << PROFILER_ONCPU,
		.stack_mode = STACK_MODE_BOTH,
	};
	struct oncpu_config cfg = { 0 };
	struct bpf_object *obj;
	struct bpf_program *prog;
	int ncpus, links = 0, zero = 0, wanted = 0;
	double seconds;

	if (argc < 5) {
		fprintf(stderr, "usage: fpcost OBJECT HZ SECONDS PROGRAM...\n");
		return 2;
	}
	cfg.freq_hz = atoi(argv[2]);
	seconds = atof(argv[3]);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "fpcost: open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		bool it = false;

		for (int i = 4; i < argc; i++)
			it |= strcmp(bpf_program__name(prog), argv[i]) == 0;
		bpf_program__set_autoload(prog, it);
		wanted += it;
	}
	if (wanted != argc - 4) {
		fprintf(stderr, "fpcost: %s lacks some of the programs named\n", argv[1]);
		return 2;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "fpcost: load: %s\n", strerror(errno));
		return 1;
	}
	if (bpf_map_update_elem(bpf_object__find_map_fd_by_name(obj, "control"), &zero, &ctl, 0) ||
	    bpf_map_update_elem(bpf_object__find_map_fd_by_name(obj, "kind_config"), &zero, &cfg, 0)) {
		fprintf(stderr, "fpcost: control maps: %s\n", strerror(errno));
		return 1;
	}
	ncpus = libbpf_num_possible_cpus();
	for (int cpu = 0; cpu < ncpus; cpu++) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.size = sizeof(attr),
			.freq = 1,
			.sample_freq = cfg.freq_hz,
		};
		bpf_object__for_each_program(prog, obj) {
			int fd;

			if (!bpf_program__autoload(prog))
				continue;
			fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
			if (fd < 0)
				break;	/* offline CPU */
			if (!bpf_program__attach_perf_event(prog, fd)) {
				fprintf(stderr, "fpcost: attach on cpu %d: %s\n", cpu, strerror(errno));
				return 1;
			}
			links++;
		}
	}
	if (!links) {
		fprintf(stderr, "fpcost: no perf event could be opened\n");
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (double t = 0; t < seconds && !stop; t += 0.1)
		usleep(100000);
	bpf_object__close(obj);
	return 0;
}
