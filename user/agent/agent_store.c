// SPDX-License-Identifier: GPL-2.0
/*
 * The crash ledger: what a kill -9 must not lose.
 *
 * A flush flips the profilers' generations, reads the idle one WITHOUT
 * deleting, writes the encoded upload to batch-SEQ (temp file, fsync,
 * rename, fsync of the directory), then the ledger (same way) with the map
 * id of each generation now safe in a batch, and only then empties the idle
 * maps and sends.  A batch file goes once the OAP acknowledged it.  After a
 * crash at any point the restarted agent finds:
 *   - batch files numbered below next_seq: sent again, byte for byte, so the
 *     OAP stores each record under the same id (sha256 of schedule, stack ids
 *     and upload time): an overwrite, never a second count;
 *   - a batch file at or above next_seq: written but never committed; its
 *     counts are still in the idle map, which is read again: the file goes;
 *   - under --pin, an idle generation whose map id is not the one committed:
 *     counted, never saved: read into a new batch.  One whose id is the one
 *     committed is already in a batch: emptied, not read.
 *   - the tasks that ran, with their start and stop times and the upload
 *     sequence, so their data keeps its schedule and upload times keep
 *     growing; latestUpdateTime, so the OAP does not hand them out again
 *     (which would re-arm their stop time).
 *
 * A file rather than the pinned maps: it must hold what the kernel no longer
 * has (encoded uploads, the task list), work without --pin too, and outlive
 * a reboot; bpffs is memory and its maps hold fixed-size values.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agent_internal.h"
#include "symbolize.h"

#define LEDGER_FILE "ledger"
#define LEDGER_MAGIC "aperture-ledger 1"
#define BATCH_MAGIC "aperture-batch 1\n"
#define BATCH_MAX (1u << 30)	/* a batch file larger than this is not ours */
#define TASK_FIELDS 14

/*
 * Tests only: APERTURE_TEST_CRASH=POINT:N kills the agent (SIGKILL) the N-th
 * time it passes POINT, to hit each window of the protocol on purpose.
 */
void test_crash_point(const char *point)
{
	static unsigned int passes;
	const char *want = getenv("APERTURE_TEST_CRASH");
	size_t len = strlen(point);

	if (!want || strncmp(want, point, len) || want[len] != ':')
		return;
	if (++passes == strtoul(want + len + 1, NULL, 10)) {
		log_warn("test: crashing at %s", point);
		raise(SIGKILL);
	}
}

static uint64_t fnv1a(const char *s, uint64_t h)
{
	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 1099511628211ull;
	}
	return h;
}

/* Writes @data to @name in @dir_fd atomically: temp file, fsync, rename, fsync the directory. */
static int write_atomic(int dir_fd, const char *name, const void *data, size_t len)
{
	char tmp[256];
	size_t off = 0;
	int fd, err = 0;

	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (off < len && !err) {
		ssize_t n = write(fd, (const char *)data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
		else
			off += (size_t)n;
	}
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(dir_fd, tmp, dir_fd, name))
		err = -errno;
	if (!err && fsync(dir_fd))
		err = -errno;
	if (err)
		unlinkat(dir_fd, tmp, 0);
	return err;
}

/* The whole of @name (NUL-terminated, malloc'd) in *@out, its size in *@len. 0 or -errno. */
static int read_whole(int dir_fd, const char *name, char **out, size_t *len)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	size_t off = 0;
	int err = 0;

	*out = NULL;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > BATCH_MAX) {
		err = -EINVAL;
		goto cleanup;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		err = -ENOMEM;
		goto cleanup;
	}
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	buf[off] = '\0';
	*out = buf;
	*len = off;
	buf = NULL;
cleanup:
	free(buf);
	close(fd);
	return err;
}

