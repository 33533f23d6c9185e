#!/bin/bash
# In the multi-node guest (run-vm.sh): memmig-cli bench move between node 0
# and the CPU-less node 2, 4 KiB pages and THPs, with memmigd running, so
# that every mover of the issue runs beside the kernel's own tools in one
# run.  Its JSON goes on one console line that starts with "BENCH-MOVE ",
# with the acceleration the guest ran under (run-vm.sh's VM_ACCEL, on the
# kernel command line).  It checks what the bench proves, not speeds: every
# mover ran, every case's data verified, pages arrived where asked.
set -u
cli=${MEMMIG_CLI:-memmig-cli}
daemon=${MEMMIGD:-memmigd}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"
need_nodes 0 2
command -v "$daemon" >/dev/null || { echo "FAIL: $daemon is not in the guest"; exit 1; }
command -v jq >/dev/null || { echo "SKIP: jq is not in the guest (apt-get install jq)"; exit 77; }

sock=$tmp/memmigd.sock
check "memmigd starts" daemon_start
sizes=${MEMMIG_BENCH_MOVE_SIZES:-64M,160M}
mc bench move --nodes 0,2 --sizes "$sizes" --reps 3 --json >"$tmp/bench.json" 2>"$tmp/err"
check "bench move ran (exit 0)" test $? -eq 0
sed 's/^/  /' "$tmp/err" | grep -v '^  *$' | tail -n 5
accel=${MEMMIG_ACCEL:-tcg,thread=single}
echo "BENCH-MOVE $(jq -c --arg accel "$accel" '. + {accel: $accel}' "$tmp/bench.json")"

q() { jq -r "$1" "$tmp/bench.json"; }
check "bench move: memmigd was used" test "$(q .memmigd)" = true
check "bench move: 4k and thp cases at two sizes" \
	test "$(q '[.cases[] | "\(.page) \(.bytes)"] | unique | length')" -ge 4
check "bench move: every case's data verified" \
	test "$(q '[.cases[] | select(.verified != true)] | length')" = 0
for k in memmig_s memmig_wall_s inproc_s migratepages_s move_pages_s migrate_pages_s; do
	check "bench move: every case has $k" \
		test "$(q "[.cases[] | select((.$k // 0) <= 0)] | length")" = 0
done
check "bench move: no notes (nothing failed or was skipped)" test "$(q '.notes | length')" = 0
q '.notes[]' | sed 's/^/  note: /'
# For people reading the console: the figures the issue's goals are about.
q '.cases[] | "  \(.page) \(.bytes / 1048576) MiB, \(.workers) worker(s): job \(.memmig_s * 1000 | floor) ms (x\(.memmig_vs_migratepages * 100 | floor / 100) of migratepages), wall \(.memmig_wall_s * 1000 | floor) ms (\(.wall_over_job * 100 | floor / 100)x the job), in-process \(.inproc_s * 1000 | floor) ms, migratepages \(.migratepages_s * 1000 | floor) ms, move_pages \(.move_pages_s * 1000 | floor) ms, migrate_pages \(.migrate_pages_s * 1000 | floor) ms"'
summary
