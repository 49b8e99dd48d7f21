// SPDX-License-Identifier: GPL-2.0
/*
 * aperture doctor: the first thing to run on a new box.  The system facts
 * (kernel, BTF, lockdown, capabilities, sysctls, file systems), every probed
 * kernel feature with its errno, and what that means for aperture.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include "cli.h"
#include "doctor.h"
#include "kernel_features.h"
#include "profiler.h"
#include "util.h"

#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39

/* What aperture can do with a set of features, and what happens without them. */
struct ability {
	const char *key;	/* --json */
	const char *what;
	uint64_t needs;
	const char *otherwise;
};

static const struct ability extra_abilities[] = {
	/* run's default kind is on-CPU, whose perf events must have links to be pinned */
	{ "pinning", "pinned daemon (run --pin)", FEAT_BIT(FEAT_BPFFS) | FEAT_BIT(FEAT_PERF_LINK),
	  "run --pin and run --oap --pin cannot pin" },
	{ "pinned_iterators", "pinned iterators DIR/NAME_folded", FEAT_BIT(FEAT_ITER_MAP_ELEM),
	  "use `aperture dump`" },
	{ "processes_iterator", "pinned iterator DIR/processes", FEAT_BIT(FEAT_ITER_TASK),
	  "no DIR/processes" },
	{ "batch_snapshots", "batched snapshots", FEAT_BIT(FEAT_BATCH_OPS),
	  "snapshots walk the maps key by key (slower, same result)" },
	{ "uprobes", "uprobes (user-space locks, GPU launches)", FEAT_BIT(FEAT_UPROBE),
	  "those profilers cannot attach" },
	{ "user_lock_hold", "user mutex hold times (--locks --lock-hold)", FEAT_BIT(FEAT_UPROBE),
	  "--lock-hold measures nothing" },
	{ "kernel_lock_hold", "kernel lock hold times (--locks --lock-hold)", FEAT_BIT(FEAT_FENTRY),
	  "user mutex holds only" },
	{ "whole_user_stacks", "whole user stacks without frame pointers (--unwind dwarf)",
	  FEAT_BIT(FEAT_DWARF_UNWIND), "frame-pointer walks only (--unwind fp)" },
	/* The CPython walk runs inside the DWARF walk's bpf_loop: it needs what that needs. */
	{ "python_frames", "CPython 3.8-3.13 functions in user stacks (--python auto)",
	  FEAT_BIT(FEAT_DWARF_UNWIND), "Python programs show the interpreter's native frames only" },
	{ "rq_lock_names", "runqueue lock names (--locks)", FEAT_BIT(FEAT_RQ_LOCKS),
	  "runqueue locks shown by address and caller" },
	{ "follow_children", "children of -p PID and of COMMAND profiled", FEAT_BIT(FEAT_TP_SCHED_FORK),
	  "only the processes named (children not followed)" },
};

struct system_facts {
	char release[128];
	char lockdown[64];
	uint64_t cap_eff;
	bool cap_known;
	char paranoid[16];
	char kptr_restrict[16];
	bool kallsyms_addrs;	/* /proc/kallsyms shows real addresses to us */
};

static void read_first_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* "none [integrity] confidentiality" -> "integrity" */
static void bracketed(char *s)
{
	char *open = strchr(s, '['), *close = open ? strchr(open, ']') : NULL;

	if (open && close) {
		*close = 0;
		memmove(s, open + 1, strlen(open + 1) + 1);
	}
}

/*
 * The lockdown mode.  securityfs is often not mounted: mount it in a child's
 * private mount namespace, so that the machine's mounts stay as they were.
 */
static void read_lockdown(char *buf, size_t len)
{
	const char *path = "/sys/kernel/security/lockdown";
	int pipefd[2];
	pid_t child;
	ssize_t n;

	if (access(path, R_OK) == 0) {
		read_first_line(path, buf, len);
		bracketed(buf);
		return;
	}
	snprintf(buf, len, "unknown (securityfs not mounted)");
	if (pipe(pipefd))
		return;
	child = fork();
	if (child == 0) {
		char line[64];

		close(pipefd[0]);
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("securityfs", "/sys/kernel/security", "securityfs", 0, NULL))
			_exit(1);
		read_first_line(path, line, sizeof(line));
		if (strcmp(line, "unknown") == 0)
			snprintf(line, sizeof(line), "none (no lockdown LSM)");
		bracketed(line);
		_exit(write(pipefd[1], line, strlen(line)) < 0);
	}
	close(pipefd[1]);
	if (child > 0) {
		n = read(pipefd[0], buf, len - 1);
		if (n > 0)
			buf[n] = 0;
		waitpid(child, NULL, 0);
	}
	close(pipefd[0]);
}

