// SPDX-License-Identifier: GPL-2.0
/*
 * The config file, read into command-line options.  Format (README, "Running it for months"):
 *
 *   # a comment
 *   oap = oap.example:11800
 *   frequency = 49            # a comment too: '#' after a blank
 *   exe-pattern = "*#x"       # in double quotes, '#' is kept
 *   profilers = oncpu,offcpu
 *   user-only = true
 *
 * Every key is a long option of the command (plus `profilers`, the list of
 * profiler flags, and `frequency`, an alias of `freq`).  The file's keys
 * become "--key=value" arguments placed before the command line's, and the
 * command's own parser reads the whole: one validation for both.  A key the
 * command line also sets is left out, so that a flag overrides the file even
 * for options that add up (-p, --label).  While the parser reads a file's
 * argument, log lines are prefixed "FILE:LINE: " (log_set_context).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "config.h"
#include "profiler.h"
#include "util.h"

#define CONFIG_MAX_ENTRIES 256
#define CONFIG_MAX_ARGS (2 * CONFIG_MAX_ENTRIES + 64)

struct config_entry {
	char *key;
	char *value;
	int line;
};

struct config_file {
	const char *path;
	struct config_entry entries[CONFIG_MAX_ENTRIES];
	int n;
};

/* What the command line said besides its options for the command. */
struct config_request {
	const char *path;	/* --config FILE */
	bool check;		/* --check-config */
	const char *log_format;	/* --log-format F */
	const char *log_format_from;	/* "flag", "file" or "default" */
	int log_format_line;		/* the file's line, 0 when not from the file */
	char log_format_in_file[64];	/* the file's value (its entries are freed after the merge) */
};

/* The argv handed to the parser: argv[0], the file's arguments, the command line's. */
struct merged_args {
	char *argv[CONFIG_MAX_ARGS + 1];
	int argc;
	int file_end;			/* argv[1 .. file_end) came from the file */
	int line_of[CONFIG_MAX_ARGS];	/* their lines */
};

static char *last_path;			/* for config_path() */
static const struct merged_args *context_args;	/* set while the parser runs */
static const char *context_path;

const char *config_path(void)
{
	return last_path;
}

/* "FILE:LINE" while the parser reads an argument from the file. */
static const char *file_context(void)
{
	static char where[PATH_MAX + 16];
	int idx = optind - 1;

	if (!context_args || idx < 1 || idx >= context_args->file_end)
		return NULL;
	snprintf(where, sizeof(where), "%s:%d", context_path, context_args->line_of[idx]);
	return where;
}

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
		*--end = 0;
	return s;
}

/* Cuts @text at a '#' that follows a blank and is not inside double quotes. */
static void cut_comment(char *text)
{
	bool quoted = false;

	for (char *c = text; *c; c++) {
		if (*c == '"')
			quoted = !quoted;
		else if (*c == '#' && !quoted && (c == text || c[-1] == ' ' || c[-1] == '\t')) {
			*c = 0;
			return;
		}
	}
}

/* key = value, or "value" in double quotes (kept as is inside); false after one line. */
static bool split_line(const char *path, int line, char *text, char **key, char **value)
{
	char *eq = strchr(text, '=');
	size_t len;

	if (!eq) {
		log_error("%s:%d: expected 'key = value'", path, line);
		return false;
	}
	*eq = 0;
	*key = trim(text);
	*value = trim(eq + 1);
	len = strlen(*value);
	if (len >= 2 && (*value)[0] == '"' && (*value)[len - 1] == '"') {
		(*value)[len - 1] = 0;
		(*value)++;
	}
	if (!**key || !**value) {
		log_error("%s:%d: %s", path, line, **key ? "no value" : "no key");
		return false;
	}
	return true;
}

static void config_file_free(struct config_file *cf)
{
	for (int i = 0; i < cf->n; i++) {
		free(cf->entries[i].key);
		free(cf->entries[i].value);
	}
	cf->n = 0;
}

static bool add_entry(struct config_file *cf, int line, const char *key, const char *value)
{
	struct config_entry *e = &cf->entries[cf->n];

	if (cf->n == CONFIG_MAX_ENTRIES) {
		log_error("%s:%d: more than %d settings", cf->path, line, CONFIG_MAX_ENTRIES);
		return false;
	}
	e->key = strdup_logged(key);
	e->value = strdup_logged(value);
	e->line = line;
	cf->n++;
	return e->key && e->value;
}

