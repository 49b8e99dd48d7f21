// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
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
#include "profiler.h"
#include "util.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

volatile int cli_stop;
volatile int cli_abort;

bool cli_parse_u64(const char *what, const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v < min || v > max) {
		log_error("%s: '%s' is not a number in [%" PRIu64 ", %" PRIu64 "]", what, arg, min, max);
		return false;
	}
	*out = v;
	return true;
}

int cli_parse_pids(const char *arg, uint32_t *pids, int max)
{
	char *copy = xstrdup(arg), *save = NULL, *tok;
	int n = 0;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t pid;

		if (n == max) {
			log_error("-p: at most %d pids", max);
			goto fail;
		}
		if (!cli_parse_u64("-p", tok, 1, INT_MAX, &pid))
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

static bool has_caps(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};

	if (syscall(SYS_capget, &hdr, data))
		return false;
	return (data[CAP_BPF / 32].effective & (1u << (CAP_BPF % 32))) &&
	       (data[CAP_PERFMON / 32].effective & (1u << (CAP_PERFMON % 32)));
}

bool cli_check_environment(void)
{
	if (geteuid() != 0 && !has_caps()) {
		log_error("needs root, or CAP_BPF and CAP_PERFMON (try sudo)");
		return false;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		log_error("this kernel has no BTF (/sys/kernel/btf/vmlinux): CONFIG_DEBUG_INFO_BTF=y is required");
		return false;
	}
	return true;
}

bool cli_output_writable(const char *path)
{
	bool existed = access(path, F_OK) == 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

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
}

void cli_install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
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

void cli_profiler_defaults(struct profiler_opts *o)
{
	o->freq_hz = 99;
	o->min_block_ns = 1000;
	o->state_mask = BLOCK_STATE_INTERRUPTIBLE | BLOCK_STATE_UNINTERRUPTIBLE;
}

static bool parse_state(const char *arg, uint32_t *mask)
{
	static const struct { const char *name; uint32_t mask; } states[] = {
		{ "blocked", BLOCK_STATE_INTERRUPTIBLE | BLOCK_STATE_UNINTERRUPTIBLE },
		{ "interruptible", BLOCK_STATE_INTERRUPTIBLE },
		{ "uninterruptible", BLOCK_STATE_UNINTERRUPTIBLE },
		{ "all", BLOCK_STATE_RUNNING | BLOCK_STATE_INTERRUPTIBLE | BLOCK_STATE_UNINTERRUPTIBLE },
	};

	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		if (strcmp(arg, states[i].name) == 0) {
			*mask = states[i].mask;
			return true;
		}
	}
	log_error("--state: '%s' is not one of blocked, interruptible, uninterruptible, all", arg);
	return false;
}

int cli_profiler_option(int c, const char *arg, struct profiler_opts *o, uint32_t *pids, int max_pids)
{
	uint64_t v;
	int n;

	switch (c) {
	case 'F':
		if (!cli_parse_u64("-F", arg, 1, 100000, &v))
			return -1;
		o->freq_hz = v;
		return 1;
	case 'p':
		n = cli_parse_pids(arg, pids + o->npids, max_pids - o->npids);
		if (n < 0)
			return -1;
		o->npids += n;
		o->pids = pids;
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
	case CLI_OPT_IDLE:
		o->include_idle = true;
		return 1;
	case CLI_OPT_MIN_BLOCK:
		if (!cli_parse_u64("--min-block-us", arg, 0, UINT64_MAX / 1000, &v))
			return -1;
		o->min_block_ns = v * 1000;
		return 1;
	case CLI_OPT_MAX_BLOCK:
		if (!cli_parse_u64("--max-block-us", arg, 1, UINT64_MAX / 1000, &v))
			return -1;
		o->max_block_ns = v * 1000;
		return 1;
	case CLI_OPT_STATE:
		return parse_state(arg, &o->state_mask) ? 1 : -1;
	}
	return 0;
}

bool cli_profiler_check(const struct profiler_opts *o)
{
	if (o->max_block_ns && o->min_block_ns > o->max_block_ns) {
		log_error("--min-block-us is above --max-block-us: nothing could be counted");
		return false;
	}
	return true;
}
