// SPDX-License-Identifier: GPL-2.0
/*
 * The agent's directory on disk: one lock, files replaced atomically, and
 * the batch records (encoded uploads) kept until the OAP acknowledged them.
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
#include "agent_store.h"
#include "util.h"

#define BATCH_MAGIC "aperture-batch 1\n"
#define BATCH_MAX (1u << 30)	/* a batch file larger than this is not ours */

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

/*
 * The whole of @name (NUL-terminated, malloc'd) in *@out, its size in *@len: a regular file of
 * at most @max_bytes, not through a link, not waiting on a FIFO.  0 or -errno (-EFBIG: larger).
 */
static int read_whole(int dir_fd, const char *name, size_t max_bytes, char **out, size_t *len)
{
	int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	size_t off = 0;
	int err = 0;

	*out = NULL;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto cleanup;
	}
	if ((uint64_t)st.st_size > max_bytes) {
		err = -EFBIG;
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

void store_failed(struct store *s, const char *what, int err)
{
	if (!s->failing)
		log_warn("ledger %s: cannot write %s: %s; a crash now would lose unsent profiling data",
			 s->path, what, strerror(-err));
	s->failing = true;
}

void store_init(struct store *s)
{
	s->dir_fd = s->lock_fd = -1;
	s->failing = false;
}

bool store_is_open(const struct store *s)
{
	return s->dir_fd >= 0;
}

int store_write(struct store *s, const char *name, const void *data, size_t len)
{
	int err;

	if (s->dir_fd < 0)
		return 0;
	err = write_atomic(s->dir_fd, name, data, len);
	if (err) {
		store_failed(s, name, err);
		return err;
	}
	if (s->failing)
		log_warn("ledger %s: written again", s->path);
	s->failing = false;
	return 0;
}

int store_read(const struct store *s, const char *name, size_t max_bytes, char **out, size_t *len)
{
	return read_whole(s->dir_fd, name, max_bytes, out, len);
}

void store_put_field(FILE *f, const char *s)
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

char *store_field(char *s)
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

static void batch_name(char *name, size_t size, uint64_t seq)
{
	snprintf(name, size, "batch-%020" PRIu64, seq);
}

/* One upload: the magic, then each message as a 4-byte little-endian length and its bytes. */
int store_save_batch(struct store *s, uint64_t seq, const struct sw_msgs *msgs)
{
	size_t len = strlen(BATCH_MAGIC) + msgs->n * 4 + msgs->bytes, off;
	uint8_t *buf;
	char name[64];
	int err;

	if (s->dir_fd < 0)
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
	err = write_atomic(s->dir_fd, name, buf, len);
	free(buf);
	if (err)
		store_failed(s, name, err);
	return err;
}

void store_forget_batch(const struct store *s, uint64_t seq)
{
	char name[64];

	if (!s || s->dir_fd < 0 || !seq)
		return;
	batch_name(name, sizeof(name), seq);
	if (unlinkat(s->dir_fd, name, 0) && errno != ENOENT)
		log_warn("ledger %s: cannot remove %s: %s", s->path, name, strerror(errno));
}

void store_drop_batch(const struct store *s, uint64_t seq)
{
	char name[64];

	batch_name(name, sizeof(name), seq);
	unlinkat(s->dir_fd, name, 0);
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

int store_load_batch(const struct store *s, uint64_t seq, struct sw_msgs *msgs)
{
	char name[64], *buf;
	size_t len;
	int err;

	batch_name(name, sizeof(name), seq);
	err = read_whole(s->dir_fd, name, BATCH_MAX, &buf, &len);
	if (!err)
		err = parse_batch((const uint8_t *)buf, len, msgs);
	free(buf);
	if (err) {
		log_warn("ledger %s: %s unreadable (%s), removed", s->path, name, strerror(-err));
		sw_msgs_free(msgs);
		unlinkat(s->dir_fd, name, 0);
	}
	return err;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

ssize_t store_list_batches(const struct store *s, uint64_t **out)
{
	int fd = dup(s->dir_fd);
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

int store_open(struct store *s, const char *state_dir, const char *oap, const char *pin_dir)
{
	uint64_t h = fnv1a(oap, 14695981039346656037ull);

	store_init(s);
	h = fnv1a(pin_dir ? pin_dir : "-", fnv1a("\n", h));
	snprintf(s->path, sizeof(s->path), "%s/agent-%016" PRIx64, state_dir, h);
	if ((mkdir(state_dir, 0700) && errno != EEXIST) || (mkdir(s->path, 0700) && errno != EEXIST))
		goto fail;
	s->dir_fd = open(s->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->dir_fd < 0)
		goto fail;
	s->lock_fd = openat(s->dir_fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->lock_fd < 0)
		goto fail;
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB)) {
		log_warn("ledger %s is in use by another aperture for the same OAP and pins: "
			 "this one runs without (a crash loses its unsent data)", s->path);
		store_close(s);
		return -EBUSY;
	}
	return 0;
fail:
	log_warn("ledger %s: %s; running without (a crash loses unsent data)", s->path, strerror(errno));
	store_close(s);
	return -errno;
}

void store_close(struct store *s)
{
	if (s->lock_fd >= 0)
		close(s->lock_fd);	/* releases the lock */
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	s->lock_fd = s->dir_fd = -1;
}
