// SPDX-License-Identifier: GPL-2.0
/*
 * The command line of record, run and the agent: each profiler's flags and
 * options from the profiler table, the targets and size caps they share, the
 * symbolizer's settings (into profiler_opts.symbols, for symbolizer_new()),
 * the environment checks and the stop and reload signals.  Above core/ (it
 * walks the profiler table) and below the commands and the agent that parse
 * with it: lib/ holds only what knows no profiler (numparse.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "config.h"
#include "kernel_features.h"
#include "numparse.h"
#include "profiler.h"
#include "symbolize.h"
#include "util.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

volatile int cli_stop;
volatile int cli_abort;
volatile sig_atomic_t cli_reload;
volatile sig_atomic_t cli_stats;

int cli_parse_pids(const char *arg, uint32_t *pids, int max)
{
	char *copy = strdup_logged(arg), *save = NULL, *tok;
	int n = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t pid;

		if (n == max) {
			log_error("-p: at most %d pids", max);
			goto fail;
		}
		if (!parse_u64("-p", tok, 1, INT_MAX, &pid))
			goto fail;
		if (kill((pid_t)pid, 0) && errno == ESRCH) {
			log_error("-p: no process with pid %" PRIu64, pid);
			goto fail;
		}
		pids[n++] = pid;
	}
	if (n == 0) {
		log_error("-p: no pid given");
		goto fail;
	}
	free(copy);
	return n;
fail:
	free(copy);
	return -1;
}

bool cli_cgroup_id(const char *path, uint64_t *id)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} handle = { .fh.handle_bytes = sizeof(uint64_t) };
	struct statfs fs;
	int mount_id;

	if (statfs(path, &fs)) {
		log_error("--cgroup %s: %s", path, strerror(errno));
		return false;
	}
	if (fs.f_type != CGROUP2_SUPER_MAGIC) {
		log_error("--cgroup %s: not a cgroup v2 directory (cgroup2 is usually mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified)", path);
		return false;
	}
	/* On cgroup2 the file handle is the 64-bit cgroup id. */
	if (name_to_handle_at(AT_FDCWD, path, &handle.fh, &mount_id, 0)) {
		log_error("--cgroup %s: cannot read its id: %s", path, strerror(errno));
		return false;
	}
	*id = handle.id;
	return true;
}


static bool cap_effective(const struct __user_cap_data_struct *data, int cap)
{
	return data[cap / 32].effective & (1u << (cap % 32));
}

/*
 * CAP_BPF and CAP_PERFMON load and attach (CAP_SYS_ADMIN stands in for both
 * before 5.8); root without them (a unit's CapabilityBoundingSet) fails too,
 * with the names.  Symbols need more, and only degrade without it.
 */
bool cli_check_environment(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};
	bool admin;

	if (syscall(SYS_capget, &hdr, data)) {
		log_error("cannot read this process's capabilities: %s", strerror(errno));
		return false;
	}
	admin = cap_effective(data, CAP_SYS_ADMIN);
	if (!admin && (!cap_effective(data, CAP_BPF) || !cap_effective(data, CAP_PERFMON))) {
		log_error("needs root, or CAP_BPF and CAP_PERFMON (missing:%s%s; a root uid needs them too: "
			  "tools/aperture.service)", cap_effective(data, CAP_BPF) ? "" : " CAP_BPF",
			  cap_effective(data, CAP_PERFMON) ? "" : " CAP_PERFMON");
		return false;
	}
	if (!admin && !cap_effective(data, CAP_SYSLOG))
		log_info("no CAP_SYSLOG: /proc/kallsyms reads as zeros, kernel frames stay addresses");
	if (!admin && !cap_effective(data, CAP_SYS_PTRACE))
		log_info("no CAP_SYS_PTRACE: other users' processes are not symbolized (their /proc/PID/maps)");
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		log_error("this kernel has no BTF (/sys/kernel/btf/vmlinux): CONFIG_DEBUG_INFO_BTF=y is required");
		return false;
	}
	return true;
}

