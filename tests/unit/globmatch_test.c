// SPDX-License-Identifier: GPL-2.0
/*
 * glob_match() (user/lib/globmatch.c) against glibc's fnmatch(pat, s, 0):
 * `globmatch_test PATTERN STRING` prints 1 or 0; `globmatch_test random SEED
 * N` compares N random patterns and strings, built from plain bytes (no bare
 * [) and bracket pieces, well formed or not, and prints the count that differ
 * (and the first few).  A bare [ as a range's end point parses differently in
 * glibc once the bracket has matched: not compared.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "globmatch.h"

static const char plain[] = "ab.-/*?]!^\\:A1 ";
static const char *const pieces[] = {
	"[:alpha:]", "[:digit:]", "[:bogus:]", "[.a.]", "[=b=]", "[!", "[^", "]", "-", "*", "?",
	"\\", "[a-c]", "[]a]", "[!]]", "[[:upper:][:digit:]]",
};

int main(int argc, char **argv)
{
	long n, differ = 0;

	if (argc == 3) {
		printf("%d\n", glob_match(argv[1], argv[2]));
		return 0;
	}
	if (argc != 4 || strcmp(argv[1], "random"))
		return 2;
	srand((unsigned)atoi(argv[2]));
	n = atol(argv[3]);
	for (long i = 0; i < n; i++) {
		char pat[40] = "", s[16] = "";
		int plen = rand() % 8, slen = rand() % 8;

		for (int j = 0; j < plen; j++) {
			size_t len = strlen(pat);

			if (rand() % 4 == 0) {
				const char *piece = pieces[rand() % (sizeof(pieces) / sizeof(pieces[0]))];

				if (len + strlen(piece) < sizeof(pat))
					strcat(pat, piece);
			} else if (len + 1 < sizeof(pat)) {
				pat[len] = plain[rand() % (sizeof(plain) - 1)];
			}
		}
		for (int j = 0; j < slen; j++)
			s[j] = "ab.-/*?[]!^\\:A1 "[rand() % 16];
		if (glob_match(pat, s) != (fnmatch(pat, s, 0) == 0) && differ++ < 5)
			printf("differ: pattern '%s' string '%s': ours %d\n", pat, s, glob_match(pat, s));
	}
	printf("%ld\n", differ);
	return 0;
}
