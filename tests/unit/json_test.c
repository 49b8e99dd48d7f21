// SPDX-License-Identifier: GPL-2.0
/*
 * json_parse() (user/lib/json.c): reads one JSON text on stdin and prints it
 * back as compact JSON (object members in order, strings with \u escapes for
 * control bytes), or "error: WHAT at OFFSET".  tests/unit/json.t compares
 * the output with Python's json module on the same texts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"

static void put_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void put_value(const struct json *j)
{
	switch (j->type) {
	case JSON_NULL: printf("null"); break;
	case JSON_BOOL: printf(j->num ? "true" : "false"); break;
	case JSON_NUMBER: printf("%.17g", j->num); break;
	case JSON_STRING: put_string(j->str); break;
	case JSON_ARRAY:
	case JSON_OBJECT:
		putchar(j->type == JSON_ARRAY ? '[' : '{');
		for (const struct json *c = j->child; c; c = c->next) {
			if (c != j->child)
				putchar(',');
			if (j->type == JSON_OBJECT) {
				put_string(c->key);
				putchar(':');
			}
			put_value(c);
		}
		putchar(j->type == JSON_ARRAY ? ']' : '}');
		break;
	}
}

int main(void)
{
	static char buf[8 << 20];
	size_t len = fread(buf, 1, sizeof(buf), stdin), at = 0;
	const char *err = NULL;
	struct json *j = json_parse(buf, len, &err, &at);

	if (!j) {
		printf("error: %s at %zu\n", err ? err : "?", at);
		return 1;
	}
	put_value(j);
	putchar('\n');
	json_free(j);
	return 0;
}