bool cli_output_writable(const char *path)
{
	bool existed = access(path, F_OK) == 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);	/* the mode open_output() gives */

	if (fd < 0) {
		log_error("cannot write %s: %s", path, strerror(errno));
		return false;
	}
	close(fd);
	if (!existed)
		unlink(path);
	return true;
}

static void on_stop_signal(int sig)
{
	if (cli_stop)
		cli_abort = 1;
	cli_stop = sig;
	wakeup_post();
}

int cli_getopt_next(int argc, char **argv, const struct cli_getopt *g)
{
	int at = optind, longindex = -1, c;
	const char *given;
	size_t len;

	c = getopt_long(argc, argv, g->shorts, g->opts, &longindex);
	if (c == -1 || c == '?' || longindex < 0 || at >= argc || strncmp(argv[at], "--", 2))
		return c;
	given = argv[at] + 2;
	len = strcspn(given, "=");
	if (len != strlen(g->opts[longindex].name) || strncmp(given, g->opts[longindex].name, len)) {
		optind = at + 1;	/* the caller names argv[optind - 1] */
		return '?';
	}
	return c;
}

void cli_install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };
	int err = wakeup_init();

	if (err)
		log_warn("no wakeup for signals (%s): one may be seen up to a second late", strerror(-err));
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void on_daemon_signal(int sig)
{
	if (sig == SIGHUP)
		cli_reload = 1;
	else
		cli_stats = 1;
	wakeup_post();
}

void cli_install_daemon_signals(void)
{
	struct sigaction sa = { .sa_handler = on_daemon_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!log_verbose || (level == LIBBPF_DEBUG && log_verbose < 2))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void cli_libbpf_logging(void)
{
	libbpf_set_print(libbpf_log);
}

/* Option codes: the common ones fixed, each profiler's from its id and position. */
enum {
	CLI_OPT_CGROUP = 200,
	CLI_OPT_UNWIND,
	CLI_OPT_NO_DEMANGLE,
	CLI_OPT_UNWIND_ROWS,
	CLI_OPT_PYTHON,
	CLI_OPT_STACKS_MAX,
	CLI_OPT_COUNTS_MAX,
	CLI_OPT_SYMBOL_CACHE_MB,
	CLI_OPT_NO_CHILDREN,
	CLI_KIND_FLAG = 300,		/* + ops->id */
	CLI_KIND_OPTION = 400,		/* + ops->id * CLI_KIND_OPTIONS_MAX + index */
};
#define CLI_KIND_OPTIONS_MAX 32

static const struct option target_options[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "no-children", no_argument, NULL, CLI_OPT_NO_CHILDREN },
	{ "cgroup", required_argument, NULL, CLI_OPT_CGROUP },
	{ "user-only", no_argument, NULL, 'U' },
	{ "kernel-only", no_argument, NULL, 'K' },
	{ "unwind", required_argument, NULL, CLI_OPT_UNWIND },
	{ "no-demangle", no_argument, NULL, CLI_OPT_NO_DEMANGLE },
	{ "unwind-rows", required_argument, NULL, CLI_OPT_UNWIND_ROWS },
	{ "python", required_argument, NULL, CLI_OPT_PYTHON },
};

static const struct option cap_options[] = {
	{ "stacks-max", required_argument, NULL, CLI_OPT_STACKS_MAX },
	{ "counts-max", required_argument, NULL, CLI_OPT_COUNTS_MAX },
	{ "symbol-cache-mb", required_argument, NULL, CLI_OPT_SYMBOL_CACHE_MB },
};

static bool add_option(struct option *opts, int *n, int max, struct option entry)
{
	if (*n + 1 >= max)
		return false;
	opts[(*n)++] = entry;
	opts[*n] = (struct option){ 0 };
	return true;
}

