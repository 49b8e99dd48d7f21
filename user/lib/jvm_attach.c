// SPDX-License-Identifier: GPL-2.0
/*
 * The HotSpot dynamic attach protocol on Linux, as read in OpenJDK's
 * src/hotspot/os/posix/attachListener_posix.cpp (the listener) and
 * src/jdk.attach/linux/classes/sun/tools/attach/VirtualMachineImpl.java
 * (the client jcmd uses):
 *  - the listener is a UNIX stream socket at /tmp/.java_pid<PID> (PID as the
 *    JVM sees itself), mode 0600, chowned to the JVM's euid/egid;
 *  - without one, a file .attach_pid<PID> in the JVM's cwd or /tmp, owned by
 *    the JVM's euid or root, then SIGQUIT, makes the JVM start it;
 *  - the peer's SO_PEERCRED must be the JVM's euid and egid, or root
 *    (os::Posix::matches_effective_uid_and_gid_or_root): aperture is root;
 *  - a request is "1\0<cmd>\0<arg>\0<arg>\0<arg>\0" (three arguments, empty
 *    ones allowed), the reply "<result>\n" then the command's output.
 * Checked against the client (openjdk/jdk, VirtualMachineImpl.java at commit
 * 0510120d68fafedb27bd1376f10cb0160feba608 and its native side
 * src/jdk.attach/linux/native/libattach/VirtualMachineImpl.c at
 * 292d6801ac5627fd2e1bd76461ba806055c6d1d2): protocol "1", the command and
 * exactly three NUL-terminated arguments; the pid is the last NSpid entry;
 * the files are in /proc/PID/root/tmp; SIGQUIT only when SigCgt has it (the
 * JDK also requires it not ignored: a caught signal is not ignored), sent
 * again at half the timeout while there is no socket; the socket refused
 * unless its mode gives group and others nothing (checkPermissions; as root
 * the JDK skips its owner check, we keep ours: owned by the JVM's euid).
 * Where we differ on purpose: the trigger file only in the JVM's /tmp, not
 * first in its cwd (/proc/PID/cwd is a directory the process chooses, and
 * root would create a file there; HotSpot looks in both); 3 s, not 10 s.
 * Not handled: a JVM in a user namespace that does not map host root (its
 * listener compares the peer's uid, which it sees as the overflow uid, with
 * its own euid: it needs a client inside that namespace).
 * The code here is our own.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include "jvm_attach.h"
#include "procmaps.h"
#include "util.h"

#define REPLY_MAX	 65536	/* Compiler.perfmap answers a line or two */
#define SOCKET_POLL_MS	 20
#define SIGQUIT_MASK	 (1ull << (SIGQUIT - 1))
#define NOT_LISTENER	 "/tmp/.java_pidN is not a socket owned by the JVM's user, mode 0600"

/* What /proc/PID/status says of the JVM. */
struct jvm_ids {
	uint32_t ns_pid;	/* the pid the JVM names its files after */
	uint32_t euid;
	uint64_t sig_caught;	/* SigCgt */
	bool known;
};

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

bool jvm_maps_libjvm(uint32_t pid)
{
	FILE *f = proc_maps_open(pid);
	struct maps_line m;
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0)
		found = maps_line_parse(line, &m) && maps_line_is_file(&m) && strcmp(base_name(m.path), "libjvm.so") == 0;
	free(line);
	fclose(f);
	return found;
}

static struct jvm_ids jvm_ids(uint32_t pid)
{
	struct proc_status st;
	struct jvm_ids ids;

	proc_status_read(pid, &st);
	ids = (struct jvm_ids){ .ns_pid = st.ns_pid, .euid = st.euid, .sig_caught = st.sig_caught,
				.known = st.uids_known };
	return ids;
}