/* Reads @cf->path into key/value entries; false (one line said) on a syntax error or an unreadable file. */
static bool config_file_read(struct config_file *cf)
{
	FILE *f = fopen(cf->path, "re");
	char *text = NULL, *key, *value;
	size_t room = 0;
	bool ok = true;
	int line = 0;

	if (!f) {
		log_error("--config %s: %s", cf->path, strerror(errno));
		return false;
	}
	while (ok && getline(&text, &room, f) >= 0) {
		char *s = trim(text);

		line++;
		cut_comment(s);
		s = trim(s);
		if (!*s)
			continue;
		ok = split_line(cf->path, line, s, &key, &value) && add_entry(cf, line, key, value);
	}
	if (ok && ferror(f)) {
		log_error("--config %s: %s", cf->path, strerror(errno));
		ok = false;
	}
	free(text);
	fclose(f);
	if (!ok)
		config_file_free(cf);
	return ok;
}

/* The option named @name in the command's table, or NULL. */
static const struct option *option_named(const struct cli_getopt *g, const char *name)
{
	for (const struct option *o = g->opts; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

/* The option that short letter @c stands for: a command's own, or a profiler's (-F). */
static const struct option *option_of_short(const struct cli_getopt *g, int c)
{
	for (const struct option *o = g->opts; o->name; o++)
		if (o->val == c)
			return o;
	for (int k = 0; profilers[k]; k++)
		for (const struct profiler_option *po = profilers[k]->cli.options; po && po->name; po++)
			if (po->short_name == c)
				return option_named(g, po->name);
	return NULL;
}

static bool is_kind_flag(const struct option *o)
{
	return o->has_arg == no_argument && profiler_find(o->name) != NULL;
}

/* Settings, not actions: a file cannot say --help or --unpin. */
static bool is_action(const char *name)
{
	static const char *const actions[] = { "help", "version", "unpin", "reset", "config", "check-config" };

	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		if (strcmp(name, actions[i]) == 0)
			return true;
	return false;
}

typedef void (*option_seen_fn)(const struct option *o, const char *arg, int index, void *ctx);

/*
 * Calls @fn for every option of @argv as the command's getopt tables read it
 * (@index: where it was, file arguments first).  getopt permutes, so it reads a copy.
 */
static void scan_options(const struct cli_getopt *g, int argc, char **argv, option_seen_fn fn, void *ctx)
{
	char *copy[CONFIG_MAX_ARGS + 1];
	int c, longindex = -1, saved_opterr = opterr;

	if (argc > CONFIG_MAX_ARGS)
		return;
	memcpy(copy, argv, argc * sizeof(*argv));
	copy[argc] = NULL;
	optind = 0;	/* a full restart of getopt's state */
	opterr = 0;
	while ((c = getopt_long(argc, copy, g->shorts, g->opts, &longindex)) != -1) {
		const struct option *o = c == '?' ? NULL :
					 longindex >= 0 ? &g->opts[longindex] : option_of_short(g, c);

		if (o)
			fn(o, optarg, optind - 1, ctx);
		longindex = -1;
	}
	opterr = saved_opterr;
	optind = 1;
}

/* --- which keys the command line sets --- */

struct flag_names {
	const char *names[CONFIG_MAX_ARGS];
	int n;
	bool kind_flag;		/* a profiler flag: overrides the file's `profilers` */
};

static void note_flag(const struct option *o, const char *arg, int index, void *ctx)
{
	struct flag_names *flags = ctx;

	if (flags->n < CONFIG_MAX_ARGS)
		flags->names[flags->n++] = o->name;
	flags->kind_flag |= is_kind_flag(o);
}

static bool flag_given(const struct flag_names *flags, const char *name)
{
	for (int i = 0; i < flags->n; i++)
		if (strcmp(flags->names[i], name) == 0)
			return true;
	return false;
}

/* --- the file's keys as arguments --- */

/*
 * The parsers keep pointers to their arguments (o->dir = optarg), as they may
 * into the real argv: the file's arguments live as long as the process.  They
 * are interned, so that a daemon reloading the same file on every SIGHUP for
 * months holds each distinct argument once.
 */
static const char *intern_arg(const char *text)
{
	static char **interned;
	static size_t n, room;
	char *copy;

	for (size_t i = 0; i < n; i++)
		if (strcmp(interned[i], text) == 0)
			return interned[i];
	if (n == room) {
		char **more = realloc(interned, (room = room ? 2 * room : 64) * sizeof(*interned));

		if (!more) {
			log_error("out of memory");
			return NULL;
		}
		interned = more;
	}
	copy = strdup_logged(text);
	if (copy)
		interned[n++] = copy;
	return copy;
}

static bool push_arg(struct merged_args *m, const char *text, int line)
{
	const char *arg;

	if (m->argc >= CONFIG_MAX_ARGS) {
		log_error("too many arguments");
		return false;
	}
	arg = intern_arg(text);
	if (!arg)
		return false;
	m->line_of[m->argc] = line;
	m->argv[m->argc++] = (char *)arg;
	return true;
}

static bool parse_bool(const char *value, bool *on)
{
	static const char *const yes[] = { "true", "yes", "on", "1" }, *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (strcmp(value, yes[i]) == 0 || strcmp(value, no[i]) == 0) {
			*on = strcmp(value, yes[i]) == 0;
			return true;
		}
	}
	return false;
}

/* profilers = oncpu,offcpu: one flag each. */
static bool push_profilers(const struct cli_getopt *g, struct merged_args *m, const struct config_entry *e,
			   const char *path)
{
	char list[256], *save = NULL, *name;

	snprintf(list, sizeof(list), "%s", e->value);
	for (name = strtok_r(list, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
		const struct option *o = option_named(g, name);
		char flag[64];

		if (!o || !is_kind_flag(o)) {
			log_error("%s:%d: profilers: '%s' is not a profiler of this command", path, e->line, name);
			return false;
		}
		snprintf(flag, sizeof(flag), "--%s", name);
		if (!push_arg(m, flag, e->line))
			return false;
	}
	return true;
}

static bool push_entry(const struct cli_getopt *g, struct merged_args *m, const struct config_entry *e,
		       const char *path)
{
	const char *name = strcmp(e->key, "frequency") == 0 ? "freq" : e->key;
	const struct option *o = is_action(name) ? NULL : option_named(g, name);
	char arg[4096];
	bool on;

	if (strcmp(name, "profilers") == 0)
		return push_profilers(g, m, e, path);
	if (!o || is_kind_flag(o)) {
		log_error("%s:%d: unknown key '%s' (keys are the command's long options: see --help)",
			  path, e->line, e->key);
		return false;
	}
	if (o->has_arg == no_argument) {
		if (!parse_bool(e->value, &on)) {
			log_error("%s:%d: %s: '%s' is not true or false", path, e->line, e->key, e->value);
			return false;
		}
		return !on || (snprintf(arg, sizeof(arg), "--%s", name), push_arg(m, arg, e->line));
	}
	if (snprintf(arg, sizeof(arg), "--%s=%s", name, e->value) >= (int)sizeof(arg)) {
		log_error("%s:%d: %s: value too long", path, e->line, e->key);
		return false;
	}
	return push_arg(m, arg, e->line);
}

static bool entry_overridden(const struct config_entry *e, const struct flag_names *flags)
{
	const char *name = strcmp(e->key, "frequency") == 0 ? "freq" : e->key;

	if (strcmp(name, "profilers") == 0)
		return flags->kind_flag;
	return flag_given(flags, name);
}

/* --- --config, --check-config and --log-format out of the command line --- */

/* The value of option @name at argv[*i] ("--name V" or "--name=V"), advancing *i; NULL if not it. */
static const char *take_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
	size_t len = strlen(name);

	if (strncmp(argv[*i], name, len))
		return NULL;
	if (argv[*i][len] == '=')
		return argv[*i] + len + 1;
	if (argv[*i][len])
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

/* Copies @argv into @m without the config options, which go into @req; false after one line. */
static bool split_request(int argc, char **argv, struct config_request *req, struct merged_args *m,
			  int *rest)
{
	const char *v;
	bool missing = false;
	int i, n = 0;
	char **kept = m->argv + 1;	/* staged past argv[0]; moved behind the file's later */

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if ((v = take_value(argc, argv, &i, "--config", &missing)))
			req->path = v;
		else if ((v = take_value(argc, argv, &i, "--log-format", &missing)))
			req->log_format = v, req->log_format_from = "flag";
		else if (strcmp(argv[i], "--check-config") == 0)
			req->check = true;
		else if (missing)
			break;
		else if (n < CONFIG_MAX_ARGS - 1)
			kept[n++] = argv[i];
		if (missing)
			break;
	}
	if (missing) {
		log_error("%s needs a value", argv[i]);
		return false;
	}
	for (; i < argc && n < CONFIG_MAX_ARGS - 1; i++)
		kept[n++] = argv[i];
	if (i < argc) {
		log_error("too many arguments");
		return false;
	}
	*rest = n;
	return true;
}

/* --- --check-config's listing --- */

struct effective {
	const struct merged_args *m;
	const char *values[CONFIG_MAX_ARGS];
	int index[CONFIG_MAX_ARGS];
	const struct option *opt[CONFIG_MAX_ARGS];
	int n;
};

static void note_effective(const struct option *o, const char *arg, int index, void *ctx)
{
	struct effective *eff = ctx;

	if (eff->n == CONFIG_MAX_ARGS)
		return;
	eff->opt[eff->n] = o;
	eff->values[eff->n] = arg;
	eff->index[eff->n++] = index;
}

/* Options that add up when repeated: each occurrence is its own line. */
static bool is_repeatable(const char *name)
{
	static const char *const lists[] = { "pid", "label", "exe-pattern", "cgroup", "syscall-filter" };

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		if (strcmp(name, lists[i]) == 0)
			return true;
	return false;
}

/* Defaults the options' help does not carry as "(default X)". */
static const char *const known_defaults[][2] = {
	{ "pin", "/sys/fs/bpf/aperture" },
	{ "interval", "60s" },
	{ "output-format", "pprof" },
	{ "keep-files", "0 (no limit)" },
	{ "keep-mb", "0 (no limit)" },
	{ "unwind", "auto" },
	{ "unwind-rows", "1048576" },
	{ "python", "auto" },
	{ "stacks-max", "16384" },
	{ "counts-max", "16384" },
	{ "symbol-cache-mb", "24" },
	{ "service", "the host name" },
	{ "instance", "the process name" },
	{ "layer", "GENERAL" },
	{ "heartbeat-interval", "20" },
	{ "task-interval", "10" },
	{ "flush-interval", "5" },
	{ "report-every", "10" },
	{ "spool-size", "16M" },
	{ "deadline", "10" },
	{ "reconnect-max", "30" },
	{ "state-dir", "$APERTURE_STATE_DIR or /var/lib/aperture" },
};

/* @name's default as text, into @out: the table, or "(default X)" in a profiler option's help. */
static const char *default_of(const char *name, char *out, size_t len)
{
	for (size_t i = 0; i < sizeof(known_defaults) / sizeof(known_defaults[0]); i++)
		if (strcmp(known_defaults[i][0], name) == 0)
			return known_defaults[i][1];
	for (int k = 0; profilers[k]; k++) {
		for (const struct profiler_option *po = profilers[k]->cli.options; po && po->name; po++) {
			const char *d = strcmp(po->name, name) ? NULL : strstr(po->help, "(default");

			if (!d)
				continue;
			d += strlen("(default");
			d += strspn(d, ": ");
			snprintf(out, len, "%.*s", (int)strcspn(d, ")"), d);
			return out[0] ? out : "see --help";
		}
	}
	return NULL;
}

static const char *source_of(const struct effective *eff, int i)
{
	return eff->index[i] < eff->m->file_end ? "file" : "flag";
}

static void print_option(const struct effective *eff, const struct option *o)
{
	char buf[128];
	const char *dflt;
	int last = -1;

	for (int i = 0; i < eff->n; i++) {
		if (eff->opt[i] != o)
			continue;
		if (is_repeatable(o->name))
			printf("%s = %s  # %s\n", o->name, eff->values[i] ? eff->values[i] : "true", source_of(eff, i));
		last = i;
	}
	if (last >= 0 && !is_repeatable(o->name))
		printf("%s = %s  # %s\n", o->name, eff->values[last] ? eff->values[last] : "true",
		       source_of(eff, last));
	if (last >= 0)
		return;
	if (o->has_arg == no_argument) {
		printf("%s = false  # default\n", o->name);
		return;
	}
	dflt = default_of(o->name, buf, sizeof(buf));
	printf("# %s =  # default: %s\n", o->name, dflt ? dflt : "unset");
}

static void print_profilers(const struct effective *eff, const struct cli_getopt *g)
{
	const char *from = NULL;
	char list[256] = "";
	size_t len = 0;

	for (int i = 0; i < eff->n; i++) {
		if (!is_kind_flag(eff->opt[i]))
			continue;
		len += snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0, "%s%s",
				len ? "," : "", eff->opt[i]->name);
		from = source_of(eff, i);
	}
	if (from) {
		printf("profilers = %s  # %s\n", list, from);
		return;
	}
	for (int k = 0; profilers[k]; k++)
		if (!profilers[k]->cli.opt_in && option_named(g, profilers[k]->name))
			len += snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0, "%s%s",
					len ? "," : "", profilers[k]->name);
	if (len)
		printf("profilers = %s  # default\n", list);
}

