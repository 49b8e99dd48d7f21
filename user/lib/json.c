// SPDX-License-Identifier: GPL-2.0
/*
 * A small JSON reader: text into a tree, bounded in depth and size.  The
 * text comes from the network: every read is checked against the end, and
 * nesting and the number of elements are capped.
 */
#include <errno.h>
#include <float.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "json.h"

struct reader {
	const char *p, *end, *start;
	size_t nodes;
	const char *err;
};

static struct json *parse_value(struct reader *r, int depth);

static void skip_space(struct reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

static bool fail(struct reader *r, const char *why)
{
	if (!r->err)
		r->err = why;
	return false;
}

static struct json *new_node(struct reader *r, enum json_type type)
{
	struct json *j;

	if (++r->nodes > JSON_MAX_NODES) {
		fail(r, "too many elements");
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		fail(r, "out of memory");
	else
		j->type = type;
	return j;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits after "\u"; -1 when they are not. */
static long read_hex4(struct reader *r)
{
	long v = 0;

	if (r->end - r->p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		int d = hex_value(r->p[i]);

		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	r->p += 4;
	return v;
}

static char *put_utf8(char *o, unsigned long cp)
{
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | (cp >> 6));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | (cp >> 12));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | (cp >> 18));
		*o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

/* "\uXXXX" (a surrogate pair as one code point) after the backslash and 'u'. */
static bool read_unicode(struct reader *r, char **o)
{
	long cp = read_hex4(r), low;

	if (cp < 0)
		return fail(r, "bad \\u escape");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
			return fail(r, "lone surrogate");
		r->p += 2;
		low = read_hex4(r);
		if (low < 0xdc00 || low > 0xdfff)
			return fail(r, "bad surrogate pair");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
	}
	*o = put_utf8(*o, (unsigned long)cp);
	return true;
}

/* A string after its opening quote; malloc'd, or NULL. Escapes never grow the text. */
static char *parse_string(struct reader *r)
{
	const char *close = r->p;
	char *out, *o;

	while (close < r->end && *close != '"')
		close += *close == '\\' ? 2 : 1;
	if (close >= r->end) {
		fail(r, "unterminated string");
		return NULL;
	}
	out = o = malloc((size_t)(close - r->p) + 1);
	if (!out) {
		fail(r, "out of memory");
		return NULL;
	}
	while (r->p < close) {
		char c = *r->p++;

		if ((unsigned char)c < 0x20)
			goto bad;
		if (c != '\\') {
			*o++ = c;
			continue;
		}
		c = *r->p++;
		switch (c) {
		case '"': case '\\': case '/': *o++ = c; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u':
			if (!read_unicode(r, &o))
				goto bad;
			break;
		default:
			goto bad;
		}
	}
	*o = '\0';
	r->p = close + 1;
	return out;
bad:
	fail(r, "bad string");
	free(out);
	return NULL;
}

static size_t digits(const char *s, size_t i, size_t n)
{
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	return i;
}

/* Whether @s (@n bytes) is a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool number_grammar(const char *s, size_t n)
{
	size_t i = s[0] == '-', d;

	if (i >= n || s[i] < '0' || s[i] > '9')
		return false;
	i = s[i] == '0' ? i + 1 : digits(s, i, n);
	if (i < n && s[i] == '.') {
		d = digits(s, i + 1, n);
		if (d == i + 1)
			return false;
		i = d;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i += 1 + (i + 1 < n && (s[i + 1] == '+' || s[i + 1] == '-'));
		d = digits(s, i, n);
		if (d == i)
			return false;
		i = d;
	}
	return i == n;
}

static bool parse_number(struct reader *r, struct json *j)
{
	char buf[64], *endp;
	size_t n = 0;

	while (r->p + n < r->end && n < sizeof(buf) - 1 && strchr("+-0123456789.eE", r->p[n]))
		n++;
	memcpy(buf, r->p, n);
	buf[n] = '\0';
	if (n == 0 || !number_grammar(buf, n))
		return fail(r, "bad number");
	j->num = strtod(buf, &endp);
	if (*endp)
		return fail(r, "bad number");
	if (j->num > DBL_MAX || j->num < -DBL_MAX)
		return fail(r, "number out of range");	/* what no policy means: infinity */
	r->p += n;
	return true;
}

static bool literal(struct reader *r, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n))
		return fail(r, "unexpected character");
	r->p += n;
	return true;
}

/* Elements of an array or members of an object, after its opening bracket. */
static bool parse_elements(struct reader *r, struct json *j, int depth)
{
	char close = j->type == JSON_ARRAY ? ']' : '}';
	struct json **tail = &j->child;

	skip_space(r);
	if (r->p < r->end && *r->p == close) {
		r->p++;
		return true;
	}
	for (;;) {
		char *key = NULL;

		skip_space(r);
		if (j->type == JSON_OBJECT) {
			if (r->p >= r->end || *r->p != '"')
				return fail(r, "expected a member name");
			r->p++;
			key = parse_string(r);
			skip_space(r);
			if (!key || r->p >= r->end || *r->p != ':') {
				free(key);
				return fail(r, "expected ':'");
			}
			r->p++;
		}
		*tail = parse_value(r, depth + 1);
		if (!*tail) {
			free(key);
			return false;
		}
		(*tail)->key = key;
		tail = &(*tail)->next;
		skip_space(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		if (r->p < r->end && *r->p == close) {
			r->p++;
			return true;
		}
		return fail(r, "expected ',' or a closing bracket");
	}
}

static struct json *parse_value(struct reader *r, int depth)
{
	struct json *j = NULL;
	bool ok = false;

	if (depth > JSON_MAX_DEPTH) {
		fail(r, "nested too deep");
		return NULL;
	}
	skip_space(r);
	if (r->p >= r->end) {
		fail(r, "unexpected end");
		return NULL;
	}
	switch (*r->p) {
	case '{':
	case '[':
		j = new_node(r, *r->p == '{' ? JSON_OBJECT : JSON_ARRAY);
		r->p++;
		ok = j && parse_elements(r, j, depth);
		break;
	case '"':
		j = new_node(r, JSON_STRING);
		r->p++;
		ok = j && (j->str = parse_string(r)) != NULL;
		break;
	case 't':
	case 'f':
		j = new_node(r, JSON_BOOL);
		if (j)
			j->num = *r->p == 't';
		ok = j && literal(r, j->num ? "true" : "false");
		break;
	case 'n':
		j = new_node(r, JSON_NULL);
		ok = j && literal(r, "null");
		break;
	default:
		j = new_node(r, JSON_NUMBER);
		ok = j && parse_number(r, j);
		break;
	}
	if (!ok) {
		json_free(j);
		return NULL;
	}
	return j;
}

struct json *json_parse(const char *text, size_t len, const char **err, size_t *at)
{
	struct reader r = { .p = text, .end = text + len, .start = text };
	struct json *j = parse_value(&r, 0);

	skip_space(&r);
	if (j && r.p != r.end) {
		fail(&r, "text after the value");
		json_free(j);
		j = NULL;
	}
	if (err)
		*err = j ? NULL : r.err;
	if (at)
		*at = (size_t)(r.p - r.start);
	return j;
}

void json_free(struct json *j)
{
	while (j) {
		struct json *next = j->next;

		json_free(j->child);
		free(j->key);
		free(j->str);
		free(j);
		j = next;
	}
}

const struct json *json_member(const struct json *obj, const char *key)
{
	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (const struct json *m = obj->child; m; m = m->next)
		if (m->key && !strcasecmp(m->key, key))
			return m;
	return NULL;
}
