// SPDX-License-Identifier: GPL-2.0
/* One side of the fork storm: see storm.h. */
#define STORM_BURN storm_b_burn
#include "storm.h"