static void read_caps(struct system_facts *sf)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %lx", &sf->cap_eff) == 1)
			sf->cap_known = true;
	fclose(f);
}

static bool kallsyms_has_addresses(void)
{
	char line[256];
	bool real = false;
	FILE *f = fopen("/proc/kallsyms", "re");

	for (int i = 0; f && i < 64 && !real && fgets(line, sizeof(line), f); i++)
		real = strtoull(line, NULL, 16) != 0;
	if (f)
		fclose(f);
	return real;
}

static void gather(struct system_facts *sf)
{
	struct utsname u;

	memset(sf, 0, sizeof(*sf));
	snprintf(sf->release, sizeof(sf->release), "%s", uname(&u) == 0 ? u.release : "unknown");
	read_lockdown(sf->lockdown, sizeof(sf->lockdown));
	read_caps(sf);
	read_first_line("/proc/sys/kernel/perf_event_paranoid", sf->paranoid, sizeof(sf->paranoid));
	read_first_line("/proc/sys/kernel/kptr_restrict", sf->kptr_restrict, sizeof(sf->kptr_restrict));
	sf->kallsyms_addrs = kallsyms_has_addresses();
	features_probe(~0ull);
}

static bool has_cap(const struct system_facts *sf, int bit)
{
	return sf->cap_known && (sf->cap_eff >> bit) & 1;
}

static bool privileged(const struct system_facts *sf)
{
	return has_cap(sf, CAP_SYS_ADMIN_BIT) || (has_cap(sf, CAP_BPF_BIT) && has_cap(sf, CAP_PERFMON_BIT));
}

/* The first missing feature of @mask, or FEAT_MAX when none is. */
static enum feature first_missing(uint64_t mask)
{
	for (int f = 0; f < FEAT_MAX; f++)
		if ((mask & FEAT_BIT(f)) && !feature_has(f))
			return f;
	return FEAT_MAX;
}

/* "yes", or "no (iter_map_elem: EPERM at load)" into @buf. */
static const char *ability_state(uint64_t needs, char *buf, size_t len)
{
	enum feature missing = first_missing(needs);
	char why[128];

	if (missing == FEAT_MAX)
		snprintf(buf, len, "yes");
	else
		snprintf(buf, len, "no (%s)", feature_missing(missing, why, sizeof(why)));
	return buf;
}

static void print_text(const struct system_facts *sf)
{
	char state[160], why[96];

	printf("aperture %s doctor\n\nSystem\n", APERTURE_VERSION);
	printf("  %-22s %s\n", "kernel", sf->release);
	printf("  %-22s %s\n", "lockdown", sf->lockdown);
	printf("  %-22s %s%s%s%s\n", "capabilities", privileged(sf) ? "enough:" : "NOT ENOUGH (need CAP_BPF+CAP_PERFMON or root):",
	       has_cap(sf, CAP_SYS_ADMIN_BIT) ? " CAP_SYS_ADMIN" : "", has_cap(sf, CAP_BPF_BIT) ? " CAP_BPF" : "",
	       has_cap(sf, CAP_PERFMON_BIT) ? " CAP_PERFMON" : "");
	printf("  %-22s %s\n", "perf_event_paranoid", sf->paranoid);
	printf("  %-22s %s (kernel addresses %s)\n", "kptr_restrict", sf->kptr_restrict,
	       sf->kallsyms_addrs ? "visible" : feature_has(FEAT_KSYM_NAMES) ? "hidden: kernel frames named by the kernel"
								       : "hidden: kernel frames stay hex");
	printf("\nKernel features (probed)\n");
	for (int f = 0; f < FEAT_MAX; f++) {
		const struct feature_result *r = feature_get(f);

		printf("  %-22s %-4s %s%s%s%s%s\n", feature_name(f), r->ok ? "yes" : "no",
		       r->ok ? "" : feature_why(f, why, sizeof(why)), r->ok ? "" : "; ", feature_what(f),
		       r->note ? ": " : "", r->note ? r->note : "");
	}
	printf("\nWhat aperture can do here\n");
	for (int i = 0; profilers[i]; i++) {
		uint64_t needs;
		char what[64];
		bool compat;

		snprintf(what, sizeof(what), "%s profiling (--%s)", profilers[i]->cli.title, profilers[i]->name);
		needs = profiler_needs(profilers[i], &compat);
		printf("  %-40s %s%s\n", what, ability_state(needs, state, sizeof(state)),
		       compat && first_missing(needs) == FEAT_MAX ? " (the programs built for older kernels)" : "");
	}
	for (size_t i = 0; i < sizeof(extra_abilities) / sizeof(extra_abilities[0]); i++) {
		const struct ability *a = &extra_abilities[i];

		ability_state(a->needs, state, sizeof(state));
		printf("  %-40s %s%s%s\n", a->what, state, state[0] == 'n' ? " -> " : "",
		       state[0] == 'n' ? a->otherwise : "");
	}
	/* Not a kernel matter: what the agent measures (agent_continuous.c). */
	printf("  %-40s %s\n", "continuous profiling CPU/thread/load", "yes (run --oap --continuous, from /proc)");
	printf("  %-40s %s\n", "continuous profiling HTTP causes",
	       "no (aperture collects no HTTP request metrics) -> HTTP_ERROR_RATE and "
	       "HTTP_AVG_RESPONSE_TIME policy items are ignored, logged");
}

