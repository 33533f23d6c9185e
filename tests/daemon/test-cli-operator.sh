#!/bin/bash
# What an operator meets first with a real memmigd (issue 33): cancel says
# what it did, sizes in one human format, status's uptime and libvirt
# line, memmigd's errors in one form, and events through a stop while a
# job runs (held running by MEMMIG_MOVE_HOLD).
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
daemon=${MEMMIGD:-src/daemon/memmigd}
memhog=${MEMHOG:-tests/helpers/memhog}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"

command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }
[ -x "$daemon" ] || { echo "FAIL: $daemon was not built"; exit 1; }
not() { ! "$@"; }

sock=$tmp/memmigd.sock
hold=$tmp/hold
planhold=$tmp/plan-hold
touch "$hold"
MEMMIG_MOVE_HOLD=$hold MEMMIG_PLAN_HOLD=$planhold memmigd_start "$sock" --max-jobs-per-node 1
mc() { "$cli" --socket "$sock" "$@"; }
memhog_start 64 16

# wait_state JOB STATE: the job reaches STATE within 10 s
wait_state() {
	for _ in $(seq 100); do
		[ "$(mc status "$1" --json 2>/dev/null | jq -r .state)" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# status: a human uptime, memmigd's own line
check "status" exit_is 0 mc status
check "status: up N s" grep -Eq '^memmigd .*, pid [0-9]+, up [0-9]+ s$' "$tmp/out"
check "status: no d hh:mm:ss" not grep -q ' d [0-9][0-9]:' "$tmp/out"
check "status: limits in one size format" grep -q 'each dropped past 256 KiB unread' "$tmp/out"

# cancel: a running job stops after its units, a queued one at once
check "move (held running)" exit_is 0 mc move --pid "$hog" --to-node 0 --json
run=$(jq .id "$tmp/out")
check "job running" wait_state "$run" running
check "move (queued behind it)" exit_is 0 mc move --pid "$hog" --to-node 0 --json
queued=$(jq .id "$tmp/out")
check "cancel the queued job" exit_is 0 mc cancel "$queued"
check "says cancelled" test "$(cat "$tmp/out")" = "job $queued: cancelled"

# events through a stop: the running job's last event, then memmigd's
mc events --json >"$tmp/events" 2>"$tmp/events.err" &
epid=$!
for _ in $(seq 100); do
	mc status --json 2>/dev/null | jq -e '.subscribers == 1' >/dev/null && break
	sleep 0.05
done
check "cancel the running job" exit_is 0 mc cancel "$run"
check "says it stops after its units" \
	test "$(cat "$tmp/out")" = "job $run: cancel requested; it stops after its current units"
check "cancel --json: the job object" exit_is 1 mc cancel "$queued" --json
check "an ended job: EALREADY" test "$(jq -r .error "$tmp/out")" = EALREADY
check "the held job ends cancelled" wait_state "$run" cancelled
check "status JOB: the job's message" exit_is 0 mc status "$run"
check "status JOB: no raw byte counts" not grep -Eq '[0-9]{5,} (bytes|KiB)' "$tmp/out"

# move --wait and Ctrl-C: memmigd is asked to cancel on the one connection
# that also brings the job's events, and the job ends cancelled
"$cli" --socket "$sock" move --pid "$hog" --to-node 0 --wait --json >"$tmp/int.out" \
	2>"$tmp/int.err" &
mpid=$!
# Running, and the client has its handler: a background job ignores
# SIGINT until memmig-cli sets one.
sigint_caught() {
	local m

	[ "$(cat "/proc/$1/comm" 2>/dev/null)" = memmig-cli ] || return 1
	m=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
	[ -n "$m" ] && (((0x$m >> 1) & 1))
}
for _ in $(seq 100); do
	mc jobs --json 2>/dev/null | jq -e '[.[] | select(.state == "running")] | length == 1' \
		>/dev/null && sigint_caught "$mpid" && break
	sleep 0.1
done
kill -INT "$mpid"
wait "$mpid"
check "move --wait, SIGINT: exit 1" test $? -eq 1
check "SIGINT: the job ended cancelled" test "$(jq -r .state "$tmp/int.out")" = cancelled
check "SIGINT: says what stays where" grep -q "cancelled: what moved stays moved" "$tmp/int.err"

# ... and before memmigd answered: the job it starts then is cancelled too
# (memmigd held at the plan's end; the client used to catch SIGINT only
# once the answer came, and a Ctrl-C in between was lost or ended it)
touch "$planhold"
"$cli" --socket "$sock" move --pid "$hog" --to-node 0 --wait --json >"$tmp/int2.out" \
	2>"$tmp/int2.err" &
mpid=$!
for _ in $(seq 100); do
	sigint_caught "$mpid" && break
	sleep 0.1
done
kill -INT "$mpid"
rm -f "$planhold"
for _ in $(seq 100); do
	kill -0 "$mpid" 2>/dev/null || break
	sleep 0.1
done
kill -KILL "$mpid" 2>/dev/null	# still following: the Ctrl-C was lost
wait "$mpid"
check "SIGINT before the answer: exit 1" test $? -eq 1
check "SIGINT before the answer: the job ended cancelled" \
	test "$(jq -r .state "$tmp/int2.out")" = cancelled

# tables: a long domain name is cut with "...", the columns stay aligned
rm -f "$hold"
long=a-domain-with-a-name-longer-than-any-column-should-be-$RANDOM
check "register a long name" exit_is 0 mc domains register --name "$long" --pid "$hog"
check "move it" exit_is 0 mc move --domain "$long" --to-node 0 --wait
check "its report in one size format" grep -Eq "^pid $hog: moved [0-9.]+ (B|KiB|MiB) of [0-9.]+ MiB " "$tmp/out"
check "domains" exit_is 0 mc domains
check "domains: the name cut" grep -Eq '^a-domain-with-a-name-[a-z-]{8}\.\.\. ' "$tmp/out"
check "domains: rows as wide as the head" \
	test "$(awk '{ print index($0, " source") ? index($0, "source") : 0 }' "$tmp/out" | head -n 1)" = \
	"$(awk 'NR == 2 { print index($0, "hook") }' "$tmp/out")"
check "jobs" exit_is 0 mc jobs
check "jobs: the target cut" grep -Eq ' domain a-domain-with-a-name-[a-z-]\.\.\. ' "$tmp/out"
# every row's "node" column ends where the head's does
check "jobs: aligned" test "$(awk 'NR == 1 { e = index($0, "node") + 3 }
	NR > 1 && substr($0, e, 1) !~ /[0-9]/ { bad++ } END { print bad + 0 }' "$tmp/out")" = 0
touch "$hold"

# a job running at SIGTERM: subscribers hear its end, then memmigd's
check "move (held) before the stop" exit_is 0 mc move --pid "$hog" --to-node 0 --json
last=$(jq .id "$tmp/out")
check "job running before the stop" wait_state "$last" running
memmigd_stop
wait "$epid"
check "events exits 0 when memmigd stops" test $? -eq 0
check "the running job's last event: cancelled" \
	test "$(jq -r "select(.event == \"job\" and .job.id == $last) | .job.state" "$tmp/events" |
		tail -n 1)" = cancelled
check "memmigd's stopping event last" \
	test "$(tail -n 1 "$tmp/events" | jq -r .memmigd.state)" = stopping
check "events: no error" test ! -s "$tmp/events.err"
rm -f "$hold"

# memmigd's own errors: one "memmigd: error:" form
check "memmigd --bogus" exit_is 2 "$daemon" --foreground --bogus
check "--bogus: one form" grep -q "^memmigd: error: unrecognized option '--bogus'" "$tmp/err"
check "memmigd extra argument" exit_is 2 "$daemon" --foreground --config /dev/null extra
check "argument: one form" grep -qx "memmigd: error: unexpected argument 'extra'" "$tmp/err"
check "memmigd --max-jobs x" exit_is 2 "$daemon" --foreground --config /dev/null --max-jobs x
check "--max-jobs: one form" grep -q "^memmigd: error: --max-jobs" "$tmp/err"
printf 'bogus_key = 1\n' >"$tmp/bad.conf"
check "memmigd bad config" exit_is 2 "$daemon" --foreground --config "$tmp/bad.conf"
check "config: one form" grep -q "^memmigd: error: " "$tmp/err"
# --socket in a directory that does not exist: made, root's, 0755
deep=$tmp/a/b/memmigd.sock
memmigd_start "$deep"
check "socket in new directories" test -S "$deep"
check "its directory made 0755" test "$(stat -c %a "$tmp/a/b")" = 755
check "... and the one above" test "$(stat -c %a "$tmp/a")" = 755
memmigd_stop

# libvirtd unreachable: which URI, why, and that memmigd retries
bad_uri="qemu+unix:///system?socket=$tmp/no-libvirtd.sock"
"$daemon" --foreground --socket "$sock" --libvirt-uri "$bad_uri" --config /dev/null \
	2>"$tmp/daemon.log" &
dpid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
for _ in $(seq 100); do
	mc status --json 2>/dev/null | jq -e '.libvirt_error != null and .libvirt_error != "connecting"' \
		>/dev/null && break
	sleep 0.1
done
check "status, libvirtd down" exit_is 0 mc status
check "libvirt: disconnected from the URI, why, retrying" \
	grep -q "^libvirt:  disconnected from $bad_uri (.*no-libvirtd.sock.*), retrying$" "$tmp/out"
check "status --json: libvirt_uri" test "$(mc status --json | jq -r .libvirt_uri)" = "$bad_uri"
memmigd_stop
memhog_stop
summary
