/* SPDX-License-Identifier: GPL-2.0 */
/* The architecture's syscall numbers and registers, for the raw syscall tracepoints. */
#ifndef LIB_SYSCALL_BPF_H
#define LIB_SYSCALL_BPF_H

#if defined(__TARGET_ARCH_x86)
#define SYSCALL_NR(regs)	((regs)->orig_ax)
#define NR_FUTEX		202
#elif defined(__TARGET_ARCH_arm64)
#define SYSCALL_NR(regs)	((regs)->syscallno)
#define NR_FUTEX		98
#else
#error "add this architecture's syscall number register and numbers"
#endif

#endif /* LIB_SYSCALL_BPF_H */