/* Strings from the OAP go in one field each: bytes that are not printable ASCII, and %, as %XX. */
static void put_escaped(FILE *f, const char *s)
{
	if (!*s)
		fputs("%00", f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c <= ' ' || c >= 0x7f || c == '%')
			fprintf(f, "%%%02X", c);
		else
			fputc(c, f);
	}
}

static char *unescape(char *s)
{
	char *in = s, *out = s;

	while (*in) {
		if (in[0] == '%' && isxdigit((unsigned char)in[1]) && isxdigit((unsigned char)in[2])) {
			char hex[3] = { in[1], in[2], 0 };

			*out++ = (char)strtoul(hex, NULL, 16);
			in += 3;
		} else {
			*out++ = *in++;
		}
	}
	*out = '\0';
	return s;
}

static void put_task(FILE *f, const struct agent_task *t)
{
	fputs("task ", f);
	put_escaped(f, t->t.task_id);
	fputc(' ', f);
	put_escaped(f, t->t.process_ids[0]);
	fputc(' ', f);
	put_escaped(f, t->t.target_name);
	fputc(' ', f);
	put_escaped(f, t->t.trigger);
	fprintf(f, " %" PRId64 " %" PRId64 " %" PRId64 " %c %" PRId64 " %" PRId64 " %" PRIu64 " %" PRIu64 " ",
		t->t.update_time_ms, t->t.start_time_ms, t->t.duration_s,
		t->state == TASK_RUNNING ? 'R' : 'P', t->run_start_ms, t->stop_at_ms, t->count,
		t->messages);
	for (size_t i = 0; i < t->npids; i++)
		fprintf(f, "%s%u", i ? "," : "", t->pids[i]);
	fputc('\n', f);
}

/* The ledger's text: the upload sequence, the saved generations, the live tasks. */
static int ledger_text(const struct agent *a, char **text, size_t *len)
{
	FILE *f = open_memstream(text, len);

	if (!f)
		return -errno;
	fprintf(f, "%s\nnext_seq %" PRIu64 "\nlast_upload_ms %" PRId64 "\nlatest_update_ms %" PRId64 "\n",
		LEDGER_MAGIC, a->ledger.next_seq, a->last_flush_ms, a->latest_update_ms);
	for (int k = 0; k < PROFILER_MAX; k++)
		if (a->prof[k].ops)
			fprintf(f, "captured %s %u\n", a->prof[k].ops->name, a->ledger.captured[k]);
	for (size_t i = 0; i < a->ntasks; i++) {
		const struct agent_task *t = a->tasks[i];

		/* Finished tasks are not kept: latestUpdateTime keeps the OAP from sending them again. */
		if (t->state != TASK_DONE && t->kind != KIND_NONE)
			put_task(f, t);
	}
	if (fclose(f))
		return -errno;
	return 0;
}

static void ledger_trouble(struct ledger *l, const char *what, int err)
{
	if (!l->failing)
		log_warn("ledger %s: cannot write %s: %s; a crash now would lose unsent profiling data",
			 l->path, what, strerror(-err));
	l->failing = true;
}

void ledger_commit(struct agent *a)
{
	struct ledger *l = &a->ledger;
	char *text = NULL;
	size_t len = 0;
	int err;

	if (l->dir_fd < 0)
		return;
	err = ledger_text(a, &text, &len);
	if (!err)
		err = write_atomic(l->dir_fd, LEDGER_FILE, text, len);
	free(text);
	if (err) {
		ledger_trouble(l, LEDGER_FILE, err);
		return;
	}
	if (l->failing)
		log_warn("ledger %s: written again", l->path);
	l->failing = false;
}

static void batch_name(char *name, size_t size, uint64_t seq)
{
	snprintf(name, size, "batch-%020" PRIu64, seq);
}

