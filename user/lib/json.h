/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small JSON reader: text into a tree, bounded in depth and size, for the
 * little JSON the OAP sends (continuous profiling policies).  No writer.
 */
#ifndef JSON_H
#define JSON_H

#include <stddef.h>

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json {
	enum json_type type;
	char *key;		/* the member's name, inside an object */
	char *str;		/* JSON_STRING */
	double num;		/* JSON_NUMBER; JSON_BOOL: 0 or 1 */
	struct json *child;	/* JSON_ARRAY, JSON_OBJECT: the first element */
	struct json *next;	/* the next element of the parent */
};

/* Nesting and element caps: past them the text is refused. */
#define JSON_MAX_DEPTH 32
#define JSON_MAX_NODES 100000

/*
 * Parses @len bytes of @text (one value, whitespace around it).  The tree,
 * or NULL with *@err (static text, may be NULL) saying what is wrong and
 * *@at (may be NULL) the byte offset.
 */
struct json *json_parse(const char *text, size_t len, const char **err, size_t *at);
void json_free(struct json *j);
/* @obj's member @key, compared without case (as Go's encoding/json does); NULL if none. */
const struct json *json_member(const struct json *obj, const char *key);

#endif /* JSON_H */
