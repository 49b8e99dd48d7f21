/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the scheduler counts of a task, for the kinds that time a task from
 * its switch-out to its switch-in (off-CPU, futex sleeps).
 */
#ifndef LIB_SCHED_BPF_H
#define LIB_SCHED_BPF_H

#include "vmlinux.h"

/*
 * @task's context switches so far (low 32 bits).  A sleeping task's count
 * stands still, so the switch-in that ends a sleep sees the count its
 * switch-out left.  A different count means that the task ran and left the
 * CPU again in between, at a switch-in that no program saw: the kernel
 * 6.18.44 of these VMs did that about once in 20,000 futex sleeps (and the
 * program's recursion-miss count stayed 0).  Timing from the old switch-out
 * would count that run as time asleep, and start a lock's hold mid-hold.
 */
static __always_inline __u32 task_switches(const struct task_struct *task)
{
	return (__u32)(task->nvcsw + task->nivcsw);
}

#endif /* LIB_SCHED_BPF_H */