/* One upload: the magic, then each message as a 4-byte little-endian length and its bytes. */
int ledger_save_batch(struct ledger *l, uint64_t seq, const struct sw_msgs *msgs)
{
	size_t len = strlen(BATCH_MAGIC) + msgs->n * 4 + msgs->bytes, off;
	uint8_t *buf;
	char name[64];
	int err;

	if (l->dir_fd < 0)
		return 0;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, BATCH_MAGIC, strlen(BATCH_MAGIC));
	off = strlen(BATCH_MAGIC);
	for (size_t i = 0; i < msgs->n; i++) {
		uint32_t n = (uint32_t)msgs->v[i].len;

		for (int b = 0; b < 4; b++)
			buf[off++] = (uint8_t)(n >> (8 * b));
		memcpy(buf + off, msgs->v[i].data, n);
		off += n;
	}
	batch_name(name, sizeof(name), seq);
	err = write_atomic(l->dir_fd, name, buf, len);
	free(buf);
	if (err)
		ledger_trouble(l, name, err);
	return err;
}

void ledger_forget_batch(struct ledger *l, uint64_t seq)
{
	char name[64];

	if (!l || l->dir_fd < 0 || !seq)
		return;
	batch_name(name, sizeof(name), seq);
	if (unlinkat(l->dir_fd, name, 0) && errno != ENOENT)
		log_warn("ledger %s: cannot remove %s: %s", l->path, name, strerror(errno));
}

