// SPDX-License-Identifier: GPL-2.0
/*
 * Recognising a CPython process and finding the numbers its frames are
 * read with (see cpython.h).  Everything here is read from files and memory
 * the profiled process controls: files are opened through map_files, must
 * be regular and are read through libelf with bounds; memory through
 * process_vm_readv, which fails cleanly on a bad address.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "cpython.h"
#include "elfscan.h"
#include "procmaps.h"
#include "safe_open.h"
#include "python_tables.h"

/*
 * Offsets per minor version, for x86_64 release (non-debug, GIL) builds,
 * read with gdb from the DWARF of pyenv's builds (3.8.18, 3.9.18, 3.10.13,
 * 3.11.7, 3.12.1, 3.13.0) and matching the structs of CPython's sources at
 * those tags: Include/internal/pycore_runtime.h (_PyRuntimeState,
 * gilstate.autoTSSkey before 3.12), Include/cpython/pystate.h
 * (PyThreadState), Include/cpython/frameobject.h and
 * Include/internal/pycore_frame.h (frames), Include/cpython/code.h
 * (PyCodeObject), Include/cpython/unicodeobject.h (PyASCIIObject).
 * 3.13 takes its own _Py_DebugOffsets instead (all but autoTSSkey).
 */
struct version_table {
	int minor;
	int layout;
	struct cpython_offsets off;
};

static const struct version_table tables[] = {
	{ 8, PY_LAYOUT_FRAME_OBJECT, { .runtime_tss = 1392, .ts_thread_id = 176, .ts_frame = 24,
	  .frame_back = 24, .frame_code = 32, .frame_instr = 104, .co_filename = 104, .co_name = 112,
	  .co_firstlineno = 40, .co_linetable = 120, .ascii_size = 48, .compact_size = 72 } },
	{ 9, PY_LAYOUT_FRAME_OBJECT, { .runtime_tss = 584, .ts_thread_id = 176, .ts_frame = 24,
	  .frame_back = 24, .frame_code = 32, .frame_instr = 104, .co_filename = 104, .co_name = 112,
	  .co_firstlineno = 40, .co_linetable = 120, .ascii_size = 48, .compact_size = 72 } },
	{ 10, PY_LAYOUT_FRAME_OBJECT, { .runtime_tss = 584, .ts_thread_id = 176, .ts_frame = 24,
	  .frame_back = 24, .frame_code = 32, .frame_instr = 96, .co_filename = 104, .co_name = 112,
	  .co_firstlineno = 40, .co_linetable = 120, .ascii_size = 48, .compact_size = 72 } },
	{ 11, PY_LAYOUT_CFRAME_ENTRY, { .runtime_tss = 592, .ts_thread_id = 152, .ts_frame = 56,
	  .cframe_current = 8, .frame_back = 48, .frame_code = 32, .frame_instr = 56, .frame_entry = 68,
	  .co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 72,
	  .co_linetable = 136, .co_code_adaptive = 184, .ascii_size = 48, .compact_size = 72 } },
	{ 12, PY_LAYOUT_CFRAME_OWNER, { .runtime_tss = 1544, .ts_thread_id = 136, .ts_frame = 56,
	  .cframe_current = 0, .frame_back = 8, .frame_code = 0, .frame_instr = 56, .frame_entry = 70,
	  .co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
	  .co_linetable = 136, .co_code_adaptive = 192, .ascii_size = 40, .compact_size = 56 } },
	{ 13, PY_LAYOUT_CURRENT_OWNER, { .runtime_tss = 2160, .ts_thread_id = 152, .ts_frame = 72,
	  .frame_back = 8, .frame_code = 0, .frame_instr = 56, .frame_entry = 70,
	  .co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
	  .co_linetable = 136, .co_code_adaptive = 200, .ascii_size = 40, .compact_size = 56 } },
};

#define MAX_ELF_BYTES (512ull << 20)
#define TP_MEMBERS 240		/* PyTypeObject.tp_members, 3.8-3.13 */
#define MEMBER_DEF_SIZE 40	/* PyMemberDef: name, type, offset, flags, doc */
#define MAX_MEMBERS 64

static void say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

