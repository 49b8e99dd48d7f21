// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: what the OAP answers, as the agent decodes it: Commands
 * (queryTasks, keepAlive, collectProfilingData), each command as a profiling
 * task, and EBPFReportProcessDownstream matched against two processes.
 */
#include <stdint.h>
#include <stdlib.h>
#include "skywalking.h"

static void decode_tasks(const uint8_t *data, size_t size)
{
	struct sw_commands cmds = { 0 };

	if (sw_decode_commands(data, size, &cmds) == 0) {
		for (size_t i = 0; i < cmds.n; i++) {
			struct sw_task t;

			if (sw_task_parse(&cmds.v[i], &t) == 0)
				sw_task_free(&t);
			(void)sw_command_arg(&cmds.v[i], "TaskId");
		}
	}
	sw_commands_free(&cmds);
}

static void decode_downstream(const uint8_t *data, size_t size)
{
	struct sw_process a = { .pid = 1, .layer = "GENERAL", .service = "svc", .instance = "i",
				.process_name = "p" };
	struct sw_process b = { .pid = 2, .layer = "GENERAL", .service = "svc", .instance = "j",
				.process_name = "q" };
	struct sw_process *procs[] = { &a, &b };

	sw_decode_downstream(data, size, procs, 2);
	free(a.process_id);
	free(b.process_id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decode_tasks(data, size);
	decode_downstream(data, size);
	return 0;
}
