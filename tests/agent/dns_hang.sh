# SPDX-License-Identifier: GPL-2.0
# bash dns_hang.sh TMPDIR CMD...: runs CMD where name lookups hang (a DNS
# server that never answers).  Run under unshare -mn: the network and the
# bind-mounted resolv.conf stay private.  Exit 97 when that cannot be set up.
# DNS_HANG_OPTIONS: the resolver's options (default "timeout:5 attempts:2":
# glibc gives up after about 10 s).
tmp=$1
shift
ip link set lo up || exit 97
printf 'nameserver 127.0.0.1\noptions %s\n' "${DNS_HANG_OPTIONS:-timeout:5 attempts:2}" > "$tmp/resolv.conf"
mount --bind "$tmp/resolv.conf" /etc/resolv.conf || exit 97
/usr/bin/python3 "$(dirname "$0")/dns_blackhole.py" > "$tmp/dns.ready" &
dns=$!
for i in $(seq 50); do
	grep -q ready "$tmp/dns.ready" 2>/dev/null && break
	sleep 0.1
done
grep -q ready "$tmp/dns.ready" || { kill $dns; exit 97; }
timeout 30 "$@"
rc=$?
kill $dns
exit $rc