bool cpython_read(uint32_t tgid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	return addr && process_vm_readv((pid_t)tgid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* ---- the file ---- */

struct pyfile {
	char path[256];			/* as in the maps */
	uint64_t start, end, offset;	/* the first mapping of it */
	uint64_t ino;			/* as the maps line says */
	uint64_t base;			/* the lowest mapping's start: the load bias of a PIE or library */
	int minor;
	char flavour;			/* '.' or '\0' release, 't' free-threaded, 'd' debug */
	bool library;
};

/* "libpython3.11.so.1.0" or "python3.11": the minor and what follows it. */
static bool name_version(const char *base, bool *library, int *minor, char *flavour)
{
	int n = 0;

	if (sscanf(base, "libpython3.%d%n", minor, &n) == 1 && n)
		*library = true;
	else if (sscanf(base, "python3.%d%n", minor, &n) == 1 && n)
		*library = false;
	else
		return false;
	*flavour = base[n];
	if (*library)
		return *flavour == '.' || ((*flavour == 't' || *flavour == 'd') && base[n + 1] == '.');
	return *flavour == '\0' || ((*flavour == 't' || *flavour == 'd') && base[n + 1] == '\0');
}

/* find_file()'s maps_each() callback: the first mapping of each kind of python file. */
struct pyfiles {
	struct pyfile *lib, *exe;
};

static int pyfile_line(const struct maps_line *ml, void *ctx)
{
	struct pyfiles *files = ctx;
	const char *base;
	struct pyfile *pf;
	bool library;
	char flavour;
	int minor;

	if (!maps_line_is_file(ml))
		return 0;
	base = strrchr(ml->path, '/') + 1;
	if (!name_version(base, &library, &minor, &flavour))
		return 0;
	pf = library ? files->lib : files->exe;
	if (pf->path[0])
		return 0;	/* the first such file wins (later mappings of it too) */
	snprintf(pf->path, sizeof(pf->path), "%s", ml->path);
	pf->start = ml->start;
	pf->end = ml->end;
	pf->offset = ml->offset;
	pf->ino = ml->ino;
	pf->base = ml->start - ml->offset;
	pf->minor = minor;
	pf->flavour = flavour;
	pf->library = library;
	return 0;
}

/* Every mapping of a python file: a library beats the executable (pyenv's python3 maps libpython). */
static int find_file(uint32_t tgid, struct pyfile *lib, struct pyfile *exe)
{
	struct pyfiles files = { .lib = lib, .exe = exe };
	FILE *f = proc_maps_open(tgid);

	if (!f)
		return -ESRCH;
	maps_each(f, pyfile_line, &files);
	fclose(f);
	return 0;
}

/* The mapped file, opened as every file a process names is (lib/safe_open.c), and the one mapped. */
static int open_mapped_file(uint32_t tgid, const struct pyfile *pf)
{
	struct stat st;
	int fd = target_open_mapped(tgid, pf->start, pf->end, pf->path, MAX_ELF_BYTES, &st);

	if (fd >= 0 && (uint64_t)st.st_ino != pf->ino) {
		close(fd);
		return -ESTALE;	/* replaced at its path since it was mapped */
	}
	return fd;
}

/* ---- glibc's thread-specific data ---- */

static bool is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strcmp(base, "libc.so.6") == 0 || strncmp(base, "libc-2.", 7) == 0;
}

/*
 * Where pthread_getspecific() finds a key below 32: glibc 2.34-2.36's
 * x86_64 code is `mov %edi,%eax; add $IMM,%rax; shl $4,%rax; add %fs:0x10,%rax;
 * mov 0x8(%rax),%rdx`: the slot's data is at TP + IMM*16 + key*16 + 8 (the
 * BPF walk adds key*16 + 8).  Read
 * from the process's own libc (a container's may differ); anything else: refused.
 */
/* proc_mapped_files' callback: keeps the first libc mapped (its fd is closed after us). */
static bool libc_take(const struct mapped_file *file, void *ctx)
{
	int *fd = ctx;

	*fd = fcntl(file->fd, F_DUPFD_CLOEXEC, 0);
	return false;
}

static int tsd_offset(uint32_t tgid, uint32_t *out)
{
	static const unsigned char add_rax[] = { 0x48, 0x83, 0xc0 }, shl4[] = { 0x48, 0xc1, 0xe0, 0x04 };
	struct elf_wanted want[] = { { "pthread_getspecific" } };
	unsigned char code[48];
	unsigned int refused = 0;
	int fd = -1, err = -ENOTSUP;
	Elf *elf;

	/* The libc the process maps, opened as every file a process names is (lib/safe_open.c). */
	proc_mapped_files((int)tgid, is_libc, libc_take, &fd, &refused);
	if (fd < 0)
		return -ENOENT;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		elf_find_symbols(elf, want, 1);
		if (want[0].found && elf_read_vaddr(elf, fd, want[0].value, code, sizeof(code))) {
			for (size_t i = 0; i + 8 <= sizeof(code); i++)
				if (!memcmp(code + i, add_rax, 3) && !memcmp(code + i + 4, shl4, 4) &&
				    code[i + 3] < 0x80) {
					*out = code[i + 3] * 16u;
					err = 0;
					break;
				}
		}
	}
	elf_end(elf);
	close(fd);
	return err;
}

