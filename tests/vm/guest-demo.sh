#!/bin/bash
# In the multi-node guest (run-vm.sh): `memmig-cli demo`, the README's main
# job, on a host with real nodes.  With the guest's /dev/kvm (KVM nested in
# TCG) a KVM guest's RAM moves live between DRAM node 0 and the node of CXL
# memory (the CPU-less node 2 without one), as memmig is meant to be used,
# and every page is checked after each move.  Where there is no CXL memory
# (moves to it are slow under QEMU), the same with a host thread as the
# guest (--no-kvm, the path of hosts without /dev/kvm: soft-dirty tracking
# on 6.1, userfaultfd on 6.12), and the text table.
set -u
cli=${MEMMIG_CLI:-memmig-cli}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"
need_nodes 0 1 2
command -v jq >/dev/null || { echo "SKIP: no jq in the guest (apt-get install jq)"; exit 77; }
[ -c /dev/kvm ] || { echo "FAIL: no /dev/kvm in the tier's guest (kvm-amd did not load)"; exit 1; }
# The far node: the CXL memory node where the tier made one (guest-cxl.sh),
# else the CPU-less node 2.
# Small guests there: QEMU 7.2 emulates each access to CXL memory, and
# zeroing a destination on it runs at about 0.5 MB/s.
far=${MEMMIG_CXL_NODE:-2} far_kind="CPU-less memory" mem=16M
[ -n "${MEMMIG_CXL_NODE:-}" ] && far_kind="CXL memory" mem=8M

# demo NAME GUEST ARGS...: runs the demo as JSON and checks what it says:
# the guest kind, the nodes (0 DRAM, 2 CPU-less), targets alternating
# between them, and every migration verified with nothing lost.
demo() {
	local name=$1 guest=$2 n=2
	shift 2
	echo "== $name: memmig-cli demo --mem $mem --migrations $n --budget-ms 250 $*"
	if ! exit_is 0 "$cli" demo --mem "$mem" --migrations "$n" --budget-ms 250 --json "$@"; then
		cat "$tmp/out"
		fails=$((fails + 1))
		return
	fi
	jq -M -c '.migrations[] | {target, bytes_per_s, rounds, stop_reason, pause_s, pauses,
		pause_total_s, stop_s: .pause.stop.s, stall_s, stall_source, pause_bytes,
		dirty_method, verified, lost_writes}' "$tmp/out"
	check "$name: guest is $guest" \
		test "$(jq -r .guest "$tmp/out")" = "$guest"
	check "$name: nodes 0 (DRAM) and $far ($far_kind)" \
		test "$(jq -c '[.nodes[] | [.id, .kind]]' "$tmp/out")" = \
		"[[0,\"DRAM\"],[$far,\"$far_kind\"]]"
	check "$name: targets node $far, node 0" \
		test "$(jq -c '[.migrations[].target]' "$tmp/out")" = \
		"[\"node $far\",\"node 0\"]"
	check "$name: $n migrations, all verified, nothing lost or torn" \
		test "$(jq '[.migrations[] | select(.verified and .lost_writes == 0 and
			.torn_pages == 0 and .guest_errors == 0)] | length' "$tmp/out")" = "$n"
	# The guest's own clock (the writer's, or the KVM guest's TSC) saw
	# memmig's longest pause: a stall at least half as long as the part of
	# it the guest was stopped for.  pause() returns once the vCPU is out
	# of KVM_RUN, and the guest runs until then (the check failed a CI
	# run under TCG: 41 ms of pause, a 17 ms stall, its stop not shown).
	check "$name: the guest timed its stalls, memmig's pause among them" \
		test "$(jq --arg g "$guest" '[.migrations[] | select(.stall_source ==
			(if $g == "kvm" then "guest" else "writer" end) and
			.stall_s >= (.pause_s - .pause.stop.s) / 2)] | length' "$tmp/out")" = "$n"
}

# What the demo's choice rests on: the node says it is CXL memory, and
# from which device DAX, in the JSON and the table.
if [ -n "${MEMMIG_CXL_NODE:-}" ]; then
	check "memmig-cli nodes" exit_is 0 "$cli" nodes --json
	check "nodes --json: node $far is CXL memory from a device DAX" \
		test "$(jq -r --argjson n "$far" '.nodes[] | select(.id == $n) |
			"\(.cxl) \(.dax // "" | startswith("dax"))"' "$tmp/out")" = "true true"
	# memmig-cli is linked statically where it can be: its DAX devices
	# come from sysfs then, not libdaxctl; daxctl's own list is the check.
	dax_fields='[(if type == "array" then .[] else . end) |
		[.dev // .chardev, .size, .align, .target_node, .mode]] | sort'
	check "nodes --json: the DAX devices daxctl lists, field by field" \
		test "$(jq -c ".dax | $dax_fields" "$tmp/out")" = \
			"$(daxctl list -D | jq -c "$dax_fields")"
	check "memmig-cli nodes (table)" exit_is 0 "$cli" nodes
	grep -Eq "^ +$far .*CXL, device DAX dax" "$tmp/out" ||
		{ echo "FAIL: no CXL line for node $far in:"; cat "$tmp/out"; fails=$((fails + 1)); }
fi
demo "KVM guest" kvm
if [ -n "${MEMMIG_CXL_NODE:-}" ]; then
	# Each move to CXL memory takes half a minute here; the second boot
	# of the tier (run-vm-new.sh, no CXL devices) runs these.
	echo "  (the host-thread demo and the text table: in the boot without CXL)"
	summary
	exit
fi
demo "host thread" thread --no-kvm
# Human output names the nodes too.
check "the table names the nodes" \
	exit_is 0 "$cli" demo --mem "$mem" --migrations 1 --budget-ms 250
grep -q "between node 0 (DRAM) and node $far ($far_kind)" "$tmp/out" ||
	{ echo "FAIL: no node line in:"; cat "$tmp/out"; fails=$((fails + 1)); }
# The VMM tiers its own KVM guest (memmig_tier with opts.vm): the hot-set
# guest's window kept on node 0, the rest on node 2, every page checked.
echo "== memmig-cli demo --tier --mem 32M --budget-ms 500 --json"
if exit_is 0 "$cli" demo --tier --mem 32M --budget-ms 500 --json; then
	jq -M -c '{guest, hot_fast_min_2i_pct, slow_pct_mean, slow_target_pct, promotions,
		demotions, bounce_pct, react_s, pause_max_s, stall_max_s, lost, torn, verified}' "$tmp/out"
	check "demo --tier: a KVM guest tiered between node 0 and node $far, every page verified" \
		jq -e --argjson f "$far" '.verified and .guest == "kvm" and .promotions > 0 and
			.demotions > 0 and ([.nodes[].id] == [0, $f])' "$tmp/out"
else
	echo "FAIL: demo --tier"
	cat "$tmp/out"
	fails=$((fails + 1))
fi
summary