static bool add_short(char *shorts, size_t len, int letter, bool has_arg)
{
	size_t used = strlen(shorts);

	if (!letter)
		return true;
	if (used + 3 > len)
		return false;
	shorts[used++] = (char)letter;
	if (has_arg)
		shorts[used++] = ':';
	shorts[used] = 0;
	return true;
}

bool cli_profiler_getopt(unsigned groups, struct option *opts, int *n, int max, char *shorts,
			 size_t shorts_len)
{
	bool ok = true;

	for (size_t i = 0; (groups & CLI_TARGETS) && i < sizeof(target_options) / sizeof(target_options[0]); i++) {
		ok = ok && add_option(opts, n, max, target_options[i]);
		if (target_options[i].val < 128)
			ok = ok && add_short(shorts, shorts_len, target_options[i].val, target_options[i].has_arg);
	}
	for (size_t i = 0; (groups & CLI_CAPS) && i < sizeof(cap_options) / sizeof(cap_options[0]); i++)
		ok = ok && add_option(opts, n, max, cap_options[i]);
	for (int k = 0; profilers[k]; k++) {
		const struct profiler_ops *ops = profilers[k];

		if (groups & CLI_KIND_FLAGS)
			ok = ok && add_option(opts, n, max, (struct option){ ops->name, no_argument, NULL,
									     CLI_KIND_FLAG + (int)ops->id });
		for (int i = 0; (groups & CLI_KIND_OPTIONS) && ops->cli.options && ops->cli.options[i].name; i++) {
			const struct profiler_option *po = &ops->cli.options[i];

			ok = ok && i < CLI_KIND_OPTIONS_MAX &&
			     add_option(opts, n, max, (struct option){ po->name, po->arg ? required_argument : no_argument,
								      NULL, CLI_KIND_OPTION + (int)ops->id * CLI_KIND_OPTIONS_MAX + i });
			ok = ok && add_short(shorts, shorts_len, po->short_name, po->arg != NULL);
		}
	}
	return ok;
}

#define CLI_GETOPT_MAX 96

static bool getopt_build(struct cli_getopt *g, const char *own_shorts, const struct option *own,
			 unsigned groups)
{
	int n = 0;

	g->opts = calloc_logged(CLI_GETOPT_MAX, sizeof(*g->opts));
	if (!g->opts || snprintf(g->shorts, sizeof(g->shorts), "%s", own_shorts) >= (int)sizeof(g->shorts))
		return false;
	for (int i = 0; own && own[i].name; i++)
		if (!add_option(g->opts, &n, CLI_GETOPT_MAX, own[i]))
			return false;
	return cli_profiler_getopt(groups, g->opts, &n, CLI_GETOPT_MAX, g->shorts, sizeof(g->shorts));
}

int cli_parse(int argc, char **argv, const char *own_shorts, const struct option *own, unsigned groups,
	      int (*parse)(void *ctx, int argc, char **argv, const struct cli_getopt *g), void *ctx)
{
	struct cli_getopt g;
	int err = EXIT_RUNTIME;

	if (getopt_build(&g, own_shorts, own, groups))
		err = config_parse(&g, argc, argv, parse, ctx);
	free(g.opts);
	return err;
}

/* "  -F, --freq HZ           help", continuation lines of @help indented alike. */
static void help_line(FILE *out, int letter, const char *name, const char *arg, const char *help)
{
	char left[64];
	const char *line = help;

	snprintf(left, sizeof(left), "%s%c%s--%s%s%s", letter ? "-" : " ", letter ? letter : ' ',
		 letter ? ", " : "  ", name, arg ? " " : "", arg ? arg : "");
	while (line) {
		const char *nl = strchr(line, '\n');
		int len = nl ? (int)(nl - line) : (int)strlen(line);

		fprintf(out, "  %-24s %.*s\n", line == help ? left : "", len, line);
		line = nl ? nl + 1 : NULL;
	}
}