/* ---- checking a table against the binary ---- */

struct member_check {
	const char *name;
	uint16_t offset;
};

/* Each of @checks found in @type's tp_members (in the process) must have its offset; 0 or -ENOTSUP. */
static int check_members(uint32_t tgid, uint64_t type, const struct member_check *checks, int nchecks,
			 const char *what, char *why, size_t whylen)
{
	unsigned char defs[MAX_MEMBERS * MEMBER_DEF_SIZE];
	uint64_t members = 0;
	int found = 0;

	if (!cpython_read(tgid, type + TP_MEMBERS, &members, sizeof(members)) || !members ||
	    !cpython_read(tgid, members, defs, sizeof(defs))) {
		say(why, whylen, "cannot read %s's member table", what);
		return -ENOTSUP;
	}
	for (int i = 0; i < MAX_MEMBERS; i++) {
		uint64_t name_addr, offset;
		char name[32] = "";

		memcpy(&name_addr, defs + i * MEMBER_DEF_SIZE, 8);
		memcpy(&offset, defs + i * MEMBER_DEF_SIZE + 16, 8);
		if (!name_addr)
			break;
		if (!cpython_read(tgid, name_addr, name, sizeof(name) - 1))
			continue;
		for (int c = 0; c < nchecks; c++) {
			if (strcmp(name, checks[c].name))
				continue;
			if (offset != checks[c].offset) {
				say(why, whylen, "%s.%s is at %" PRIu64 " in the binary, %u in the table",
				    what, name, offset, checks[c].offset);
				return -ENOTSUP;
			}
			found++;
		}
	}
	if (found != nchecks) {
		say(why, whylen, "%d of %s's %d checked members found", found, what, nchecks);
		return -ENOTSUP;
	}
	return 0;
}

static int check_table(uint32_t tgid, const struct cpython_proc *py, uint64_t code_type, uint64_t frame_type,
		       char *why, size_t whylen)
{
	const struct cpython_offsets *o = &py->off;
	struct member_check code[] = {
		{ "co_filename", o->co_filename }, { "co_name", o->co_name },
		{ "co_firstlineno", o->co_firstlineno },
		{ py->minor <= 9 ? "co_lnotab" : "co_linetable", o->co_linetable },
		{ "co_qualname", o->co_qualname },
	};
	/* 3.10 made f_lasti a getter (it counts instructions, the attribute bytes). */
	struct member_check frame[] = { { "f_back", o->frame_back }, { "f_lasti", o->frame_instr } };
	int err = check_members(tgid, code_type, code, py->minor >= 11 ? 5 : 4, "PyCodeObject", why, whylen);

	if (!err && py->layout == PY_LAYOUT_FRAME_OBJECT)
		err = check_members(tgid, frame_type, frame, py->minor <= 9 ? 2 : 1, "PyFrameObject", why, whylen);
	return err;
}

/* 3.13: the interpreter's own _Py_DebugOffsets at the start of _PyRuntime (Include/internal/pycore_runtime.h, v3.13.0). */
static int debug_offsets(uint32_t tgid, struct cpython_proc *py, char *why, size_t whylen)
{
	uint64_t d[44];		/* 352 bytes: up to code_object.co_code_adaptive */
	struct cpython_offsets *o = &py->off;

	if (!cpython_read(tgid, py->runtime, d, sizeof(d)))
		return -ESRCH;
	if (memcmp(d, "xdebugpy", 8)) {
		say(why, whylen, "_PyRuntime has no _Py_DebugOffsets cookie");
		return -ENOTSUP;
	}
	if ((d[1] >> 16) != 0x030d) {
		say(why, whylen, "_Py_DebugOffsets says version %#" PRIx64 ", the file name 3.13", d[1]);
		return -ENOTSUP;
	}
	if (d[2]) {
		say(why, whylen, "a free-threaded build (3.13t): not walked");
		return -ENOTSUP;
	}
	o->ts_frame = (uint16_t)d[184 / 8];
	o->ts_thread_id = (uint16_t)d[192 / 8];
	o->frame_back = (uint16_t)d[232 / 8];
	o->frame_code = (uint16_t)d[240 / 8];
	o->frame_instr = (uint16_t)d[248 / 8];
	o->frame_entry = (uint16_t)d[264 / 8];
	o->co_filename = (uint16_t)d[280 / 8];
	o->co_name = (uint16_t)d[288 / 8];
	o->co_qualname = (uint16_t)d[296 / 8];
	o->co_linetable = (uint16_t)d[304 / 8];
	o->co_firstlineno = (uint16_t)d[312 / 8];
	o->co_code_adaptive = (uint16_t)d[344 / 8];
	return 0;
}

