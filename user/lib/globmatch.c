// SPDX-License-Identifier: GPL-2.0
/* Shell patterns matched byte by byte, as fnmatch() in the C locale (globmatch.h). */
#include <ctype.h>
#include <string.h>
#include "globmatch.h"

static int class_match(const char *name, size_t len, unsigned char c)
{
	static const struct {
		const char *name;
		int (*is)(int);
	} classes[] = {
		{ "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank }, { "cntrl", iscntrl },
		{ "digit", isdigit }, { "graph", isgraph }, { "lower", islower }, { "print", isprint },
		{ "punct", ispunct }, { "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit },
	};

	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (strlen(classes[i].name) == len && !memcmp(classes[i].name, name, len))
			return classes[i].is(c) != 0;
	return -1;
}

/*
 * One byte of a bracket expression at *@p (a [.c.], a [=c=] unless @range_end,
 * an escaped byte, or a plain one), advancing *@p; *@equiv tells a [=c=],
 * which starts no range.  -1 when the pattern ends there.
 */
static int bracket_byte(const char **p, bool range_end, bool *equiv)
{
	const char *q = *p;

	*equiv = false;
	if (q[0] == '[' && (q[1] == '.' || (q[1] == '=' && !range_end)) && q[2] && q[3] == q[1] && q[4] == ']') {
		*p = q + 5;
		*equiv = q[1] == '=';
		return (unsigned char)q[2];
	}
	if (q[0] == '\\' && q[1]) {
		*p = q + 2;
		return (unsigned char)q[1];
	}
	if (!q[0])
		return -1;
	*p = q + 1;
	return (unsigned char)q[0];
}

/*
 * The bracket expression after a [ at @p against @c: 1 or 0, its end in
 * *@end; -1 when it is not one (no closing ]: the [ is a plain byte); -2
 * when it names an unknown class before anything matched, or a collating
 * symbol that is not one byte (nothing matches, as with fnmatch).
 */
static int bracket(const char *p, unsigned char c, const char **end)
{
	const char *first;
	bool negate = false, match = false, equiv;

	if (*p == '!' || *p == '^') {
		negate = true;
		p++;
	}
	first = p;
	while (*p != ']' || p == first) {
		int lo, hi;

		if (p[0] == '[' && p[1] == ':') {
			const char *name = p + 2, *q = name;
			int m;

			while (*q >= 'a' && *q <= 'y')
				q++;
			if (q[0] == ':' && q[1] == ']') {
				m = class_match(name, (size_t)(q - name), c);
				if (m < 0 && !match)
					return -2;	/* an unknown class, met before a match */
				match |= m > 0;
				p = q + 2;
				continue;
			}
			/* not a class name: the [ is a plain byte */
		} else if (p[0] == '[' && p[1] == '.' && !(p[2] && p[3] == '.' && p[4] == ']')) {
			return -2;	/* a collating symbol of more than one byte, or unclosed */
		}
		lo = hi = bracket_byte(&p, false, &equiv);
		if (lo < 0)
			return -1;
		if (!equiv && p[0] == '-' && p[1] && p[1] != ']') {
			p++;
			hi = bracket_byte(&p, true, &equiv);
			if (hi < 0)
				return -1;
		}
		if (lo <= c && c <= hi)
			match = true;
	}
	*end = p + 1;
	return match != negate;
}

bool glob_match(const char *pat, const char *s)
{
	const char *star_pat = NULL, *star_s = NULL;

	for (;;) {
		bool ok;

		if (*pat == '*') {
			while (*pat == '*')
				pat++;
			star_pat = pat;
			star_s = s;
			continue;
		}
		if (!*s)
			return !*pat;
		if (*pat == '?') {
			ok = true;
			pat++;
		} else if (*pat == '[') {
			const char *end;
			int m = bracket(pat + 1, (unsigned char)*s, &end);

			if (m == -2)
				return false;
			ok = m < 0 ? *s == '[' : m;
			pat = m < 0 ? pat + 1 : end;
		} else if (*pat == '\\') {
			if (!pat[1])
				return false;
			ok = pat[1] == *s;
			pat += 2;
		} else {
			ok = *pat == *s;
			pat++;
		}
		if (ok) {
			s++;
			continue;
		}
		if (!star_pat || !*star_s)
			return false;
		pat = star_pat;
		s = ++star_s;
	}
}
