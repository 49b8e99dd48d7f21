// SPDX-License-Identifier: GPL-2.0
/* libbpf quiet around loads that may be refused (bpf_quiet.h). */
#include "bpf_quiet.h"
#include "util.h"

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return 0;
}

libbpf_print_fn_t bpf_quiet_begin(void)
{
	return log_verbose > 1 ? NULL : libbpf_set_print(quiet_print);
}

void bpf_quiet_end(libbpf_print_fn_t old)
{
	if (log_verbose <= 1)
		libbpf_set_print(old);
}
