// SPDX-License-Identifier: GPL-2.0
/*
 * Stand-ins for library objects that aperture never runs but would link,
 * for size (an edge binary; `make size`).  Linked as an object before the
 * static libraries, so that the linker finds these definitions first and
 * does not pull the real objects out of the archives.  Should a library
 * ever need one of those objects for something else, the link fails with a
 * duplicate symbol: loud, never a silent change.
 */
#include <stddef.h>
#include <mbedtls/certs.h>

/*
 * libdw's ebl backends (pulled in for CFI and symbol lookups) point at their
 * architectures' disassemblers, about 100 KB of tables; aperture never
 * disassembles.  The real functions take (Ebl *, const uint8_t **, ...): no
 * caller here, and -1 is their failure value.
 */
int i386_disasm(void);
int x86_64_disasm(void);
int riscv_disasm(void);
int bpf_disasm(void);
int i386_disasm(void) { return -1; }
int x86_64_disasm(void) { return -1; }
int riscv_disasm(void) { return -1; }
int bpf_disasm(void) { return -1; }

/*
 * libebl's table of machines (eblopenbackend.o) names every architecture's
 * backend init, and each pulls its register, relocation, core-note and CFI
 * tables: about 125 KB for machines aperture never meets.  It reads the CFI
 * of the processes of the machine it runs on (and of their 32-bit
 * compatibility code), so only those backends stay.  The real inits return
 * NULL when they do not take the file; libebl then fills in its generic
 * defaults, so an ELF file of another machine still opens, without the
 * architecture's hooks (which aperture would not use on it).
 */
#if defined(__x86_64__) || defined(__aarch64__)
#define NO_BACKEND(arch) \
	void *arch##_init(void *elf, unsigned short machine, void *ebl); \
	void *arch##_init(void *elf, unsigned short machine, void *ebl) { return NULL; }
NO_BACKEND(sh)
NO_BACKEND(ia64)
NO_BACKEND(alpha)
NO_BACKEND(sparc)
NO_BACKEND(ppc)
NO_BACKEND(ppc64)
NO_BACKEND(s390)
NO_BACKEND(m68k)
NO_BACKEND(bpf)
NO_BACKEND(riscv)
NO_BACKEND(csky)
#ifdef __x86_64__
NO_BACKEND(arm)
NO_BACKEND(aarch64)
#else
NO_BACKEND(i386)
NO_BACKEND(x86_64)
#endif
#endif

/*
 * mbedTLS's X.509 self test (never called) refers to its built-in test
 * certificates, 54 KB of certs.c.
 */
const char *mbedtls_test_ca_crt = "";
const size_t mbedtls_test_ca_crt_len = 0;
const char *mbedtls_test_cli_crt = "";
const size_t mbedtls_test_cli_crt_len = 0;
