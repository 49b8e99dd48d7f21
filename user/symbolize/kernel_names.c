// SPDX-License-Identifier: GPL-2.0
/* Kernel addresses to names: the kernel's %pS, remembered, else the kallsyms table (kernel_names.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kernel_names.h"
#include "kallsyms.h"
#include "strintern.h"
#include "bpf_quiet.h"
#include "util.h"
#include "ksym.h"
#include "ksym.skel.h"

#define KALLSYMS "/proc/kallsyms"
/* Remembered names past this are forgotten at the next trim (a kernel has ~60k functions). */
#define NAMES_MAX_BYTES (8u << 20)

/* An address asked of the kernel; addr 0: an empty slot (no kernel address is 0). */
struct asked {
	uint64_t addr;
	const char *name;	/* NULL: no symbol covers it */
	uint64_t offset;
};

struct kernel_names {
	struct ksym_bpf *prog;		/* NULL: the table answers */
	struct kallsyms table;		/* empty unless the table answers (or when kallsyms hides addresses) */
	uint64_t text_start;
	struct asked *slots;		/* open addressing, a power of two, at most half full */
	size_t nslots, used;
	struct strintern strs;
	uint64_t asked, runs, unnamed;
};

static struct ksym_bpf *prog_open(const char **step)
{
	libbpf_print_fn_t old = bpf_quiet_begin();
	struct ksym_bpf *skel;
	int err = 0;

	*step = "open";
	skel = ksym_bpf__open();
	if (!skel) {
		err = errno;
		goto out;
	}
	*step = "load";
	err = -ksym_bpf__load(skel);
	if (!err && !skel->bss) {
		*step = "mmap";
		err = ENOTSUP;
	}
	if (err) {
		ksym_bpf__destroy(skel);
		skel = NULL;
	}
out:
	bpf_quiet_end(old);
	errno = err;
	return skel;
}

/*
 * APERTURE_TEST_KSYM_RUNS=N (tests only): the runs after the Nth are refused,
 * as by a kernel that loads the program and then refuses to run it.
 */
static bool run_refused_for_test(void)
{
	static long allowed = -2, runs;

	if (allowed == -2) {
		const char *env = getenv("APERTURE_TEST_KSYM_RUNS");

		allowed = env ? strtol(env, NULL, 10) : -1;
	}
	return allowed >= 0 && runs++ >= allowed;
}

/* Runs the program over the @n (<= KSYM_BATCH) addresses already in its ksym_addrs. */
static int prog_run(struct ksym_bpf *skel, uint32_t n)
{
	LIBBPF_OPTS(bpf_test_run_opts, run);

	if (run_refused_for_test())
		return -EPERM;
	skel->bss->ksym_count = n;
	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.ksym_name), &run))
		return -errno;
	return run.retval == 0 ? 0 : -EIO;
}

/* One run naming address 0 ("0x0"): a kernel may load the program and refuse to run it.  0 or an errno. */
static int prog_try(struct ksym_bpf *skel)
{
	int err;

	skel->bss->ksym_addrs[0] = 0;
	err = -prog_run(skel, 1);
	if (!err && skel->bss->ksym_len[0] <= 0)
		err = EIO;	/* nothing printed */
	return err;
}

int kernel_names_probe(const char **step)
{
	struct ksym_bpf *skel = prog_open(step);
	int err;

	if (!skel)
		return errno;
	*step = "run";
	err = prog_try(skel);
	ksym_bpf__destroy(skel);
	return err;
}

/* The table instead of the kernel, from now on (the kernel's namer refused @err at @step). */
static void table_load(struct kernel_names *kn, int err, const char *step)
{
	if (err)
		log_info("kernel names: from %s (the kernel's own namer: %s at %s)", KALLSYMS,
			 strerrorname_np(err) ?: "?", step);
	ksym_bpf__destroy(kn->prog);
	kn->prog = NULL;
	err = kallsyms_load(&kn->table, KALLSYMS);
	if (err)
		log_warn("kernel symbols unavailable (%s: %s)", KALLSYMS, strerror(-err));
	kn->text_start = kn->table.text_start;	/* 0 when it failed */
}

struct kernel_names *kernel_names_new(bool kallsyms_only)
{
	struct kernel_names *kn = calloc_logged(1, sizeof(*kn));
	const char *step = "load";
	int err = 0;

	if (!kn)
		return NULL;
	strintern_init(&kn->strs, NAMES_MAX_BYTES);
	if (!kallsyms_only) {
		kn->prog = prog_open(&step);
		err = kn->prog ? 0 : errno;
	}
	if (kn->prog) {
		step = "run";
		err = prog_try(kn->prog);
	}
	if (kn->prog && !err) {
		kn->text_start = kallsyms_text_start(KALLSYMS);
		return kn;
	}
	table_load(kn, err, step);
	return kn;
}

static size_t asked_bytes(const struct kernel_names *kn)
{
	return kn->strs.bytes + kn->nslots * sizeof(*kn->slots);
}

static void forget_asked(struct kernel_names *kn)
{
	free(kn->slots);
	kn->slots = NULL;
	kn->nslots = kn->used = 0;
	strintern_free(&kn->strs);
	strintern_init(&kn->strs, NAMES_MAX_BYTES);
}

void kernel_names_free(struct kernel_names *kn)
{
	if (!kn)
		return;
	free(kn->slots);
	strintern_free(&kn->strs);
	ksym_bpf__destroy(kn->prog);
	kallsyms_free(&kn->table);
	free(kn);
}

uint64_t kernel_names_text_start(const struct kernel_names *kn)
{
	return kn->text_start;
}

static size_t slot_of(const struct kernel_names *kn, uint64_t addr)
{
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 20) & (kn->nslots - 1);
}

