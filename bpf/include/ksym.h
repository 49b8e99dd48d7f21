/* SPDX-License-Identifier: GPL-2.0 */
/* What bpf/ksym.bpf.c and user/symbolize/kernel_names.c share. */
#ifndef APERTURE_KSYM_H
#define APERTURE_KSYM_H

#define KSYM_BATCH 32		/* addresses a run names */
/* One %pS: a symbol (KSYM_NAME_LEN is 512 since 6.1), "+0xOFF/0xSIZE" and " [module]" (56). */
#define KSYM_TEXT 640

#endif /* APERTURE_KSYM_H */
