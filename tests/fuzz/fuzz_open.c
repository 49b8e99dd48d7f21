// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the opens of files a profiled process names, not only the
 * bytes they hold.  A file tree with the hostile kinds of file (FIFOs,
 * symlinks relative, absolute out of the tree, to /dev/zero, to "..", a loop,
 * a device, a directory, a socket, a 2 GiB sparse file) is the root of a child
 * process (chroot), as a container's is.  The input is a path in it, opened by
 * target_open (safe_open.c) with openat2 and with the fallback walk, and the
 * kind and bytes of the child's /tmp/perf-PID.map, opened and parsed as the
 * symbolizer does (symbolize.c is included for its static functions).
 * Whatever the input: no open blocks (a FIFO: the fuzzer's -timeout catches a
 * hang), no read grows without bound (-rss_limit_mb), and an fd is a regular
 * file within the size asked, one of the tree's own (its path, as the kernel
 * gives it for the fd, is in the tree), never one outside the root.  Without root (no chroot) the tree is
 * opened through our own root, and only the kind and size are checked.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "../../user/symbolize/symbolize.c"

#define OPEN_MAX_SIZE (1u << 20)

static char tree[PATH_MAX - 256];	/* under the working directory: a run that dies leaves it there */
static pid_t child;		/* chrooted in the tree; 0 when we could not (not root) */

/* Whether @fd is a file under the tree, by the path the kernel keeps for it. */
static bool in_tree(int fd)
{
	char link[64], path[PATH_MAX];
	size_t len = strlen(tree);
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		abort();
	path[n] = '\0';
	return strncmp(path, tree, len) == 0 && path[len] == '/';
}

static void at(const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", tree, name);
}

static void make_file(const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	at(name, path, sizeof(path));
	f = fopen(path, "w");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}

static void make_link(const char *name, const char *target)
{
	char path[PATH_MAX];

	at(name, path, sizeof(path));
	if (symlink(target, path))
		abort();
}

static void make_tree(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char path[PATH_MAX];
	int fd;

	char cwd[sizeof(tree) - 32];

	if (!getcwd(cwd, sizeof(cwd)))
		abort();
	snprintf(tree, sizeof(tree), "%s/fuzz-open.XXXXXX", cwd);
	if (!mkdtemp(tree))
		abort();
	make_file("ok", "0 10 fn\n");
	at("dir", path, sizeof(path));
	mkdir(path, 0755);
	at("tmp", path, sizeof(path));
	mkdir(path, 01777);
	make_file("dir/inner", "10 10 inner\n");
	at("big", path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd < 0 || ftruncate(fd, 2ll << 30))
		abort();
	close(fd);
	at("fifo", path, sizeof(path));
	mkfifo(path, 0644);
	at("dev", path, sizeof(path));
	mknod(path, S_IFCHR | 0644, makedev(1, 5));	/* /dev/zero's numbers; fails without root */
	at("sock", path, sizeof(path));
	fd = strlen(path) < sizeof(addr.sun_path) ? socket(AF_UNIX, SOCK_STREAM, 0) : -1;
	if (fd >= 0) {
		memcpy(addr.sun_path, path, strlen(path) + 1);
		if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
			listen(fd, 1);	/* kept open: a socket file that answers */
	}
	make_link("link_rel", "ok");
	make_link("link_abs", "/etc/passwd");
	make_link("link_zero", "/dev/zero");
	make_link("link_up", "..");
	make_link("link_loop", "link_loop");
	make_link("link_fifo", "fifo");
	make_link("link_dir", "dir");
	make_link("dir/link_back", "../ok");
	make_link("dir/link_root", "/");
	make_link("link_self_fd", "/proc/self/fd/0");
}

static void kill_child(void)
{
	char cmd[PATH_MAX + 16];

	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	if (system(cmd))
		return;
}

/* A process whose root is the tree; 0 when chroot is not ours to do. */
static pid_t start_child(void)
{
	int ready[2];
	pid_t pid;
	char ok = 0;

	if (pipe(ready))
		abort();
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* a run that dies takes it along */
		ok = chroot(tree) == 0 && chdir("/") == 0;
		if (write(ready[1], &ok, 1) != 1)
			_exit(1);
		while (ok)
			pause();
		_exit(0);
	}
	close(ready[1]);
	if (pid < 0 || read(ready[0], &ok, 1) != 1 || !ok) {
		if (pid > 0)
			waitpid(pid, NULL, 0);
		pid = 0;
	}
	close(ready[0]);
	return pid;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	make_tree();
	child = start_child();
	atexit(kill_child);
	return 0;
}

/* target_open of @path, both ways; an fd must be a regular file of the tree within the bound. */
static void open_checked(const char *path, unsigned int flags)
{
	char full[PATH_MAX + 700];
	struct stat st;
	uint32_t pid = child > 0 ? (uint32_t)child : (uint32_t)getpid();

	if (!child && snprintf(full, sizeof(full), "%s%s", tree, path) < (int)sizeof(full))
		path = full;	/* our own root: the tree is a directory of it */
	for (int fallback = 0; fallback < 2; fallback++) {
		int fd;

		target_open_force_fallback(fallback);
		fd = target_open(pid, path, OPEN_MAX_SIZE, flags, &st);
		if (fd < 0)
			continue;
		if (!S_ISREG(st.st_mode) || st.st_size > OPEN_MAX_SIZE)
			abort();	/* not a regular file within the bound */
		if (child && !in_tree(fd))
			abort();	/* a file from outside the process's root */
		close(fd);
	}
	target_open_force_fallback(false);
}

/* The child's /tmp/perf-PID.map as kind @kind (holding @text when a file), then read as the symbolizer does. */
static void perf_map_checked(uint8_t kind, const char *text)
{
	char path[PATH_MAX], name[64];
	struct symtab jit = { 0 };
	FILE *f;
	int err;

	if (!child)
		return;	/* its map would be ours to name: the symbolizer never reads that */
	snprintf(name, sizeof(name), "tmp/perf-%d.map", (int)child);
	at(name, path, sizeof(path));
	unlink(path);
	rmdir(path);
	switch (kind % 7) {
	case 0: make_file(name, text); break;
	case 1: mkfifo(path, 0644); break;
	case 2: make_link(name, "/dev/zero"); break;
	case 3: make_link(name, "../big"); break;
	case 4: make_link(name, "../ok"); break;
	case 5: mkdir(path, 0755); break;
	case 6: make_link(name, "/etc/passwd"); break;
	}
	f = perf_map_open((uint32_t)child, &err);
	if (!f)
		return;
	if (kind % 7)
		abort();	/* only the regular file, not a link to one, is read */
	perf_map_parse(&jit, f);
	symtab_free(&jit);
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[600], *text;
	size_t n = size < sizeof(path) - 2 ? size : sizeof(path) - 2;

	path[0] = '/';
	memcpy(path + 1, data, n);
	path[n + 1] = '\0';
	open_checked(path, 0);
	open_checked(path, TARGET_NOFOLLOW);
	text = strndup((const char *)data + (size ? 1 : 0), size ? size - 1 : 0);
	if (!text)
		abort();
	perf_map_checked(size ? data[0] : 0, text);
	free(text);
	return 0;
}
