#!/bin/bash
# memmig-cli's view of memmigd itself against a real memmigd: status (the
# daemon's, and still a job's with JOB), stats in its three forms after a
# real move and a refused request, events followed while a move runs and
# as memmigd stops.
set -u
cli=${MEMMIG_CLI:-src/cli/memmig-cli}
daemon=${MEMMIGD:-src/daemon/memmigd}
memhog=${MEMHOG:-tests/helpers/memhog}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"

command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }
[ -x "$daemon" ] || { echo "FAIL: $daemon was not built"; exit 1; }

sock=$tmp/memmigd.sock
memmigd_start "$sock" --max-jobs 12
mc() { "$cli" --socket "$sock" "$@"; }

check "status" exit_is 0 mc status
check "status: version line" grep -q "^memmigd .* (protocol 1), pid $dpid, up " "$tmp/out"
check "status: libvirt off" grep -q "^libvirt:  off" "$tmp/out"
check "status --json" exit_is 0 mc status --json
check "status --json: max_jobs" test "$(jq .limits.max_jobs "$tmp/out")" -eq 12
check "status --json: no ok member" test "$(jq 'has("ok")' "$tmp/out")" = false

memhog_start 32 8
# events followed while a move runs: queued, running, done
mc events --json --count 3 >"$tmp/events" 2>"$tmp/events.err" &
epid=$!
for _ in $(seq 100); do
	mc status --json 2>/dev/null | jq -e '.subscribers == 1' >/dev/null && break
	sleep 0.05
done
check "move --wait" exit_is 0 mc move --pid "$hog" --to-node 0 --wait --json
# The job object (docs/json.md), or before it the report with .job.
job=$(jq '.id // .job' "$tmp/out")
moved=$(jq '.report.bytes_moved // .bytes_moved' "$tmp/out")
wait "$epid"
check "events exits 0 after --count" test $? -eq 0
check "3 events" test "$(wc -l <"$tmp/events")" -eq 3
check "the job's states in order" test "$(jq -r '.job.state' "$tmp/events" | tr '\n' ' ')" = \
	"queued running done "
check "the job's id" test "$(jq -r '.job.id' "$tmp/events" | sort -u)" = "$job"
check "status JOB still shows the job" exit_is 0 mc status "$job" --json
check "status JOB: its id" test "$(jq .id "$tmp/out")" = "$job"

check "a refused request" exit_is 1 mc status 999
check "stats --prometheus" exit_is 0 mc stats --prometheus
if command -v promtool >/dev/null; then
	check "promtool check metrics" promtool check metrics <"$tmp/out"
else
	echo "promtool is not installed (apt-get install prometheus): not run"
fi
check "1 job done" grep -qx 'memmigd_jobs_ended_total{state="done"} 1' "$tmp/out"
check "bytes moved as the report said" grep -qx "memmigd_moved_bytes_total $moved" "$tmp/out"
check "1 refused: not found" grep -qx 'memmigd_refused_requests_total{reason="not_found"} 1' "$tmp/out"
check "stats --json" exit_is 0 mc stats --json
check "stats --json: jobs created" \
	test "$(jq '.memmigd_jobs_created_total.samples[0].value' "$tmp/out")" -eq 1
check "stats" exit_is 0 mc stats
check "stats: jobs created" grep -Eq '^memmigd_jobs_created_total +1$' "$tmp/out"
check "stats --json --prometheus is a usage error" exit_is 2 mc stats --json --prometheus
check "the refusal logged" grep -q "refused: client pid [0-9]* uid 0: job: ESRCH (not_found)" \
	"$tmp/daemon.log"

# memmigd stopping ends events: its own event last, then "memmigd stopped"
# and status 0 (not a connection reset).
mc events >"$tmp/events" 2>"$tmp/events.err" &
epid=$!
for _ in $(seq 100); do
	mc status --json 2>/dev/null | jq -e '.subscribers == 1' >/dev/null && break
	sleep 0.05
done
memmigd_stop
wait "$epid"
check "events exits 0 when memmigd stops" test $? -eq 0
check "events: memmigd's stopping event" grep -q " memmigd stopping (SIGTERM)$" "$tmp/events"
check "events: says memmigd stopped, last" test "$(tail -n 1 "$tmp/events")" = "memmigd stopped"
check "events: no error" test ! -s "$tmp/events.err"
memhog_stop
summary
