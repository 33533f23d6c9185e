#!/bin/bash
# memmig-cli against a real memmigd over its real socket: moves by pid with
# the bytes checked, jobs, status, cancel, errors, the "via" line, the
# progress bar on a terminal, and a client running as nobody that may move
# its own process but not root's.
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
daemon=${MEMMIGD:-src/daemon/memmigd}
memhog=${MEMHOG:-tests/helpers/memhog}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"

command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }
[ -x "$daemon" ] || { echo "FAIL: $daemon was not built"; exit 1; }

chmod 755 "$tmp"
sock=$tmp/memmigd.sock
memmigd_start "$sock" --group nogroup
mc() { "$cli" --socket "$sock" "$@"; }

check "memmigd listens" test -S "$sock"
check "socket mode 0660" test "$(stat -c %a "$sock")" = 660
check "socket group nogroup" test "$(stat -c %G "$sock")" = nogroup

memhog_start 96 32
first=$(verify)
check "data intact before" test "${first% *}" = "verify ok"

# nodes: the daemon's view, and it says so
check "nodes via memmigd" exit_is 0 mc nodes --json
check "nodes lists node 0" test "$(jq '.nodes[0].id' "$tmp/out")" -eq 0
check "says via memmigd" grep -q "via memmigd at $sock" "$tmp/err"

# a whole-process move, followed to its end
check "move --wait" exit_is 0 mc move --pid "$hog" --to-node 0 --wait --json
check "job via memmigd" test "$(jq -r .via "$tmp/out")" = memmigd
check "job result OK" test "$(jq -r .result "$tmp/out")" = OK
check "report pid" test "$(jq .report.pid "$tmp/out")" -eq "$hog"
check "report result" test "$(jq -r .report.result "$tmp/out")" = OK
check "report kernel strategy" test "$(jq -r .report.strategy "$tmp/out")" = kernel
check "nothing failed" test "$(jq .report.pages_failed "$tmp/out")" -eq 0
check "memhog's 128 MiB on node 0" test "$(jq .report.pages_on_target "$tmp/out")" -ge $((128 * 256))
job=$(jq .id "$tmp/out")
# move --wait learns of the end from the job's last event: no polling
job_requests() {
	mc stats --prometheus | sed -n 's/^memmigd_requests_total{op="job"} //p' | grep . || echo 0
}
polled=$(job_requests)
check "move --wait (events)" exit_is 0 mc move --pid "$hog" --to-node 0 --wait --json
check "the end came by event: no job request" test "$(job_requests)" = "$polled"
# ... and polls when memmigd has no room for one more subscriber
subs=
for _ in $(seq 16); do
	mc events >/dev/null 2>&1 &
	subs="$subs $!"
done
for _ in $(seq 100); do
	[ "$(mc status --json 2>/dev/null | jq .subscribers)" = 16 ] && break
	sleep 0.1
done
check "move --wait without events" exit_is 0 mc move --pid "$hog" --to-node 0 --wait --json
check "without events: result OK" test "$(jq -r .result "$tmp/out")" = OK
check "without events: polled" test "$(job_requests)" -gt "$polled"
kill $subs 2>/dev/null
wait $subs 2>/dev/null
second=$(verify)
check "data intact after move" test "${second% *}" = "verify ok"
check "memhog still running" test "${second##* }" -gt "${first##* }"

# a range, without --wait: a job number, then status and jobs
end=$(printf '0x%x' $((anon_addr + anon_len)))
check "move range queued" exit_is 0 mc move --pid "$hog" --to-node 0 --range "$anon_addr-$end"
check "job number printed" grep -q '^job [0-9]* \(queued\|running\|done\): memmig-cli status [0-9]*' "$tmp/out"
job2=$(sed -n 's/^job \([0-9]*\) .*/\1/p' "$tmp/out")
for _ in $(seq 100); do
	mc status "$job2" --json >"$tmp/st" 2>/dev/null
	[ "$(jq -r .state "$tmp/st")" = done ] && break
	sleep 0.1
