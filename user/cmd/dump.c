// SPDX-License-Identifier: GPL-2.0
/*
 * aperture dump: prints a pinned daemon's totals exactly as the pinned
 * iterator (bpf/iter.bpf.c) does, one line per totals entry:
 *
 *   comm;FILE+0xADDR;...;0xUSER_LEAF;kfunc_ROOT_[k];...;kfunc_LEAF_[k][;@0xOBJECT] VALUE
 *
 * Kernel frames are named as the kernel's %ps names them, user frames as
 * FILE+0xADDR or 0xADDR as the iterator names them (user/unwind/framefile.c);
 * with --symbolize user frames are named by function.  Nothing is drained:
 * the daemon's totals stay.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "cli.h"
#include "dump.h"
#include "framefile.h"
#include "kallsyms.h"
#include "pin.h"
#include "profiler.h"
#include "symbolize.h"
#include "util.h"

struct dump_ctx {
	struct profiler *p;
	struct kallsyms ksyms;		/* empty when kallsyms is unreadable: hex frames */
	struct symbolizer *sym;		/* --symbolize */
	struct frame_files *files;	/* without --symbolize: FILE+0xADDR */
	FILE *out;
};

static void print_kernel_frame(struct dump_ctx *d, uint64_t addr)
{
	const struct sym *s = d->ksyms.tab.nsyms ? symtab_find(&d->ksyms.tab, addr) : NULL;

	if (s)
		fprintf(d->out, ";%s_[k]", symtab_name(&d->ksyms.tab, s));
	else
		fprintf(d->out, ";0x%llx_[k]", (unsigned long long)addr);
}

static void print_user_frame(struct dump_ctx *d, uint32_t tgid, uint64_t addr, bool leaf)
{
	struct sym_frame frame;

	if (!d->sym) {
		frame_files_print(d->files, addr, leaf, d->out);
		return;
	}
	symbolizer_user(d->sym, tgid, addr, &frame);
	fprintf(d->out, ";%s", frame.name);
}

/* One half of a stack, root first (stored leaf first), as iter.bpf.c prints it. */
static void print_frames(struct dump_ctx *d, uint32_t tgid, uint64_t stack_id, bool kernel)
{
	uint64_t ips[APERTURE_MAX_DEPTH];
	int depth;

	if (stack_id == APERTURE_STACK_LOST) {
		fputs(kernel ? ";[kernel-stack-lost]_[k]" : ";[user-stack-lost]", d->out);
		return;
	}
	depth = profiler_stack(d->p, stack_id, ips, APERTURE_MAX_DEPTH);
	for (int i = depth - 1; i >= 0; i--) {
		if (kernel)
			print_kernel_frame(d, ips[i]);
		else
			print_user_frame(d, tgid, ips[i], i == 0);
	}
}

static void print_line(struct dump_ctx *d, const struct sample_key *key, const uint64_t *raw)
{
	char comm[APERTURE_COMM_LEN];

	memcpy(comm, key->comm, sizeof(comm));
	comm[sizeof(comm) - 1] = 0;
	fputs(comm, d->out);
	if (d->files)
		frame_files_set_process(d->files, key->tgid);
	print_frames(d, key->tgid, key->user_stack_id, false);
	print_frames(d, key->tgid, key->kernel_stack_id, true);
	if (key->object)	/* as iter.bpf.c prints it */
		fprintf(d->out, ";@0x%llx", (unsigned long long)key->object);
	fprintf(d->out, " %llu\n", (unsigned long long)raw[d->p->ops->schema.folded_raw]);
}

/* Walks the totals map; the programs keep adding to it meanwhile, which is fine: nothing is deleted. */
static int dump_totals(struct dump_ctx *d)
{
	struct sample_key key, next;
	uint64_t *raw = calloc_logged(d->p->ops->schema.nraw, sizeof(*raw));
	void *prev = NULL;
	int err;

	if (!raw)
		return -ENOMEM;
	while (bpf_map_get_next_key(d->p->fd[MAP_TOTALS], prev, &next) == 0) {
		if (bpf_map_lookup_elem(d->p->fd[MAP_TOTALS], &next, raw) == 0)
			print_line(d, &next, raw);
		key = next;
		prev = &key;
	}
	err = ferror(d->out) ? -EIO : 0;
	free(raw);
	return err;
}

