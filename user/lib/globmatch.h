/* SPDX-License-Identifier: GPL-2.0 */
/* Shell pattern matching without glibc's fnmatch() (the --exe-pattern and config globs). */
#ifndef GLOBMATCH_H
#define GLOBMATCH_H

#include <stdbool.h>

/*
 * Whether @s matches the shell pattern @pat: fnmatch(pat, s, 0) in the C
 * locale, byte by byte.  *, ? and [...] (ranges, ! or ^, [:class:], [.c.]
 * and [=c=] of one byte, \ escapes) match any byte, '/' and a leading '.'
 * included; an unclosed [ is itself; a trailing \ matches nothing.  Ours
 * because glibc's fnmatch() links its wide-character and collation
 * machinery (about 35 KB) for the multibyte locales aperture never sets.
 */
bool glob_match(const char *pat, const char *s);

#endif /* GLOBMATCH_H */
