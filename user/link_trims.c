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
 * mbedTLS's X.509 self test (never called) refers to its built-in test
 * certificates, 54 KB of certs.c.
 */
const char *mbedtls_test_ca_crt = "";
const size_t mbedtls_test_ca_crt_len = 0;
const char *mbedtls_test_cli_crt = "";
const size_t mbedtls_test_cli_crt_len = 0;
