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
 * A stand-in's prototype is (void): none has a caller that can run (each group
 * says why), and what it returns is the real function's failure.  The error
 * codes are those of mbedtls/{cipher,md,dhm,ssl,pkcs5,pkcs12}.h, whose
 * prototypes these definitions must not see.
 */
#define MBEDTLS_ERR_CIPHER_FEATURE_UNAVAILABLE	-0x6080
#define MBEDTLS_ERR_MD_FEATURE_UNAVAILABLE	-0x5080
#define MBEDTLS_ERR_DHM_BAD_INPUT_DATA		-0x3080
#define MBEDTLS_ERR_SSL_FEATURE_UNAVAILABLE	-0x7080
#define MBEDTLS_ERR_PKCS5_FEATURE_UNAVAILABLE	-0x2e80
#define MBEDTLS_ERR_PKCS12_FEATURE_UNAVAILABLE	-0x1f00
#define TRIM_ALIAS(fn, to) int fn(void) __attribute__((alias(#to)));
static int cipher_unavailable(void) { return MBEDTLS_ERR_CIPHER_FEATURE_UNAVAILABLE; }
static int md_unavailable(void) { return MBEDTLS_ERR_MD_FEATURE_UNAVAILABLE; }
static int dhm_unavailable(void) { return MBEDTLS_ERR_DHM_BAD_INPUT_DATA; }
static int ssl_unavailable(void) { return MBEDTLS_ERR_SSL_FEATURE_UNAVAILABLE; }
static int pkcs5_unavailable(void) { return MBEDTLS_ERR_PKCS5_FEATURE_UNAVAILABLE; }
static int pkcs12_unavailable(void) { return MBEDTLS_ERR_PKCS12_FEATURE_UNAVAILABLE; }
static void nothing(void) { }
static int minus_one(void) { return -1; }
static void *null_ptr(void) { return NULL; }
#define TRIM_PTR(fn) void *fn(void) __attribute__((alias("null_ptr")));
#define TRIM_VOID(fn) void fn(void) __attribute__((alias("nothing")));

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
 * libdw: the CFI code needs __libdw_intern_expression() (DW_CFA_*_expression)
 * from dwarf_getlocation.o, whose other functions read DIE attributes (a
 * variable's location) and link the whole CU, abbreviation and range
 * machinery, about 45 KB.  aperture opens no DWARF debug info (only CFI:
 * dwarf_getcfi_elf), so no Dwarf_Attribute ever reaches them; these are what
 * they call, and __libdw_intern_expression() calls none of them.
 */
TRIM_PTR(__libdw_find_split_unit) TRIM_PTR(dwarf_attr)
TRIM_ALIAS(__libdw_formptr, minus_one) TRIM_ALIAS(__libdw_read_begin_end_pair_inc, minus_one)
TRIM_ALIAS(dwarf_formaddr, minus_one) TRIM_ALIAS(dwarf_formblock, minus_one) TRIM_ALIAS(dwarf_formudata, minus_one)
TRIM_ALIAS(dwarf_lowpc, minus_one)

/*
 * mbedTLS's X.509 self test (never called) refers to its built-in test
 * certificates, 54 KB of certs.c.
 */
const char *mbedtls_test_ca_crt = "";
const size_t mbedtls_test_ca_crt_len = 0;
const char *mbedtls_test_cli_crt = "";
const size_t mbedtls_test_cli_crt_len = 0;

/*
 * mbedTLS, as Debian builds it, has every cipher and hash in its tables
 * (cipher_wrap.c, md.c): each table entry links that algorithm's object.
 * aperture's TLS client (net/tls.c) offers only ECDHE suites with
 * AES-GCM, ChaCha20-Poly1305 and AES-CBC, so the objects below are never
 * run; these stand-ins fail (or, for init/free of a context they never
 * fill, do nothing), about 90 KB in all.  Each group says why it is dead.
 */

/*
 * Ciphers of no suite offered: 3DES/DES (also PEM keys encrypted with it,
 * which need a password: aperture has none to give, so pem.c stops first),
 * Camellia, Blowfish, RC4 (also PKCS#12 RC4 keys, same), CCM.
 */
TRIM_VOID(mbedtls_des_init) TRIM_VOID(mbedtls_des_free) TRIM_VOID(mbedtls_des3_init) TRIM_VOID(mbedtls_des3_free)
TRIM_ALIAS(mbedtls_des_setkey_enc, cipher_unavailable) TRIM_ALIAS(mbedtls_des_setkey_dec, cipher_unavailable)
TRIM_ALIAS(mbedtls_des_crypt_ecb, cipher_unavailable) TRIM_ALIAS(mbedtls_des_crypt_cbc, cipher_unavailable)
TRIM_ALIAS(mbedtls_des3_set2key_enc, cipher_unavailable) TRIM_ALIAS(mbedtls_des3_set2key_dec, cipher_unavailable)
TRIM_ALIAS(mbedtls_des3_set3key_enc, cipher_unavailable) TRIM_ALIAS(mbedtls_des3_set3key_dec, cipher_unavailable)
TRIM_ALIAS(mbedtls_des3_crypt_ecb, cipher_unavailable) TRIM_ALIAS(mbedtls_des3_crypt_cbc, cipher_unavailable)
TRIM_VOID(mbedtls_camellia_init) TRIM_VOID(mbedtls_camellia_free)
TRIM_ALIAS(mbedtls_camellia_setkey_enc, cipher_unavailable) TRIM_ALIAS(mbedtls_camellia_setkey_dec, cipher_unavailable)
TRIM_ALIAS(mbedtls_camellia_crypt_ecb, cipher_unavailable) TRIM_ALIAS(mbedtls_camellia_crypt_cbc, cipher_unavailable)
TRIM_ALIAS(mbedtls_camellia_crypt_cfb128, cipher_unavailable) TRIM_ALIAS(mbedtls_camellia_crypt_ctr, cipher_unavailable)
TRIM_VOID(mbedtls_blowfish_init) TRIM_VOID(mbedtls_blowfish_free)
TRIM_ALIAS(mbedtls_blowfish_setkey, cipher_unavailable) TRIM_ALIAS(mbedtls_blowfish_crypt_ecb, cipher_unavailable)
TRIM_ALIAS(mbedtls_blowfish_crypt_cbc, cipher_unavailable) TRIM_ALIAS(mbedtls_blowfish_crypt_cfb64, cipher_unavailable)
TRIM_ALIAS(mbedtls_blowfish_crypt_ctr, cipher_unavailable)
TRIM_VOID(mbedtls_arc4_init) TRIM_VOID(mbedtls_arc4_free) TRIM_VOID(mbedtls_arc4_setup)
TRIM_ALIAS(mbedtls_arc4_crypt, cipher_unavailable)
TRIM_VOID(mbedtls_ccm_init) TRIM_VOID(mbedtls_ccm_free)
TRIM_ALIAS(mbedtls_ccm_setkey, cipher_unavailable) TRIM_ALIAS(mbedtls_ccm_auth_decrypt, cipher_unavailable)
TRIM_ALIAS(mbedtls_ccm_encrypt_and_tag, cipher_unavailable)

/*
 * MD2, MD4, RIPEMD-160: no suite's MAC or PRF; certificates signed with them
 * are refused by the default X.509 profile (SHA-2 only) before any hashing
 * matters, so such a chain fails either way.
 */
#define TRIM_MD(h) TRIM_VOID(mbedtls_##h##_init) TRIM_VOID(mbedtls_##h##_free) TRIM_VOID(mbedtls_##h##_clone) \
	TRIM_ALIAS(mbedtls_##h##_starts_ret, md_unavailable) TRIM_ALIAS(mbedtls_##h##_update_ret, md_unavailable) \
	TRIM_ALIAS(mbedtls_##h##_finish_ret, md_unavailable) TRIM_ALIAS(mbedtls_##h##_ret, md_unavailable) \
	TRIM_ALIAS(mbedtls_internal_##h##_process, md_unavailable)
TRIM_MD(md2)
TRIM_MD(md4)
TRIM_MD(ripemd160)

/* Finite-field DH: only the DHE suites, none offered (the handshake's init/free of its unused context stay harmless). */
TRIM_VOID(mbedtls_dhm_init) TRIM_VOID(mbedtls_dhm_free)
TRIM_ALIAS(mbedtls_dhm_read_params, dhm_unavailable) TRIM_ALIAS(mbedtls_dhm_make_public, dhm_unavailable)
TRIM_ALIAS(mbedtls_dhm_calc_secret, dhm_unavailable)

/* The server side of the handshake: aperture's every configuration is MBEDTLS_SSL_IS_CLIENT. */
TRIM_ALIAS(mbedtls_ssl_handshake_server_step, ssl_unavailable)

/* Encrypted PKCS#8 keys: pkparse.c asks for a password first, and aperture passes none. */
TRIM_ALIAS(mbedtls_pkcs5_pbes2, pkcs5_unavailable)
TRIM_ALIAS(mbedtls_pkcs12_pbe, pkcs12_unavailable) TRIM_ALIAS(mbedtls_pkcs12_pbe_sha1_rc4_128, pkcs12_unavailable)

/* Debug output: printed only through a callback set by mbedtls_ssl_conf_dbg(), which aperture never sets. */
TRIM_VOID(mbedtls_debug_print_msg) TRIM_VOID(mbedtls_debug_print_ret) TRIM_VOID(mbedtls_debug_print_buf)
TRIM_VOID(mbedtls_debug_print_mpi) TRIM_VOID(mbedtls_debug_print_crt) TRIM_VOID(mbedtls_debug_printf_ecdh)

/*
 * libbpf: the light-skeleton loader generator (gen_loader.c, reached only
 * through bpf_object__gen_loader(), which bpftool calls and aperture does
 * not: obj->gen_loader stays NULL) and the USDT manager (usdt.c, reached
 * only by attaching a usdt/ program, of which aperture's objects have none).
 * libbpf frees both unconditionally on close, with NULL here: a no-op.
 * Should a usdt/ program appear, its attach fails with EOPNOTSUPP.
 */
#define LIBBPF_ERR_PTR(err) ((void *)(long)(err))
TRIM_VOID(bpf_gen__init) TRIM_VOID(bpf_gen__free) TRIM_VOID(bpf_gen__load_btf)
TRIM_VOID(bpf_gen__map_create) TRIM_VOID(bpf_gen__map_freeze) TRIM_VOID(bpf_gen__map_update_elem)
TRIM_VOID(bpf_gen__populate_outer_map) TRIM_VOID(bpf_gen__prog_load) TRIM_VOID(bpf_gen__record_attach_target)
TRIM_VOID(bpf_gen__record_extern) TRIM_VOID(bpf_gen__record_relo_core)
int bpf_gen__finish(void);
int bpf_gen__finish(void) { return -95; /* -EOPNOTSUPP */ }
void *usdt_manager_new(void);
void *usdt_manager_new(void) { return LIBBPF_ERR_PTR(-95); }
TRIM_VOID(usdt_manager_free)
void *usdt_manager_attach_usdt(void);
void *usdt_manager_attach_usdt(void) { return LIBBPF_ERR_PTR(-95); }

/*
 * libiberty: cplus_demangle() with DMGL_AUTO tries Rust and then the C++ ABI;
 * the D demangler runs only under DMGL_DLANG, which aperture never asks for
 * (nor does it pass _D names: symbolizer_demangle_name() takes _Z and _R).
 */
char *dlang_demangle(void);
char *dlang_demangle(void) { return NULL; }
