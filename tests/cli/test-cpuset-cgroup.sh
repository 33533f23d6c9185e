#!/bin/bash
# memmig-cli move --update-cpuset writes the cpuset.mems of the process's
# own cgroup, whatever its cgroup path looks like (issue 34, finding 3).
# A user with a delegated cgroup can nest directories so that the
# process's /proc/PID/cgroup line runs past 511 bytes with a directory
# named like a line of that file ("3:cpuset:" for v1, "0::" for v2) at
# byte 511: a reader that takes the file 512 bytes at a time then sees a
# second line there, naming another cgroup -- here a root-owned victim --
# whose cpuset.mems root's memmig-cli then rewrote.  Now the victim's
# cpuset.mems must stay as it was, and the move either narrows the
# process's own cgroup or fails saying why.
#
# Needs root and a writable cpuset hierarchy where memmig looks for it
# (cgroup v1's /sys/fs/cgroup/cpuset, or v2's /sys/fs/cgroup with the
# cpuset controller); skips (77) otherwise, saying why.  Everything it
# makes is removed at the end.
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (cgroups, a process of nobody's)"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: no setpriv (util-linux)"; exit 77; }
user=nobody
uid=$(id -u "$user" 2>/dev/null) && gid=$(id -g "$user") ||
	{ echo "SKIP: no user $user"; exit 77; }
as_user() { setpriv --reuid="$uid" --regid="$gid" --clear-groups "$@"; }

# The hierarchy memmig reads (src/util/cpuset.c): v2 where its root has
# the cpuset controller, else v1's cpuset mount.
if grep -qs -w cpuset /sys/fs/cgroup/cgroup.controllers &&
   grep -qs "^cgroup2 /sys/fs/cgroup " /proc/mounts; then
	v=2 root=/sys/fs/cgroup
	grep -qw cpuset "$root/cgroup.subtree_control" ||
		{ echo "SKIP: cgroup v2 without +cpuset in $root/cgroup.subtree_control:" \
			"not changing this host's"; exit 77; }
	# A v2 line is "0::PATH": the look-alike is a "0::" directory.
	fake="0::"
	prefix="0::"
elif awk '$2 == "/sys/fs/cgroup/cpuset" && $3 == "cgroup" && $4 ~ /(^|,)cpuset(,|$)/ { f = 1 }
	  END { exit !f }' /proc/mounts; then
	v=1 root=/sys/fs/cgroup/cpuset
	hid=$(awk -F: '$2 ~ /(^|,)cpuset(,|$)/ { print $1; exit }' /proc/self/cgroup)
	[ -n "$hid" ] || { echo "SKIP: no cpuset line in /proc/self/cgroup"; exit 77; }
	fake="3:cpuset:"
	prefix="$hid:cpuset:"
else
	echo "SKIP: no cpuset hierarchy where memmig looks (/sys/fs/cgroup/cpuset, or v2's" \
		"/sys/fs/cgroup with the cpuset controller)"
	exit 77
fi

victim=$root/memmig-victim-$$
deleg=$root/memmig-deleg-$$
pid=
untidy() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	# Deepest first; the cgroups are empty once the process is gone.
	[ -d "$deleg" ] && find "$deleg" -depth -type d -exec rmdir {} + 2>/dev/null
	rmdir "$victim" 2>/dev/null
	cleanup
}
trap untidy EXIT

mkdir "$victim" 2>/dev/null || { echo "SKIP: cannot make a cgroup in $root (read-only here?)"; exit 77; }
mkdir "$deleg" || { echo "FAIL: mkdir $deleg"; exit 1; }
mems=$(cat "$root/cpuset.effective_mems" 2>/dev/null || cat "$root/cpuset.mems")
if [ "$v" = 1 ]; then
	# v1: a cgroup's tasks need cpus and mems; its children take them
	# from it (clone_children), so that the user's nested ones work.
	cat "$root/cpuset.cpus" >"$deleg/cpuset.cpus" && echo "$mems" >"$deleg/cpuset.mems" &&
		echo 1 >"$deleg/cgroup.clone_children" || { echo "FAIL: setting up $deleg"; exit 1; }
