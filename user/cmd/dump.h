/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DUMP_H
#define DUMP_H

/*
 * `aperture dump`: the pinned totals as folded lines, read from user space:
 * the same lines `cat DIR/NAME_folded` prints, also where the kernel refuses
 * the iterators.
 */
int dump_main(int argc, char **argv);

#endif