done
check "range job done" test "$(jq -r .state "$tmp/st")" = done
check "range job result OK" test "$(jq -r .result "$tmp/st")" = OK
check "range job moved the range" test "$(jq .report.bytes_total "$tmp/st")" -eq "$anon_len"
check "status text" exit_is 0 mc status "$job2"
check "status text has the report" grep -q "^pid $hog: moved" "$tmp/out"
check "jobs lists both" exit_is 0 mc jobs --json
check "jobs has the first job" test "$(jq "[.[] | select(.id == $job)] | length" "$tmp/out")" -eq 1
check "jobs has the second job" test "$(jq "[.[] | select(.id == $job2)] | length" "$tmp/out")" -eq 1
check "jobs table" exit_is 0 mc jobs
check "jobs table rows" test "$(grep -c ' done ' "$tmp/out")" -ge 2
check "cancel a finished job fails" exit_is 1 mc cancel "$job2" --json
check "it says EALREADY" test "$(jq -r .error "$tmp/out")" = EALREADY
check "it stays done" test "$(jq -r .job.state "$tmp/out")" = done
third=$(verify)
check "data intact after range move" test "${third% *}" = "verify ok"

# the progress bar shows on a terminal, and not in a pipe
script -qec "$cli --socket $sock move --pid $hog --to-node 0 --wait" "$tmp/tty" >/dev/null 2>&1
check "progress bar on a tty" grep -q "GB/s  ETA" "$tmp/tty"
mc move --pid "$hog" --to-node 0 --wait >"$tmp/out" 2>"$tmp/err"
check "no progress bar in a pipe" sh -c "! grep -q ETA '$tmp/err' '$tmp/out'"

# errors: clear, with exit codes
check "no such node" exit_is 1 mc move --pid "$hog" --to-node 9 --wait
check "no such node named" grep -q "node 9 does not exist (nodes with memory: " "$tmp/err"
check "copy refused" exit_is 1 mc move --pid "$hog" --to-node 0 --strategy copy
check "copy refused: EINVAL" grep -q "EINVAL" "$tmp/err"
check "unmapped range" exit_is 1 mc move --pid "$hog" --to-node 0 --range 0x1000-0x2000
check "unmapped range: EFAULT" grep -q "EFAULT" "$tmp/err"
check "no such job" exit_is 1 mc status 999999
check "no such job: ESRCH" grep -q "ESRCH" "$tmp/err"
check "unknown domain" exit_is 1 mc move --domain nosuchvm --to-node 0
check "unknown domain: ENOENT" grep -q "ENOENT" "$tmp/err"
check "bad range" exit_is 2 mc move --pid "$hog" --to-node 0 --range 0x2000-0x1000
check "socket that nobody serves" exit_is 3 "$cli" --socket "$tmp/none" jobs
check "--local has no jobs" exit_is 3 "$cli" --local jobs
check "--local move says so" exit_is 0 "$cli" --local move --pid "$hog" --to-node 0
check "in-process line" grep -q "in-process (--local)" "$tmp/err"

# nobody: may move its own process, not root's, and sees none of root's jobs
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
setpriv --reuid=nobody --regid=nogroup --clear-groups "$memhog" 16 8 >"$tmp/nhog.out" &
nhog=$!
for _ in $(seq 100); do grep -q '^ready' "$tmp/nhog.out" && break; sleep 0.1; done
check "nobody may not move root's process" \
	exit_is 1 as_nobody "$cli" --socket "$sock" move --pid "$hog" --to-node 0 --wait
check "refused with EPERM" grep -q "EPERM" "$tmp/err"
check "nobody moves its own process" \
	exit_is 0 as_nobody "$cli" --socket "$sock" move --pid "$nhog" --to-node 0 --wait --json
check "nobody's move result" test "$(jq -r .result "$tmp/out")" = OK
check "nobody lists jobs" exit_is 0 as_nobody "$cli" --socket "$sock" jobs --json
check "nobody sees only its job" test "$(jq "[.[] | select(.uid != 65534)] | length" "$tmp/out")" -eq 0
check "nobody cannot read root's job" exit_is 1 as_nobody "$cli" --socket "$sock" status "$job"
check "nobody cannot cancel root's job" exit_is 1 as_nobody "$cli" --socket "$sock" cancel "$job"
kill "$nhog"
fourth=$(verify)
check "root's data intact" test "${fourth% *}" = "verify ok"

memhog_stop
memmigd_stop
check "memmigd removed its socket" test ! -e "$sock"
summary