static int fail(char *why, size_t len, int err, const char *msg)
{
	snprintf(why, len, "%s", msg);
	return err;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* The JVM's /tmp, in its root, not through a symlink: an O_PATH directory fd. */
static int jvm_tmp_dir(uint32_t pid)
{
	char path[64];
	int root, tmp;

	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	tmp = openat(root, "tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tmp < 0)
		tmp = -errno;
	close(root);
	return tmp;
}

/*
 * /tmp/.java_pidN opened O_PATH without following a link, when it is a
 * socket owned by the JVM's euid: the fd (connected to through
 * /proc/self/fd/N, so that the socket checked is the one reached), or -errno.
 */
static int listener_open(int tmp, const struct jvm_ids *ids)
{
	char name[32];
	struct stat st;
	int fd;

	snprintf(name, sizeof(name), ".java_pid%u", ids->ns_pid);
	fd = openat(tmp, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* HotSpot makes it 0600 and chowns it to its euid: anything else is not its listener. */
	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode) || st.st_uid != ids->euid || (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int signal_quit(uint32_t pid, int pidfd)
{
	if (pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, SIGQUIT, NULL, 0) == 0)
		return 0;
	if (pidfd >= 0 && errno != ENOSYS)
		return -errno;
	return kill((pid_t)pid, SIGQUIT) ? -errno : 0;
}

static bool still_catches_quit(uint32_t pid)
{
	struct proc_status st;

	return proc_status_read(pid, &st) && (st.sig_caught & SIGQUIT_MASK);
}

/*
 * The listener, started if need be: .attach_pidN in the JVM's /tmp (created
 * here, never one that exists, chowned to the JVM's euid), SIGQUIT, then
 * polling for the socket up to @timeout_ms.  Only a process that catches
 * SIGQUIT is signalled (a JVM run with -Xrs, or not yet set up, would die).
 */
static int listener_start(uint32_t pid, int pidfd, int tmp, const struct jvm_ids *ids, unsigned int timeout_ms,
			  char *why, size_t len)
{
	char name[32];
	int fd, trigger, err;

	fd = listener_open(tmp, ids);
	if (fd != -ENOENT)
		return fd >= 0 ? fd : fail(why, len, fd, NOT_LISTENER);
	if (!(ids->sig_caught & SIGQUIT_MASK))
		return fail(why, len, -ESRCH, "no attach listener, and SIGQUIT is not caught (-Xrs?): not signalled");
	snprintf(name, sizeof(name), ".attach_pid%u", ids->ns_pid);
	trigger = openat(tmp, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (trigger < 0 && errno != EEXIST)
		return fail(why, len, -errno, "cannot create /tmp/.attach_pidN in the JVM's root");
	if (trigger >= 0 && fchown(trigger, ids->euid, (gid_t)-1))
		log_info("jvm pid %u: chown of the attach trigger: %s", pid, strerror(errno));
	err = signal_quit(pid, pidfd);
	for (unsigned int waited = 0; !err && waited <= timeout_ms; waited += SOCKET_POLL_MS) {
		fd = listener_open(tmp, ids);
		if (fd != -ENOENT)
			break;
		/* As the JDK does: a last chance (a JVM still starting may have missed the first). */
		if (waited < timeout_ms / 2 && waited + SOCKET_POLL_MS >= timeout_ms / 2 && still_catches_quit(pid))
			err = signal_quit(pid, pidfd);
		sleep_ms(SOCKET_POLL_MS);
	}
	if (trigger >= 0) {
		unlinkat(tmp, name, 0);
		close(trigger);
	}
	if (err)
		return fail(why, len, err, "SIGQUIT not sent");
	if (fd == -ENOENT)
		return fail(why, len, -ETIMEDOUT, "no attach listener after SIGQUIT (-XX:+DisableAttachMechanism?)");
	return fd >= 0 ? fd : fail(why, len, fd, NOT_LISTENER);
}

/* Waits for @events on @fd until @deadline (CLOCK_MONOTONIC ns): 0, or -ETIMEDOUT. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	int n;

	if (now >= deadline)
		return -ETIMEDOUT;
	n = poll(&p, 1, (int)((deadline - now) / 1000000) + 1);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n ? 0 : -ETIMEDOUT;
}

static int connect_listener(int listener, uint64_t deadline)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -errno;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d", listener);
	/* A UNIX socket's backlog full is EAGAIN, not EINPROGRESS: retry until the deadline. */
	while (connect(s, (struct sockaddr *)&addr, sizeof(addr))) {
		if ((errno != EAGAIN && errno != EINTR) || now_ns(CLOCK_MONOTONIC) >= deadline) {
			int err = errno == EAGAIN ? -ETIMEDOUT : -errno;

			close(s);
			return err;
		}
		sleep_ms(SOCKET_POLL_MS);
	}
	return s;
}

static int send_all(int s, const char *buf, size_t len, uint64_t deadline)
{
	while (len) {
		ssize_t n = send(s, buf, len, MSG_NOSIGNAL);
		int err;

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		err = wait_fd(s, POLLOUT, deadline);
		if (err)
			return err;
	}
	return 0;
}

/* The reply up to EOF, at most REPLY_MAX - 1 bytes, NUL-terminated in @buf; its length or -errno. */
static ssize_t recv_reply(int s, char *buf, uint64_t deadline)
{
	size_t len = 0;

	for (;;) {
		ssize_t n = recv(s, buf + len, REPLY_MAX - 1 - len, 0);
		int err;

		if (n == 0 || (n > 0 && (len += (size_t)n) == REPLY_MAX - 1))
			break;
		if (n > 0)
			continue;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		err = wait_fd(s, POLLIN, deadline);
		if (err)
			return err;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

/* Sends the request on @listener and reads the reply: 0 when the JVM answered 0. */
static int perfmap_ask(int listener, unsigned int timeout_ms, char *why, size_t why_len)
{
	static const char request[] = "1\0jcmd\0Compiler.perfmap\0\0";	/* and the literal's own NUL */
	uint64_t deadline = now_ns(CLOCK_MONOTONIC) + timeout_ms * 1000000ull;
	char *reply = malloc(REPLY_MAX), *nl;
	int s, err;
	ssize_t n;

	if (!reply)
		return fail(why, why_len, -ENOMEM, "out of memory");
	s = connect_listener(listener, deadline);
	if (s < 0) {
		free(reply);
		return fail(why, why_len, s, s == -ETIMEDOUT ? "attach socket busy" : "cannot connect to the attach socket");
	}
	err = send_all(s, request, sizeof(request), deadline);
	n = err ? err : recv_reply(s, reply, deadline);
	close(s);
	if (n < 0) {
		free(reply);
		return fail(why, why_len, (int)n, n == -ETIMEDOUT ? "no reply in time" : "attach socket error");
	}
	nl = strchr(reply, '\n');
	if (n == 0 || !nl || strtol(reply, NULL, 10) != 0 || reply[0] < '0' || reply[0] > '9') {
		/* The JVM's own words: its result code and the first line of output, cut short. */
		for (char *c = reply; *c; c++)
			if (*c == '\n' || (unsigned char)*c < ' ' || (unsigned char)*c > '~')
				*c = ' ';
		snprintf(why, why_len, "the JVM refused: '%.120s'", n ? reply : "(no reply)");
		free(reply);
		return -EPROTO;
	}
	free(reply);
	return 0;
}

int jvm_request_perfmap(uint32_t pid, unsigned int timeout_ms, char *why, size_t why_len)
{
	struct jvm_ids ids;
	int pidfd, tmp, listener, err;

	snprintf(why, why_len, "ok");
	/* The process pinned before it is looked at: a pid reused later is not signalled. */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0 && errno != ENOSYS)
		return fail(why, why_len, -errno, "gone");
	ids = jvm_ids(pid);
	if (!ids.known || !jvm_maps_libjvm(pid)) {
		err = fail(why, why_len, -ESRCH, "gone, or not a JVM (no libjvm.so mapped)");
		goto out;
	}
	tmp = jvm_tmp_dir(pid);
	if (tmp < 0) {
		err = fail(why, why_len, tmp, "its /tmp cannot be opened (not a directory?)");
		goto out;
	}
	listener = listener_start(pid, pidfd, tmp, &ids, timeout_ms, why, why_len);
	close(tmp);
	err = listener < 0 ? listener : perfmap_ask(listener, timeout_ms, why, why_len);
	if (listener >= 0)
		close(listener);
out:
	if (pidfd >= 0)
		close(pidfd);
	return err;
}