static void print_effective(const struct cli_getopt *g, const struct merged_args *m,
			    const struct config_request *req)
{
	struct effective eff = { .m = m };

	scan_options(g, m->argc, (char **)m->argv, note_effective, &eff);
	printf("# aperture: effective settings (key = value  # where from: default, file %s, flag)\n",
	       req->path ? req->path : "(none)");
	print_profilers(&eff, g);
	for (const struct option *o = g->opts; o->name; o++)
		if (!is_action(o->name) && !is_kind_flag(o) && strcmp(o->name, "verbose"))
			print_option(&eff, o);
	printf("log-format = %s  # %s\n", req->log_format ? req->log_format : "text", req->log_format_from);
}

/* --- the whole --- */

static bool merge_file(const struct cli_getopt *g, struct config_request *req, struct merged_args *m,
		       int rest)
{
	static struct config_file cf;	/* 256 entries: not on the stack */
	char *cmdline[CONFIG_MAX_ARGS + 1];
	struct flag_names flags = { .n = 0 };
	bool ok = true;

	memcpy(cmdline, m->argv, (rest + 1) * sizeof(*cmdline));
	scan_options(g, rest + 1, cmdline, note_flag, &flags);
	cf.path = req->path;
	cf.n = 0;
	if (req->path && !config_file_read(&cf))
		return false;
	m->argc = 1;
	for (int i = 0; ok && i < cf.n; i++) {
		const struct config_entry *e = &cf.entries[i];

		if (strcmp(e->key, "log-format") == 0) {
			if (!req->log_format || req->log_format_line) {
				snprintf(req->log_format_in_file, sizeof(req->log_format_in_file), "%s", e->value);
				req->log_format = req->log_format_in_file;
				req->log_format_from = "file";
				req->log_format_line = e->line;
			}
			continue;
		}
		ok = entry_overridden(e, &flags) || push_entry(g, m, e, req->path);
	}
	m->file_end = m->argc;
	for (int i = 1; ok && i <= rest; i++) {
		if (m->argc >= CONFIG_MAX_ARGS) {
			log_error("too many arguments");
			ok = false;
			break;
		}
		m->line_of[m->argc] = 0;
		m->argv[m->argc++] = cmdline[i];
	}
	m->argv[m->argc] = NULL;
	config_file_free(&cf);
	return ok;
}