void cli_profiler_help(FILE *out, unsigned groups)
{
	if (groups & CLI_KIND_FLAGS)
		for (int k = 0; profilers[k]; k++)
			help_line(out, 0, profilers[k]->name, NULL, profilers[k]->cli.help);
	if (groups & CLI_TARGETS) {
		help_line(out, 'p', "pid", "PID[,PID...]", "only these processes, their threads and the processes they\n"
			  "start from now on (followed at fork; COMMAND's too)");
		help_line(out, 0, "no-children", NULL, "only the processes -p (or COMMAND) names, not those they start");
		help_line(out, 0, "cgroup", "PATH", "only tasks in this cgroup v2 directory");
		help_line(out, 'U', "user-only", NULL, "user stacks only");
		help_line(out, 'K', "kernel-only", NULL, "kernel stacks only");
		help_line(out, 0, "unwind", "MODE",
			  "user stacks: auto (default: DWARF .eh_frame tables where the kernel allows,\n"
			  "else frame pointers), dwarf (an error if it cannot), fp (frame pointers only)");
		help_line(out, 0, "unwind-rows", "N", "room for N unwind-table rows of 12 bytes (default 1048576: 12 MiB\n"
			  "of kernel memory); files no live process maps are evicted first");
		help_line(out, 0, "python", "auto|off", "CPython 3.8-3.13 functions in user stacks (default auto: where\n"
			  "DWARF unwinding is on), named qualname (file.py:LINE)");
		help_line(out, 0, "no-demangle", NULL, "C++ and Rust names as in the symbol table (_ZN...)");
	}
	if (groups & CLI_CAPS) {
		help_line(out, 0, "stacks-max", "N", "room for N distinct stacks per profiler (default 16384: ~1 KiB of\n"
			  "kernel memory each); beyond, stacks are lost (counted)");
		help_line(out, 0, "counts-max", "N", "room for N aggregation keys per profiler and generation (default\n"
			  "16384); beyond, samples are lost (counted)");
		help_line(out, 0, "symbol-cache-mb", "M", "symbol cache limit in MiB (default 24): least recently used\n"
			  "files' tables and exited processes go first");
	}
	for (int k = 0; (groups & CLI_KIND_OPTIONS) && profilers[k]; k++)
		for (const struct profiler_option *po = profilers[k]->cli.options; po && po->name; po++)
			help_line(out, po->short_name, po->name, po->arg, po->help);
}

void cli_profiler_defaults(struct profiler_opts *o)
{
	for (int k = 0; profilers[k]; k++)
		if (profilers[k]->config.defaults)
			profilers[k]->config.defaults(profiler_config(o, profilers[k]));
	o->symbols.kallsyms_only = feature_switched_off(FEAT_KSYM_NAMES);
}

/* The profiler option with code @c (or short letter @c), and its profiler. */
static const struct profiler_option *kind_option(int c, const struct profiler_ops **owner)
{
	for (int k = 0; profilers[k]; k++) {
		const struct profiler_option *po = profilers[k]->cli.options;

		for (int i = 0; po && po[i].name; i++) {
			if (c == CLI_KIND_OPTION + (int)profilers[k]->id * CLI_KIND_OPTIONS_MAX + i ||
			    (po[i].short_name && c == po[i].short_name)) {
				*owner = profilers[k];
				return &po[i];
			}
		}
	}
	return NULL;
}

static bool parse_unwind(const char *arg, enum unwind_mode *mode)
{
	static const char *const names[] = { [UNWIND_AUTO] = "auto", [UNWIND_FP] = "fp", [UNWIND_DWARF] = "dwarf" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(arg, names[i]) == 0) {
			*mode = (enum unwind_mode)i;
			return true;
		}
	}
	log_error("--unwind: '%s' is not one of auto, dwarf, fp", arg);
	return false;
}

