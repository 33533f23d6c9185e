#!/bin/bash
# In the multi-node tier, where DAMON is (run-vm-new.sh): memmigd SIGKILLed
# while it tiers a process leaves its kdamond on (issue 37: 10 of 10 tries,
# until the tiered process exited, and a new memmigd did not stop it).
# Its state file names that kdamond by its thread's pid: the next memmigd
# stops it at start -- and leaves alone a kdamond an admin started since
# at the same index, whose thread is another.  The tiered process's bytes
# stay intact throughout.
set -u
cli=${MEMMIG_CLI:-memmig-cli}
daemon=${MEMMIGD:-memmigd}
memhog=${MEMHOG:-memhog}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"
need_nodes 0 2
K=/sys/kernel/mm/damon/admin/kdamonds
[ -d "$K" ] || { echo "SKIP: no DAMON sysfs here ($K): the kdamond cases need it"; exit 77; }

sock=$tmp/memmigd.sock
kd_state() { cat "$K/0/state" 2>/dev/null || echo none; }
# The pid file answers EBUSY while any DAMON command runs (memmigd's
# collection of accessed regions): read again.
kd_pid() {
	for _ in $(seq 50); do cat "$K/0/pid" 2>/dev/null && return; sleep 0.1; done
	echo none
}
# tiered: memmigd tiers memhog's process until its kdamond is on
tiered() {
	mc tier --pid "$hog" --fast 0 --slow 2 --interval 500ms --json >"$tmp/tier.json" 2>&1 ||
		{ sed 's/^/  tier: /' "$tmp/tier.json"; return 1; }
	for _ in $(seq 100); do
		[ "$(kd_state)" = on ] && return 0
		sleep 0.1
	done
	echo "  kdamond 0 is $(kd_state); memmigd: $(tail -3 "$tmp/daemon.log")"
	return 1
}
kill9() {
	kill -9 "$dpid"
	wait "$dpid" 2>/dev/null
	rm -f "$sock"
}

memhog_start 32 8
check "memmigd starts" daemon_start
check "memmigd tiers memhog with DAMON" tiered
kp=$(kd_pid)
kill9
check "SIGKILLed, memmigd left its kdamond on (pid $kp)" test "$(kd_state) $(kd_pid)" = "on $kp"
check "memmigd starts again" daemon_start
for _ in $(seq 20); do [ "$(kd_state)" = off ] && break; sleep 0.1; done
echo "  after the restart: kdamond 0 $(kd_state); memmigd: $(grep DAMON "$tmp/daemon.log" | tail -1)"
check "the new memmigd stopped the killed one's kdamond" test "$(kd_state)" = off
check_alive "after the restart"

# Killed again; then an admin stops that kdamond and starts it as their
# own (same index, new thread): the next memmigd leaves it on.
check "memmigd tiers memhog again" tiered
kp=$(kd_pid)
kill9
echo off >"$K/0/state"
echo on >"$K/0/state"
admin=$(kd_pid)
check "the admin's kdamond runs as another thread ($admin, memmig's was $kp)" \
	test "$(kd_state)" = on -a "$admin" != "$kp"
check "memmigd starts beside the admin's kdamond" daemon_start
sleep 0.5
echo "  the admin's kdamond after memmigd started: $(kd_state) $(kd_pid);" \
	"memmigd: $(grep DAMON "$tmp/daemon.log" | tail -1)"
check "memmigd left the admin's kdamond on" test "$(kd_state) $(kd_pid)" = "on $admin"
# The admin's, stopped and removed by the admin: DAMON as the test found
# it, for the next tests (memmig takes no kdamond someone configured).
echo off >"$K/0/state"
echo 0 >"$K/nr_kdamonds"
kill -TERM "$dpid"
wait "$dpid"
check "memmigd exits 0" test $? -eq 0
check_alive "at the end"
memhog_stop
summary
