/* SPDX-License-Identifier: GPL-2.0 */
/* The architecture's syscall numbers and registers, for the raw syscall tracepoints. */
#ifndef LIB_SYSCALL_BPF_H
#define LIB_SYSCALL_BPF_H

#if defined(__TARGET_ARCH_x86)
#define SYSCALL_NR(regs)	((regs)->orig_ax)
#define NR_FUTEX		202
#define TIF_SIGPENDING_BIT	2
#elif defined(__TARGET_ARCH_arm64)
#define SYSCALL_NR(regs)	((regs)->syscallno)
#define NR_FUTEX		98
#define TIF_SIGPENDING_BIT	0
#else
#error "add this architecture's syscall number register and numbers"
#endif

/* A signal is pending for @task (it wakes from an interruptible sleep to handle it). */
static __always_inline bool task_signal_pending(struct task_struct *task)
{
	return (task->thread_info.flags >> TIF_SIGPENDING_BIT) & 1;
}

#endif /* LIB_SYSCALL_BPF_H */