/* The slot of @addr: its own, or the empty one where it would go. NULL when there are none. */
static struct asked *slot_find(const struct kernel_names *kn, uint64_t addr)
{
	size_t i;

	if (!kn->nslots)
		return NULL;
	for (i = slot_of(kn, addr); kn->slots[i].addr && kn->slots[i].addr != addr; i = (i + 1) & (kn->nslots - 1))
		;
	return &kn->slots[i];
}

static int slots_grow(struct kernel_names *kn)
{
	size_t old_n = kn->nslots, n = old_n ? old_n * 2 : 1024;
	struct asked *old = kn->slots, *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	kn->slots = slots;
	kn->nslots = n;
	for (size_t i = 0; i < old_n; i++)
		if (old[i].addr)
			*slot_find(kn, old[i].addr) = old[i];
	free(old);
	return 0;
}

/*
 * "func+0xOFF/0xSIZE", " [module]" after a module's: @text cut to the name,
 * *@offset set.  False for anything else: %pS prints "0xADDR" where no
 * symbol covers the address.
 */
static bool parse_symbol(char *text, uint64_t *offset)
{
	char *module = strstr(text, " ["), *slash, *plus, *end;

	if (module)
		*module = '\0';
	slash = strrchr(text, '/');
	if (!slash)
		return false;
	*slash = '\0';
	plus = strrchr(text, '+');
	if (!plus || plus == text || strncmp(plus + 1, "0x", 2) != 0)
		return false;
	*offset = strtoull(plus + 3, &end, 16);	/* after "+0x" */
	if (end == plus + 3 || *end)
		return false;
	*plus = '\0';
	return true;
}

/* The program's answer @i for @addr into its slot. */
static void remember(struct kernel_names *kn, uint64_t addr, uint32_t i)
{
	struct ksym_bpf__bss *bss = kn->prog->bss;
	struct asked *a;
	uint64_t offset = 0;
	char *text = bss->ksym_text[i];
	int32_t len = bss->ksym_len[i];

	if ((kn->used + 1) * 2 > kn->nslots && slots_grow(kn))
		return;
	a = slot_find(kn, addr);	/* empty: ask() asks each address once */
	*a = (struct asked){ .addr = addr };
	kn->used++;
	if (len > 0 && len <= KSYM_TEXT && parse_symbol(text, &offset)) {	/* len counts the NUL */
		a->name = strintern(&kn->strs, text);
		a->offset = offset;
	}
	if (!a->name)
		kn->unnamed++;
}

/*
 * Names the @count addresses in the program's ksym_addrs and remembers them.
 * False when the kernel refused the run: the table answers from now on, so
 * that no frame is left unnamed for good.
 */
static bool run_batch(struct kernel_names *kn, uint32_t count)
{
	int err = prog_run(kn->prog, count);

	if (err) {
		table_load(kn, -err, "run");
		return false;
	}
	kn->runs++;
	kn->asked += count;
	for (uint32_t j = 0; j < count; j++)
		remember(kn, kn->prog->bss->ksym_addrs[j], j);
	return true;
}

/* Whether @addr needs asking: not 0, not asked before, not already in @batch[0, count). */
static bool to_ask(const struct kernel_names *kn, const __u64 *batch, uint32_t count, uint64_t addr)
{
	const struct asked *a = slot_find(kn, addr);

	if (!addr || (a && a->addr))
		return false;
	for (uint32_t j = 0; j < count; j++)
		if (batch[j] == addr)
			return false;
	return true;
}

/* Asks the kernel about @addrs[0, n) not asked before, KSYM_BATCH at a time. */
static void ask(struct kernel_names *kn, const uint64_t *addrs, size_t n)
{
	__u64 *batch = kn->prog->bss->ksym_addrs;
	uint32_t count = 0;

	for (size_t i = 0; i < n; i++) {
		if (!to_ask(kn, batch, count, addrs[i]))
			continue;
		batch[count++] = addrs[i];
		if (count == KSYM_BATCH) {
			if (!run_batch(kn, count))
				return;
			count = 0;
		}
	}
	if (count)
		run_batch(kn, count);
}

void kernel_names_prefetch(struct kernel_names *kn, const uint64_t *addrs, size_t n)
{
	if (kn->prog)
		ask(kn, addrs, n);
}

bool kernel_names_find(struct kernel_names *kn, uint64_t addr, const char **name, uint64_t *offset)
{
	const struct asked *a;
	const struct sym *s;

	if (!kn->prog) {
		s = symtab_find(&kn->table.tab, addr);
		if (!s)
			return false;
		*name = symtab_name(&kn->table.tab, s);
		*offset = addr - s->start;
		return true;
	}
	a = slot_find(kn, addr);
	if (!a || !a->addr) {
		ask(kn, &addr, 1);
		if (!kn->prog)	/* the kernel's namer failed: the table now */
			return kernel_names_find(kn, addr, name, offset);
		a = slot_find(kn, addr);
	}
	if (!a || a->addr != addr || !a->name)
		return false;
	*name = a->name;
	*offset = a->offset;
	return true;
}

void kernel_names_trim(struct kernel_names *kn)
{
	if (kn && asked_bytes(kn) > NAMES_MAX_BYTES / 2)
		forget_asked(kn);
}

void kernel_names_usage(const struct kernel_names *kn, struct kernel_names_usage *out)
{
	*out = (struct kernel_names_usage){ 0 };
	if (!kn)
		return;
	out->from_kernel = kn->prog != NULL;
	out->bytes = kn->prog ? asked_bytes(kn) : symtab_bytes(&kn->table.tab);
	out->asked = kn->asked;
	out->runs = kn->runs;
	out->unnamed = kn->unnamed;
}