/* A test hook: APERTURE_TEST_PYTHON_BAD_TABLE=1 moves co_name, as a wrong table would. */
static void test_break_table(struct cpython_offsets *o)
{
	const char *bad = getenv("APERTURE_TEST_PYTHON_BAD_TABLE");

	if (bad && *bad == '1')
		o->co_name += 8;
}

/* ---- putting it together ---- */

static int describe(uint32_t tgid, const struct pyfile *pf, struct cpython_proc *py, char *why, size_t whylen)
{
	struct elf_wanted want[] = {
		{ "_PyRuntime" }, { "_PyEval_EvalFrameDefault" }, { "_PyEval_EvalFrameDefault.cold" },
		{ "PyCode_Type" }, { "PyFrame_Type" },
	};
	const struct version_table *table = NULL;
	struct { int32_t initialized; uint32_t key; } tss;
	uint64_t first_vaddr = 0, bias;
	int fd, err;
	Elf *elf;

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (tables[i].minor == pf->minor)
			table = &tables[i];
	if (pf->flavour == 't') {
		say(why, whylen, "%s is a free-threaded build (3.%dt): not walked", pf->path, pf->minor);
		return -ENOTSUP;
	}
	if (pf->flavour == 'd' || !table) {
		say(why, whylen, "%s: CPython 3.%d%s has no offsets table (3.8-3.13 release builds)", pf->path,
		    pf->minor, pf->flavour == 'd' ? "d" : "");
		return -ENOTSUP;
	}
	fd = open_mapped_file(tgid, pf);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = elf && elf_kind(elf) == ELF_K_ELF ? 0 : -ENOEXEC;
	if (!err) {
		elf_find_symbols(elf, want, sizeof(want) / sizeof(want[0]));
		if (!elf_first_load_vaddr(elf, &first_vaddr))
			err = -ENOEXEC;
	}
	elf_end(elf);
	close(fd);
	if (err)
		return err;
	if (!want[0].found)
		return -ENOENT;		/* a python3.X that is not CPython's interpreter (or static and stripped) */
	if (!want[1].found || !want[3].found || !want[4].found) {
		say(why, whylen, "%s: no symbol for the evaluator or the code type (a stripped build)", pf->path);
		return -ENOTSUP;
	}
	memset(py, 0, sizeof(*py));
	bias = pf->base - first_vaddr;
	snprintf(py->file, sizeof(py->file), "%s", pf->path);
	py->minor = pf->minor;
	py->layout = table->layout;
	py->off = table->off;
	py->runtime = want[0].value + bias;
	py->eval_start = want[1].value + bias;
	py->eval_end = py->eval_start + (want[1].size ?: 1);
	if (want[2].found) {
		py->cold_start = want[2].value + bias;
		py->cold_end = py->cold_start + (want[2].size ?: 1);
	}
	if (!cpython_read(tgid, py->runtime + py->off.runtime_tss, &tss, sizeof(tss)))
		return -ESRCH;
	if (tss.initialized != 1)
		return tss.initialized ? (say(why, whylen, "%s: _PyRuntime.autoTSSkey is not where the 3.%d "
						     "table says", pf->path, pf->minor), -ENOTSUP) : -EAGAIN;
	if (tss.key >= 32) {
		say(why, whylen, "%s: pthread key %u of the thread states is beyond glibc's first block",
		    pf->path, tss.key);
		return -ENOTSUP;
	}
	if (py->minor == 13) {
		err = debug_offsets(tgid, py, why, whylen);
		if (err)
			return err;
	}
	test_break_table(&py->off);
	err = check_table(tgid, py, want[3].value + bias, want[4].value + bias, why, whylen);
	if (err) {
		char detail[160];

		snprintf(detail, sizeof(detail), "%s", why);
		say(why, whylen, "%s: the 3.%d offsets table is wrong for this binary (%s): not walked",
		    pf->path, pf->minor, detail);
		return err;
	}
	err = tsd_offset(tgid, &py->tsd_offset);
	if (err)
		say(why, whylen, "%s: glibc's pthread_getspecific is not one this reader knows: not walked",
		    pf->path);
	return err;
}

int cpython_find(uint32_t tgid, struct cpython_proc *out, char *why, size_t whylen)
{
	struct pyfile lib = {0}, exe = {0};
	int err = find_file(tgid, &lib, &exe);

	if (why && whylen)
		why[0] = '\0';
	elf_version(EV_CURRENT);
	if (err)
		return err;
	if (lib.path[0])
		return describe(tgid, &lib, out, why, whylen);
	if (exe.path[0])
		return describe(tgid, &exe, out, why, whylen);
	return -ENOENT;
}
