// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the continuous profiling policies the OAP sends
 * (ServiceWithPolicyJSON) as the agent reads and applies them, twice (a
 * second update replaces the first's checks), through user/lib/json.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "agent_continuous.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct agent_opts o = { .oap = "fuzz:11800", .continuous_task_s = 600, .continuous_silence_s = 1200 };
	struct oap oap = { .o = &o };
	struct continuous c;
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	log_set_format("text");
	continuous_init(&c, &o);
	continuous_apply_json(&c, &oap, text);
	continuous_apply_json(&c, &oap, text);
	continuous_free(&c);
	free(text);
	return 0;
}
