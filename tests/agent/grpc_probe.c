// SPDX-License-Identifier: GPL-2.0
/*
 * Drives user/net/grpc.c against a real gRPC server for the wire tests.
 *   grpc_probe [-t TOKEN] [-d TIMEOUT_MS] [-b BACKOFF_MAX_MS] HOST:PORT OP...
 * OPs, run in order, one output line each:
 *   unary:PATH:DATA          one unary call with DATA as the request bytes
 *   stream:PATH:N:SIZE       client streaming, N messages of SIZE bytes ('a'+i%26)
 *   sleep:MS                 pause (no output)
 * Output: "CODE_NAME len=REPLY_LEN reply=FIRST_64_BYTES msg=MESSAGE"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "grpc.h"
#include "util.h"

static unsigned int timeout_ms = 5000;

static void print_result(int code, const struct grpc_buf *reply, const struct grpc_status *st)
{
	printf("%s len=%zu reply=%.*s msg=%s\n", grpc_code_name(code), reply->len,
	       (int)(reply->len < 64 ? reply->len : 64), reply->data ? (char *)reply->data : "",
	       st->message);
	fflush(stdout);
}

static void op_unary(struct grpc_channel *ch, char *path, char *data)
{
	struct grpc_buf reply;
	struct grpc_status st;
	int code = grpc_unary(ch, path, data, strlen(data), timeout_ms, &reply, &st);

	print_result(code, &reply, &st);
	grpc_buf_free(&reply);
}

static void op_stream(struct grpc_channel *ch, char *path, int n, size_t size)
{
	struct grpc_buf reply = { 0 };
	struct grpc_status st = { 0 };
	struct grpc_call *call;
	char *msg = malloc(size + 1);
	int i, code;

	if (!msg)
		exit(1);
	code = grpc_stream_open(ch, path, timeout_ms, &call, &st);
	if (code) {
		print_result(code, &reply, &st);
		free(msg);
		return;
	}
	for (i = 0; i < n; i++) {
		memset(msg, 'a' + i % 26, size);
		if (grpc_stream_send(call, msg, size))
			break;
	}
	code = grpc_stream_finish(call, &reply, &st);
	print_result(code, &reply, &st);
	grpc_buf_free(&reply);
	free(msg);
}

int main(int argc, char **argv)
{
	struct grpc_opts opts = { .backoff_initial_ms = 200 };
	struct grpc_channel *ch;
	int c, i;

	while ((c = getopt(argc, argv, "t:d:b:v")) != -1) {
		switch (c) {
		case 't': opts.token = optarg; break;
		case 'd': timeout_ms = atoi(optarg); break;
		case 'b': opts.backoff_max_ms = atoi(optarg); break;
		case 'v': log_verbose = 1; break;
		default: return 2;
		}
	}
	if (optind >= argc)
		return 2;
	opts.target = argv[optind];
	ch = grpc_channel_new(&opts);
	if (!ch)
		return 1;
	for (i = optind + 1; i < argc; i++) {
		char *op = strtok(argv[i], ":");
		char *a = strtok(NULL, ":"), *b, *d;

		if (!strcmp(op, "unary") && a) {
			b = strtok(NULL, "");
			op_unary(ch, a, b ? b : "");
			continue;
		}
		b = strtok(NULL, ":");
		d = strtok(NULL, ":");
		if (!strcmp(op, "stream") && a && b && d)
			op_stream(ch, a, atoi(b), strtoul(d, NULL, 0));
		else if (!strcmp(op, "sleep") && a)
			usleep(atoi(a) * 1000);
		else
			fprintf(stderr, "bad op %s\n", argv[i]);
	}
	grpc_channel_free(ch);
	return 0;
}
