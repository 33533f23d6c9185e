#!/bin/bash
# In the multi-node tier (issue 34): a tiering lasts only as long as its
# owner may move the process.  nobody tiers its own shell (node 0 fast,
# node 2 slow), which then execs a setuid-root copy of bash: the same pid,
# now root's and not dumpable, whose 24 MiB of cold memory the tiering
# would demote to node 2.  memmigd checks move_pages(2)'s rule again
# before each interval: within an interval or two the tiering ends with
# EPERM (its state, its result, what nobody sees of it), and the root
# process's pages stay where they were (numa_maps).
set -u
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"
cli=${MEMMIG_CLI:-memmig-cli}
daemon=$(command -v "${MEMMIGD:-memmigd}")
fast=0 slow=2 interval_ms=500

need_nodes "$fast" "$slow"
command -v setpriv.util-linux >/dev/null || { echo "FAIL: no setpriv in the guest (util-linux)"; exit 1; }
command -v jq >/dev/null || { echo "FAIL: no jq in the guest"; exit 1; }
bash_bin=$(command -v bash)
asnobody() { setpriv.util-linux --reuid=65534 --regid=65534 --clear-groups "$@"; }

dir=/tmp/memmigd-tier-perm
sock=$dir/memmigd.sock
mkdir -p "$dir" && chmod 755 "$dir"
cp "$bash_bin" "$dir/bash-suid" && chmod 4755 "$dir/bash-suid"
mkfifo "$dir/go" "$dir/stay" && chmod 666 "$dir/go" "$dir/stay"
memmigd_start "$sock"
chgrp 65534 "$sock"
mc() { "$cli" --socket "$sock" "$@"; }

# nobody's shell, on CPU 0 (its pages on node 0): once told, it execs the
# setuid bash, which fills 24 MiB (cold from then on) and waits.
# shellcheck disable=SC2016 # expanded by the setuid bash
taskset 1 setpriv.util-linux --reuid=65534 --regid=65534 --clear-groups "$bash_bin" -c \
	'read -r _ <"$1"; exec "$2" -p -c "s=\$(printf %25165824s x); echo \${#s} >$3/ready; read -r _ <$3/stay"' \
	- "$dir/go" "$dir/bash-suid" "$dir" &
pid=$!
wait_runs_as "$pid" 65534 "${bash_bin##*/}"
asnobody "$cli" --socket "$sock" tier --pid "$pid" --fast "$fast" --slow "$slow" \
	--slow-share 75 --interval "${interval_ms}ms" --cold 1 --json >"$tmp/set.json" 2>"$tmp/set.err"
id=$(jq -r .id "$tmp/set.json" 2>/dev/null)
check "nobody tiers its own shell ($(cat "$tmp/set.err") tiering ${id:-none})" test -n "$id" -a "$id" != null
sleep 1
asnobody "$cli" --socket "$sock" tier --show "$id" --json >"$tmp/before.json"
echo "  tiering $id of pid $pid: $(jq -c '{state, intervals, bytes_resident}' "$tmp/before.json")"
check "the tiering runs" test "$(jq -r .state "$tmp/before.json")" = running

# The exec: the same pid, root's.  What the tiering showed then is the
# last it may show: every interval after it read a process of root's.
# Its anonymous pages on node 2: what a tiering moves.  Not its files':
# bash-suid's copy in /tmp sits wherever cp found room (node 2 when node 0
# was full), and N2 grows as the shell maps more of it, nothing moved.
n2() { awk '!/ file=/ { for (i = 2; i <= NF; i++) if ($i ~ /^N2=/) s += substr($i, 4) }
	END { print s + 0 }' "/proc/$pid/numa_maps"; }
echo go >"$dir/go"
for _ in $(seq 300); do
	[ "$(awk '/^Uid:/ { print $3 }' "/proc/$pid/status")" = 0 ] && break
	sleep 0.05
done
mc tier --show "$id" --json >"$tmp/at-exec.json"
n2_before=$(n2)
for _ in $(seq 300); do
	[ -s "$dir/ready" ] && break
	sleep 0.1
done
uids=$(awk '/^Uid:/ { print $2, $3 }' "/proc/$pid/status")
echo "  pid $pid after the exec: uids (real, effective) $uids, a string of $(cat "$dir/ready" 2>/dev/null) bytes;" \
	"the tiering then: $(jq -c '{state, intervals}' "$tmp/at-exec.json")"
check "the shell runs setuid root" test "$uids" = "65534 0"

# Within an interval or two, counted by the tiering itself (not by the
# clock: under TCG an interval's work takes what it takes): ended, EPERM.
# The interval running at the exec is checked after it; the next before.
at_exec=$(jq -r '.intervals // 0' "$tmp/at-exec.json")
for _ in $(seq 1200); do
	mc tier --show "$id" --json >"$tmp/show.json"
	[ "$(jq -r .state "$tmp/show.json")" = ended ] && break
	[ "$(jq -r '.intervals // 0' "$tmp/show.json")" -gt $((at_exec + 2)) ] && break
	sleep 0.1
done
# And a few intervals more, for moves that would still come.
sleep $((3 * interval_ms / 1000 + 1))
n2_after=$(n2)
echo "  tiering $id: $(jq -c '{state, result, intervals, demoted_bytes, promoted_bytes}' "$tmp/show.json")"
echo "  pid $pid's pages on node 2: $n2_before at the exec, $n2_after now"
check "the tiering ended with EPERM" test "$(jq -r '.state + " " + .result' "$tmp/show.json")" = "ended EPERM"
check "the root process's pages stayed: none went to node $slow" test "$n2_after" -eq "$n2_before"
asnobody "$cli" --socket "$sock" tier --show "$id" --json >"$tmp/nobody.json"
echo "  what nobody sees: $(jq -c '{state, result, intervals}' "$tmp/nobody.json")"
check "nobody sees it ended with EPERM" \
	test "$(jq -r '.state + " " + .result' "$tmp/nobody.json")" = "ended EPERM"
# Nothing of the root process's: no interval after the exec, none with
# its 24 MiB string among the memory counted.
check "no interval after the exec shown to nobody ($(jq .intervals "$tmp/nobody.json"), $(jq .intervals "$tmp/at-exec.json") at the exec)" \
	test "$(jq .intervals "$tmp/nobody.json")" -le "$(jq .intervals "$tmp/at-exec.json")"
check "no figure of the root process's shown to nobody ($(jq .bytes_resident "$tmp/nobody.json") bytes resident)" \
	test "$(jq .bytes_resident "$tmp/nobody.json")" -lt $((24 << 20))
grep -i "tier" "$tmp/daemon.log" | sed 's/^/  memmigd: /' | tail -n 3
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
memmigd_stop
summary