/* A batch file's messages into @msgs. 0 or -EBADMSG / -ENOMEM. */
static int parse_batch(const uint8_t *buf, size_t len, struct sw_msgs *msgs)
{
	size_t off = strlen(BATCH_MAGIC);

	if (len < off || memcmp(buf, BATCH_MAGIC, off))
		return -EBADMSG;
	while (off < len) {
		struct sw_msg m;
		uint32_t n = 0;

		if (len - off < 4)
			return -EBADMSG;
		for (int b = 0; b < 4; b++)
			n |= (uint32_t)buf[off++] << (8 * b);
		if (n > len - off)
			return -EBADMSG;
		m.len = n;
		m.data = malloc(n ? n : 1);
		if (!m.data)
			return -ENOMEM;
		memcpy(m.data, buf + off, n);
		off += n;
		if (sw_msgs_push(msgs, m)) {
			free(m.data);
			return -ENOMEM;
		}
	}
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* The batch files' numbers, sorted, in *@out (malloc'd); count or -errno. */
static ssize_t list_batches(int dir_fd, uint64_t **out)
{
	int fd = dup(dir_fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	uint64_t *seqs = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;

	*out = NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((e = readdir(d))) {
		unsigned long long seq;
		char tail;

		if (sscanf(e->d_name, "batch-%llu%c", &seq, &tail) != 1 || !seq)
			continue;
		if (n == cap) {
			uint64_t *v = realloc(seqs, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!v) {
				free(seqs);
				closedir(d);
				return -ENOMEM;
			}
			seqs = v;
		}
		seqs[n++] = seq;
	}
	closedir(d);
	if (n > 1)	/* seqs is NULL when there is no batch, and qsort's base must not be */
		qsort(seqs, n, sizeof(*seqs), cmp_u64);
	*out = seqs;
	return (ssize_t)n;
}

/* Queues the saved uploads in order; removes those never committed. */
static void load_batches(struct agent *a)
{
	struct ledger *l = &a->ledger;
	size_t queued = 0, msgs_queued = 0;
	uint64_t *seqs;
	ssize_t n = list_batches(l->dir_fd, &seqs);

	for (ssize_t i = 0; i < n; i++) {
		struct sw_msgs msgs = { 0 };
		char name[64], *buf;
		size_t len;
		int err;

		batch_name(name, sizeof(name), seqs[i]);
		if (seqs[i] >= l->next_seq) {
			/* Written, never committed: its counts are still in the idle map. */
			unlinkat(l->dir_fd, name, 0);
			continue;
		}
		err = read_whole(l->dir_fd, name, &buf, &len);
		if (!err)
			err = parse_batch((const uint8_t *)buf, len, &msgs);
		free(buf);
		if (err) {
			log_warn("ledger %s: %s unreadable (%s), removed", l->path, name, strerror(-err));
			sw_msgs_free(&msgs);
			unlinkat(l->dir_fd, name, 0);
			continue;
		}
		msgs_queued += msgs.n;
		queued++;
		spool_push(&a->spool, &msgs, seqs[i]);
	}
	free(seqs);
	if (queued)
		log_warn("ledger %s: %zu uploads (%zu messages) not acknowledged before the last stop: "
			 "sending them again", l->path, queued, msgs_queued);
}

static int parse_pids(char *list, struct agent_task *t)
{
	size_t n = 1;
	char *save = NULL;

	for (char *c = list; *c; c++)
		n += *c == ',';
	t->pids = calloc(n, sizeof(*t->pids));
	if (!t->pids)
		return -ENOMEM;
	for (char *s = strtok_r(list, ",", &save); s && t->npids < n; s = strtok_r(NULL, ",", &save))
		t->pids[t->npids++] = (uint32_t)strtoul(s, NULL, 10);
	return t->npids ? 0 : -EINVAL;
}

/* A "task" line's fields (f[0] is "task") into a new task. */
static int restore_task(struct agent *a, char **f)
{
	struct agent_task *t = calloc_logged(1, sizeof(*t));
	int err = -ENOMEM;

	if (!t)
		return -ENOMEM;
	t->t.process_ids = calloc(1, sizeof(char *));
	if (!t->t.process_ids)
		goto fail;
	t->t.task_id = strdup(unescape(f[1]));
	t->t.process_ids[0] = strdup(unescape(f[2]));
	t->t.nprocess_ids = 1;
	t->t.target_name = strdup(unescape(f[3]));
	t->t.trigger = strdup(unescape(f[4]));
	if (!t->t.task_id || !t->t.process_ids[0] || !t->t.target_name || !t->t.trigger)
		goto fail;
	t->t.update_time_ms = strtoll(f[5], NULL, 10);
	t->t.start_time_ms = strtoll(f[6], NULL, 10);
	t->t.duration_s = strtoll(f[7], NULL, 10);
	t->state = f[8][0] == 'R' ? TASK_RUNNING : TASK_PENDING;
	t->run_start_ms = strtoll(f[9], NULL, 10);
	t->stop_at_ms = strtoll(f[10], NULL, 10);
	t->count = strtoull(f[11], NULL, 10);
	t->messages = strtoull(f[12], NULL, 10);
	err = parse_pids(f[13], t);
	t->kind = task_kind(&t->t);
	if (!err && (t->kind == KIND_NONE || !a->prof[t->kind].ops))
		err = -EINVAL;
	err = err ?: task_add(a, t);
	if (err)
		goto fail;
	for (size_t i = 0; t->state == TASK_RUNNING && i < t->npids; i++)
		symbolizer_track(a->sym, t->pids[i]);
	log_info("task %s (%s, process %s) restored from the ledger: %s", t->t.task_id,
		 t->t.target_name, t->t.process_ids[0], t->state == TASK_RUNNING ? "running" : "pending");
	return 0;
fail:
	task_free(t);
	return err;
}

static void parse_line(struct agent *a, char *line)
{
	char *f[TASK_FIELDS + 1], *save = NULL;
	int n = 0;

	for (char *s = strtok_r(line, " \n", &save); s && n <= TASK_FIELDS; s = strtok_r(NULL, " \n", &save))
		f[n++] = s;
	if (n == 2 && !strcmp(f[0], "next_seq"))
		a->ledger.next_seq = strtoull(f[1], NULL, 10) ?: 1;
	else if (n == 2 && !strcmp(f[0], "last_upload_ms"))
		a->last_flush_ms = strtoll(f[1], NULL, 10);
	else if (n == 2 && !strcmp(f[0], "latest_update_ms"))
		a->latest_update_ms = strtoll(f[1], NULL, 10);
	else if (n == 3 && !strcmp(f[0], "captured")) {
		for (int k = 0; k < PROFILER_MAX; k++)
			if (a->prof[k].ops && !strcmp(a->prof[k].ops->name, f[1]))
				a->ledger.captured[k] = (uint32_t)strtoul(f[2], NULL, 10);
	} else if (n == TASK_FIELDS && !strcmp(f[0], "task")) {
		if (restore_task(a, f))
			log_warn("ledger %s: a task could not be restored", a->ledger.path);
	}
}

/* Reads the ledger file, if any: tasks, times, sequence, saved generations. */
static void load_ledger(struct agent *a)
{
	char *text, *save = NULL;
	size_t len;
	int err = read_whole(a->ledger.dir_fd, LEDGER_FILE, &text, &len);

	if (err == -ENOENT)
		return;
	if (err || strncmp(text, LEDGER_MAGIC "\n", strlen(LEDGER_MAGIC) + 1)) {
		log_warn("ledger %s: %s unreadable, starting afresh", a->ledger.path, LEDGER_FILE);
		free(text);
		return;
	}
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		parse_line(a, line);
	free(text);
}

/* Creates and locks STATE_DIR/agent-HASH; -errno (logged) when there is no ledger this run. */
static int open_dir(struct agent *a)
{
	struct ledger *l = &a->ledger;
	uint64_t h = fnv1a(a->o.oap, 14695981039346656037ull);

	h = fnv1a(a->o.pin_dir ? a->o.pin_dir : "-", fnv1a("\n", h));
	snprintf(l->path, sizeof(l->path), "%s/agent-%016" PRIx64, a->o.state_dir, h);
	if ((mkdir(a->o.state_dir, 0700) && errno != EEXIST) || (mkdir(l->path, 0700) && errno != EEXIST))
		goto fail;
	l->dir_fd = open(l->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (l->dir_fd < 0)
		goto fail;
	l->lock_fd = openat(l->dir_fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (l->lock_fd < 0)
		goto fail;
	if (flock(l->lock_fd, LOCK_EX | LOCK_NB)) {
		log_warn("ledger %s is in use by another aperture for the same OAP and pins: "
			 "this one runs without (a crash loses its unsent data)", l->path);
		ledger_close(l);
		return -EBUSY;
	}
	return 0;
fail:
	log_warn("ledger %s: %s; running without (a crash loses unsent data)", l->path, strerror(errno));
	ledger_close(l);
	return -errno;
}

void ledger_open(struct agent *a)
{
	struct ledger *l = &a->ledger;

	l->dir_fd = l->lock_fd = -1;
	l->next_seq = 1;
	a->spool.ledger = l;
	if (open_dir(a))
		return;
	load_ledger(a);
	load_batches(a);
	log_info("ledger %s: next upload %" PRIu64, l->path, l->next_seq);
}

void ledger_close(struct ledger *l)
{
	if (l->lock_fd >= 0)
		close(l->lock_fd);	/* releases the lock */
	if (l->dir_fd >= 0)
		close(l->dir_fd);
	l->lock_fd = l->dir_fd = -1;
}

/*
 * After a restart under --pin: the idle generation of each profiler either
 * is in a committed batch (its id is the one saved: emptied) or holds counts
 * never saved (read into a batch now).
 */
void ledger_recover(struct agent *a)
{
	int gen[PROFILER_MAX];
	bool unsaved = false;

	for (int k = 0; k < PROFILER_MAX; k++) {
		struct profiler *p = a->prof[k].p;
		int idle;

		gen[k] = -1;
		if (!p || !a->o.pin_dir)
			continue;
		idle = !p->live;
		if (a->ledger.dir_fd >= 0 && profiler_generation_id(p, idle) == a->ledger.captured[k]) {
			profiler_clear_generation(p, idle);
			continue;
		}
		gen[k] = idle;
		unsaved = true;
	}
	if (unsaved)
		capture(a, gen);
	ledger_commit(a);
}