fi
# Delegated to the user: the directory and the files that move processes.
chown "$uid:$gid" "$deleg" "$deleg/cgroup.procs"
[ -e "$deleg/tasks" ] && chown "$uid:$gid" "$deleg/tasks"
[ -e "$deleg/cgroup.subtree_control" ] && chown "$uid:$gid" "$deleg/cgroup.subtree_control"
victim_before=$(cat "$victim/cpuset.mems")

# The user's path: pad directories so that the look-alike starts at byte
# 511 of the line ("PREFIX/memmig-deleg-N/pad.../FAKE/memmig-victim-N").
head_len=$((${#prefix} + ${#deleg} - ${#root} + 1))	# through the '/' after deleg
left=$((511 - head_len))
pad=
while [ "$left" -gt 0 ]; do
	n=$((left > 201 ? 200 : left - 1))	# a name, then its '/'
	[ "$n" -lt 1 ] && { echo "FAIL: cannot pad by $left"; exit 1; }
	pad=$pad$(printf '%*s' "$n" '' | tr ' ' p)/
	left=$((left - n - 1))
done
rel=${deleg#"$root"}/$pad$fake/memmig-victim-$$
own=$root$rel
as_user mkdir -p "$own" || { echo "FAIL: $user cannot nest cgroups in $deleg"; exit 1; }
if [ "$v" = 2 ]; then
	# v2: cpuset in each cgroup on the way, as the user would enable it.
	d=$root
	for c in $(echo "${rel%/*}" | tr '/' ' '); do
		echo +cpuset >"$d/cgroup.subtree_control"
		d=$d/$c
	done
	echo +cpuset >"$d/cgroup.subtree_control" ||
		{ echo "FAIL: cannot enable cpuset below $deleg"; exit 1; }
fi

# setpriv itself, not a subshell running it: $! is the process.
setpriv --reuid="$uid" --regid="$gid" --clear-groups sleep 600 >/dev/null 2>&1 &
pid=$!
# Moved once it runs as the user (setpriv is root until it execs).
wait_runs_as "$pid" "$uid" sleep
# The user moves it (v1); v2 wants write access to the common ancestor
# of both cgroups too, here root's: root moves it there.
as_user sh -c "echo $pid >'$own/cgroup.procs'" 2>/dev/null || echo "$pid" >"$own/cgroup.procs" ||
	{ echo "FAIL: cannot move pid $pid into its cgroup"; exit 1; }
line=$(grep -F "$rel" "/proc/$pid/cgroup")
at=$(awk -v l="$line" -v f="/$fake/" 'BEGIN { print index(l, f) }')	# 0-based, past the /
echo "  pid $pid (uid $uid) in a cgroup whose /proc/$pid/cgroup line is ${#line} bytes," \
	"'$fake' at byte $at; victim $victim, cpuset.mems '$victim_before'"
check "the look-alike is at byte 511 of the line" test "$at" -eq 511

"$cli" --local move --pid "$pid" --to-node 0 --update-cpuset --json >"$tmp/out" 2>"$tmp/err"
rc=$?
echo "  memmig-cli exited $rc: $(grep -v ': info:' "$tmp/err" | head -n 2)"
echo "  rebalance: $(jq -c '.rebalance | {state, cgroup, nodeset_after, message}' "$tmp/out" 2>/dev/null)"
check "the victim's cpuset.mems is untouched ('$victim_before')" \
	test "$(cat "$victim/cpuset.mems")" = "$victim_before"
if [ "$rc" -eq 0 ]; then
	check "the cgroup written is the process's own" \
		test "$(jq -r .rebalance.cgroup "$tmp/out")" = "$own"
	check "its own cpuset.mems narrowed to 0" test "$(cat "$own/cpuset.mems")" = 0
else
	check "refused, saying why" grep -q "update-cpuset" "$tmp/err"
fi
summary
