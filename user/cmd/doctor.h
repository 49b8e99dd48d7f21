/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DOCTOR_H
#define DOCTOR_H

/*
 * `aperture doctor [--json]`: what this machine lets aperture do, and why
 * not.  Exit 0 when on-CPU profiling can run, 1 when it cannot.
 */
int doctor_main(int argc, char **argv);

#endif
