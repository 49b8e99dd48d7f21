/* SPDX-License-Identifier: GPL-2.0 */
#ifndef RECORD_H
#define RECORD_H

/* `aperture record`: profile for a while, write files. */
int record_main(int argc, char **argv);

#endif