static void json_ability(const char *key, uint64_t needs, bool last)
{
	enum feature missing = first_missing(needs);

	printf("    \"%s\": {\"ok\": %s", key, missing == FEAT_MAX ? "true" : "false");
	if (missing != FEAT_MAX)
		printf(", \"missing\": \"%s\"", feature_name(missing));
	printf("}%s\n", last ? "" : ",");
}

/* One feature a line, so that shell tests can grep: "iter_map_elem": {"ok": false, ...} */
static void print_json(const struct system_facts *sf, bool can_profile)
{
	size_t nextra = sizeof(extra_abilities) / sizeof(extra_abilities[0]);

	printf("{\n  \"version\": \"%s\",\n  \"kernel\": \"%s\",\n  \"lockdown\": \"%s\",\n",
	       APERTURE_VERSION, sf->release, sf->lockdown);
	printf("  \"privileged\": %s,\n  \"perf_event_paranoid\": \"%s\",\n  \"kptr_restrict\": \"%s\",\n",
	       privileged(sf) ? "true" : "false", sf->paranoid, sf->kptr_restrict);
	printf("  \"kernel_addresses_visible\": %s,\n  \"features\": {\n", sf->kallsyms_addrs ? "true" : "false");
	for (int f = 0; f < FEAT_MAX; f++) {
		const struct feature_result *r = feature_get(f);
		const char *errname = r->err ? strerrorname_np(r->err) : NULL;

		printf("    \"%s\": {\"ok\": %s", feature_name(f), r->ok ? "true" : "false");
		if (!r->ok)
			printf(", \"errno\": \"%s\", \"step\": \"%s\"", r->err ? (errname ?: "?") : "", r->step);
		if (r->note)
			printf(", \"note\": \"%s\"", r->note);
		printf("}%s\n", f + 1 < FEAT_MAX ? "," : "");
	}
	printf("  },\n  \"abilities\": {\n");
	for (int i = 0; profilers[i]; i++) {
		bool compat;

		json_ability(profilers[i]->name, profiler_needs(profilers[i], &compat), false);
	}
	for (size_t i = 0; i < nextra; i++)
		json_ability(extra_abilities[i].key, extra_abilities[i].needs, false);
	printf("    \"continuous_process_checks\": {\"ok\": true},\n");
	printf("    \"continuous_http_causes\": {\"ok\": false, \"missing\": \"http_request_metrics\"}\n");
	printf("  },\n  \"can_profile\": %s\n}\n", can_profile ? "true" : "false");
}

static void usage(FILE *out)
{
	fprintf(out,
"Usage: aperture doctor [--json]\n"
"\n"
"Tells what this machine lets aperture do: kernel, BTF, lockdown, capabilities,\n"
"perf_event_paranoid, kptr_restrict, bpffs/tracefs, and every kernel feature\n"
"aperture uses, probed by loading a tiny BPF program (yes/no with the errno).\n"
"Exit 0 when on-CPU profiling can run, 1 when it cannot (the reason is printed).\n"
"  --json    the same as JSON, for scripts\n");
}

int doctor_main(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct system_facts sf;
	bool json = false, can_profile, compat;
	char state[160];
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "v", long_options, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'v': log_verbose++; break;
		case 'h': usage(stdout); return 0;
		default:
			log_error("doctor: unknown option '%s' (see aperture doctor --help)", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		log_error("doctor: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	gather(&sf);
	can_profile = privileged(&sf) && first_missing(profiler_needs(&profiler_oncpu, &compat)) == FEAT_MAX;
	if (json)
		print_json(&sf, can_profile);
	else
		print_text(&sf);
	fflush(stdout);
	if (!privileged(&sf))
		log_error("on-CPU profiling cannot run: needs root, or CAP_BPF and CAP_PERFMON");
	else if (!can_profile)
		log_error("on-CPU profiling cannot run: %s",
			  ability_state(profiler_needs(&profiler_oncpu, &compat), state, sizeof(state)));
	return can_profile ? 0 : EXIT_RUNTIME;
}