static int dump_one(struct dump_ctx *d, const char *dir, const struct profiler_ops *ops)
{
	struct profiler_opts opts = {};
	int err = profiler_open_pinned(&d->p, NULL, ops, &opts, dir);

	if (err)
		return err;
	if (!d->sym) {
		d->files = frame_files_new(d->p->fd[MAP_UNWIND_PROCS], d->p->fd[MAP_UNWIND_FILES]);
		if (!d->files)
			err = -ENOMEM;
	}
	err = err ?: dump_totals(d);
	frame_files_free(d->files);
	d->files = NULL;
	profiler_close(d->p);
	d->p = NULL;
	return err;
}

static void usage(FILE *out)
{
	fprintf(out,
"Usage: aperture dump [--pin DIR] [--symbolize] [PROFILER...]\n"
"\n"
"Prints the totals of a pinned daemon (aperture run --pin DIR) as folded stacks,\n"
"the same lines as `cat DIR/PROFILER_folded`, read from user space: it works where\n"
"the kernel refuses the pinned iterators.  Nothing is drained.\n"
"  --pin DIR      the daemon's pin directory (default %s)\n"
"  --symbolize    name user frames by function (default: FILE+0xADDR where the\n"
"                 unwinder knows the file, else 0xADDR, as the iterator prints)\n"
"  PROFILER       oncpu, offcpu, ... (default: every one pinned under DIR)\n", PIN_DEFAULT_DIR);
}

enum { OPT_PIN = 256, OPT_SYMBOLIZE, OPT_HELP };

static const struct option long_options[] = {
	{ "pin", required_argument, NULL, OPT_PIN },
	{ "symbolize", no_argument, NULL, OPT_SYMBOLIZE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* Parses argv; returns 0, -1 after --help, or EXIT_USAGE. */
static int parse_args(int argc, char **argv, const char **dir, bool *symbolize)
{
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "v", long_options, NULL)) != -1) {
		switch (c) {
		case OPT_PIN: *dir = optarg; break;
		case OPT_SYMBOLIZE: *symbolize = true; break;
		case 'v': log_verbose++; break;
		case OPT_HELP: usage(stdout); return -1;
		default:
			log_error("dump: unknown or incomplete option '%s' (see aperture dump --help)",
				  argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (!profiler_find(argv[i])) {
			log_error("dump: no profiler named '%s'", argv[i]);
			return EXIT_USAGE;
		}
	}
	return 0;
}

/* The profilers to print: those named, each of which must be pinned, or all pinned ones. */
static int pick(const char *dir, int argc, char **argv, const struct profiler_ops **ops)
{
	int n = 0;

	for (int i = optind; i < argc; i++) {
		ops[n] = profiler_find(argv[i]);
		if (!pin_present(dir, ops[n]->name)) {
			log_error("dump: no %s profiler pinned under %s", ops[n]->name, dir);
			return -1;
		}
		n++;
	}
	for (int i = 0; optind >= argc && profilers[i]; i++)
		if (pin_present(dir, profilers[i]->name))
			ops[n++] = profilers[i];
	if (!n)
		log_error("dump: nothing pinned under %s (start: aperture run --pin %s)", dir, dir);
	return n ? n : -1;
}

int dump_main(int argc, char **argv)
{
	const struct profiler_ops *ops[64];
	const char *dir = PIN_DEFAULT_DIR;
	struct dump_ctx d = { .out = stdout };
	bool symbolize = false;
	int err, n;

	if (argc - 1 > (int)(sizeof(ops) / sizeof(ops[0])))
		return EXIT_USAGE;
	err = parse_args(argc, argv, &dir, &symbolize);
	if (err)
		return err < 0 ? 0 : err;
	if (!cli_check_environment())
		return EXIT_RUNTIME;
	n = pick(dir, argc, argv, ops);
	if (n < 0)
		return EXIT_RUNTIME;
	err = kallsyms_load_printk(&d.ksyms, "/proc/kallsyms");
	if (err)
		log_warn("kernel frames stay hex: /proc/kallsyms: %s", strerror(-err));
	d.sym = symbolize ? symbolizer_new(NULL) : NULL;
	err = symbolize && !d.sym ? -ENOMEM : 0;
	for (int i = 0; i < n && !err; i++)
		err = dump_one(&d, dir, ops[i]);
	if (err)
		log_error("dump: %s", strerror(-err));
	symbolizer_free(d.sym);
	kallsyms_free(&d.ksyms);
	return err ? EXIT_RUNTIME : 0;
}
