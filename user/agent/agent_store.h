/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's directory on disk: one lock, files replaced atomically, and
 * the batch records (encoded uploads) kept until the OAP acknowledged them.
 * What the files mean is the callers' business: the store knows no agent.
 */
#ifndef AGENT_STORE_H
#define AGENT_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "skywalking.h"

/*
 * STATE_DIR/agent-HASH (HASH of the OAP and pin dir), locked while one
 * aperture uses it.  dir_fd < 0: no store this run.
 */
struct store {
	int dir_fd, lock_fd;
	char path[4096];
	bool failing;			/* a write failed: said once until one succeeds */
};

/* A store that is not open (store_close is safe on it). */
void store_init(struct store *s);
/* Creates and locks the directory for @oap and @pin_dir (NULL: none); -errno (logged) when there is none this run. */
int store_open(struct store *s, const char *state_dir, const char *oap, const char *pin_dir);
void store_close(struct store *s);
bool store_is_open(const struct store *s);
/* Replaces @name with @len bytes of @data, atomically; 0 (also with no store) or -errno, said once. */
int store_write(struct store *s, const char *name, const void *data, size_t len);
/* Writing @what failed with -@err: said once until a write succeeds. */
void store_failed(struct store *s, const char *what, int err);
/*
 * The whole of @name (NUL-terminated, malloc'd) in *@out, its size in *@len: a regular file of at
 * most @max_bytes, not through a link.  0 or -errno (-EFBIG: larger, -EINVAL: not a regular file).
 */
int store_read(const struct store *s, const char *name, size_t max_bytes, char **out, size_t *len);
/* A string from the OAP as one field of a text record: bytes that are not printable ASCII, and %, as %XX. */
void store_put_field(FILE *f, const char *s);
/* Such a field decoded in place: @s. */
char *store_field(char *s);

/* Saves the upload @msgs as batch @seq; 0 (also with no store) or -errno, said once. */
int store_save_batch(struct store *s, uint64_t seq, const struct sw_msgs *msgs);
/* Reads batch @seq into @msgs: 0, or -errno / -EBADMSG after saying so and removing it. */
int store_load_batch(const struct store *s, uint64_t seq, struct sw_msgs *msgs);
/* The batch numbers, sorted, in *@out (malloc'd); count or -errno. */
ssize_t store_list_batches(const struct store *s, uint64_t **out);
/* Removes batch @seq (0: none): acknowledged or given up; a failure is said. */
void store_forget_batch(const struct store *s, uint64_t seq);
/* Removes batch @seq quietly: one never committed. */
void store_drop_batch(const struct store *s, uint64_t seq);

/*
 * Tests only: APERTURE_TEST_CRASH=POINT:N kills the agent (SIGKILL) the N-th
 * time it passes POINT, to hit each window of the protocol on purpose.
 */
void test_crash_point(const char *point);

#endif /* AGENT_STORE_H */