static bool apply_log_format(const struct config_request *req)
{
	if (!req->log_format || log_set_format(req->log_format))
		return true;
	if (req->log_format_line)
		log_error("%s:%d: log-format: '%s' is not text or json", req->path, req->log_format_line,
			  req->log_format);
	else
		log_error("--log-format: '%s' is not text or json", req->log_format);
	return false;
}

static void remember_path(const char *path)
{
	char *copy = path ? strdup_logged(path) : NULL;

	free(last_path);
	last_path = copy;
}

int config_parse(const struct cli_getopt *g, int argc, char **argv,
		 int (*parse)(void *ctx, int argc, char **argv, const struct cli_getopt *g), void *ctx)
{
	static struct merged_args m;	/* big; one parse at a time */
	struct config_request req = { .log_format_from = "default" };
	int err, rest;


	memset(&m, 0, sizeof(m));
	m.argv[0] = argv[0];
	if (!split_request(argc, argv, &req, &m, &rest) || !merge_file(g, &req, &m, rest) ||
	    !apply_log_format(&req))
		return EXIT_USAGE;
	remember_path(req.path);
	context_args = &m;
	context_path = req.path;
	log_set_context(file_context);
	err = parse(ctx, m.argc, m.argv, g);
	log_set_context(NULL);
	context_args = NULL;
	if (!err && req.check) {
		print_effective(g, &m, &req);
		err = -1;
	}
	return err;
}

/* Quiet: an unreadable or bad file is said by the parse that follows, once. */
static bool file_has_key(const char *path, const char *key)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t room = 0;
	bool found = false;

	while (f && !found && getline(&text, &room, f) >= 0) {
		char *s = trim(text), *eq = strchr(s, '=');

		if (*s == '#' || !eq)
			continue;
		*eq = 0;
		found = strcmp(trim(s), key) == 0;
	}
	free(text);
	if (f)
		fclose(f);
	return found;
}

bool config_sets(int argc, char **argv, const char *key)
{
	size_t len = strlen(key);
	const char *path = NULL;

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (strncmp(argv[i], "--", 2) == 0 && strncmp(argv[i] + 2, key, len) == 0 &&
		    (argv[i][2 + len] == 0 || argv[i][2 + len] == '='))
			return true;
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			path = argv[i + 1];
		else if (strncmp(argv[i], "--config=", 9) == 0)
			path = argv[i] + 9;
	}
	return path && file_has_key(path, key);
}