/* The size caps: 1 or -1 when @c is one, else 0. */
static int cap_option(int c, const char *arg, struct profiler_opts *o)
{
	uint64_t n;

	switch (c) {
	case CLI_OPT_STACKS_MAX:
		/* Preallocated, ~1 KiB each: 1M is a GiB of kernel memory. */
		if (!parse_u64("--stacks-max", arg, 1, 1u << 20, &n))
			return -1;
		o->stacks_entries = (uint32_t)n;
		return 1;
	case CLI_OPT_COUNTS_MAX:
		if (!parse_u64("--counts-max", arg, 1, 1u << 22, &n))
			return -1;
		o->counts_entries = (uint32_t)n;
		return 1;
	case CLI_OPT_SYMBOL_CACHE_MB:
		if (!parse_u64("--symbol-cache-mb", arg, 1, 1u << 20, &n))
			return -1;
		o->symbols.cache_limit = (size_t)n << 20;
		return 1;
	}
	return 0;
}

static int target_option(int c, const char *arg, struct profiler_opts *o, uint32_t *pids, int max_pids)
{
	int n;

	switch (c) {
	case 'p':
		n = cli_parse_pids(arg, pids + o->npids, max_pids - o->npids);
		if (n < 0)
			return -1;
		o->npids += n;
		o->pids = pids;
		return 1;
	case CLI_OPT_NO_CHILDREN:
		o->no_children = true;
		return 1;
	case CLI_OPT_CGROUP:
		return cli_cgroup_id(arg, &o->cgroup_id) ? 1 : -1;
	case 'U':
	case 'K':
		if (o->stack_mode != STACK_MODE_BOTH) {
			log_error("-U and -K exclude each other");
			return -1;
		}
		o->stack_mode = c == 'U' ? STACK_MODE_USER : STACK_MODE_KERNEL;
		return 1;
	case CLI_OPT_UNWIND:
		return parse_unwind(arg, &o->unwind) ? 1 : -1;
	case CLI_OPT_PYTHON:
		if (strcmp(arg, "auto") && strcmp(arg, "off")) {
			log_error("--python: '%s' is not one of auto, off", arg);
			return -1;
		}
		o->python_off = strcmp(arg, "off") == 0;
		return 1;
	case CLI_OPT_NO_DEMANGLE:
		o->symbols.no_demangle = true;
		return 1;
	case CLI_OPT_UNWIND_ROWS: {
		uint64_t rows;

		if (!parse_u64("--unwind-rows", arg, 1024, 1u << 24, &rows))
			return -1;
		o->unwind_rows = (uint32_t)rows;
		return 1;
	}
	}
	return 0;
}

int cli_profiler_option(unsigned groups, int c, const char *arg, struct profiler_opts *o,
			uint32_t *pids, int max_pids)
{
	const struct profiler_ops *owner;
	const struct profiler_option *po;
	int handled = groups & CLI_TARGETS ? target_option(c, arg, o, pids, max_pids) : 0;

	if (!handled && (groups & CLI_CAPS))
		handled = cap_option(c, arg, o);
	if (handled)
		return handled;
	if ((groups & CLI_KIND_FLAGS) && c >= CLI_KIND_FLAG && c < CLI_KIND_FLAG + PROFILER_MAX) {
		o->kinds |= 1u << (c - CLI_KIND_FLAG);
		return 1;
	}
	po = groups & CLI_KIND_OPTIONS ? kind_option(c, &owner) : NULL;
	if (!po)
		return 0;
	return po->parse(arg, profiler_config(o, owner)) ? 1 : -1;
}

bool cli_profiler_check(struct profiler_opts *o)
{
	bool none_named = !o->kinds;

	for (int k = 0; profilers[k]; k++) {
		const struct profiler_ops *ops = profilers[k];

		if (none_named && ops->cli.by_default)
			o->kinds |= 1u << ops->id;
		if (ops->config.check && !ops->config.check(profiler_config(o, ops)))
			return false;
	}
	return true;
}
