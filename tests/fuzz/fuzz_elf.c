// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: an ELF file, as a hostile binary in a container hands it
 * to us.  The input is a memfd and the real readers run on it:
 *  - the symbolizer's (elfsyms.c): build-id note, PT_LOADs, .symtab and
 *    .dynsym, .gnu_debuglink and build-id debug files (looked up under
 *    /usr/lib/debug: nothing there names a fuzzed id), .gnu_debugdata (xz),
 *    the entry point and the FDE starts; then lookups;
 *  - the unwinder's (cfi.c, which the symbolizer also runs for FDE starts): .eh_frame_hdr's table, or the scan of
 *    .eh_frame, and every FDE's rows (its CFA program run by cfaprog.c);
 *  - the data-symbol reader (datasym.c, included for its static functions):
 *    the first PT_LOAD and an object covering an address.
 */
#include "../../user/symbolize/datasym.c"
#include "cfi.h"
#include "elfsyms.h"
#include "fuzz_input.h"

static void symbolizer_reads(int fd)
{
	struct elf_syms es;
	uint64_t vaddr;

	if (elf_syms_load(&es, fd, "/fuzz/bin/prog", -1) == 0) {
		for (size_t i = 0; i < es.nloads; i++)
			elf_syms_vaddr(&es, es.loads[i].offset, &vaddr);
		for (size_t i = 0; i < es.nfdes; i++)
			cfi_function_start(es.fde_starts, es.fde_ends, es.nfdes, es.fde_starts[i]);
		for (size_t i = 0; i < es.tab.nsyms; i++)
			if (symtab_find(&es.tab, es.tab.syms[i].start) != &es.tab.syms[i])
				abort();	/* every symbol kept is the one found at its start */
	}
	elf_syms_free(&es);
}

/*
 * On a heap copy of exactly the input's size (libelf's elf_memory, as the
 * unwinder reads the vDSO), so that AddressSanitizer sees a read past the
 * end of a section the file placed last: in the memfd's mapping it would
 * land in the rest of the page.
 */
static void unwinder_and_data_reads(const uint8_t *data, size_t size)
{
	char *image = malloc(size ? size : 1);
	struct cfi_table t;
	uint64_t first_vaddr;
	char name[128];
	Elf *e;

	if (!image)
		abort();
	memcpy(image, data, size);
	e = elf_memory(image, size);
	if (!e) {
		free(image);
		return;
	}
	if (elf_kind(e) == ELF_K_ELF) {
		if (cfi_table_build(e, &t) == 0) {
			/* Per function: its bounded rows, a gap row, the entry point's row. */
			if (t.nrows > t.nfdes * (CFI_MAX_FUNCTION_ROWS + 2))
				abort();
			cfi_table_free(&t);
		}
		if (elf_first_load_vaddr(e, &first_vaddr)) {
			find_object(e, SHT_SYMTAB, first_vaddr, name, sizeof(name));
			find_object(e, SHT_DYNSYM, first_vaddr + 0x1000, name, sizeof(name));
		}
	}
	elf_end(e);
	free(image);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = input_fd(data, size);

	elf_version(EV_CURRENT);
	symbolizer_reads(fd);
	unwinder_and_data_reads(data, size);
	return 0;
}
