#!/bin/bash
# In the multi-node guest (run-vm.sh): `memmig-cli demo`, the README's main
# job, on a host with real nodes.  With the guest's /dev/kvm (KVM nested in
# TCG) a KVM guest's RAM moves live between DRAM node 0 and the CPU-less
# node 2, as memmig is meant to be used, and every page is checked after
# each move; then the same with a host thread as the guest (--no-kvm, the
# path of hosts without /dev/kvm: soft-dirty tracking on this kernel).
set -u
cli=${MEMMIG_CLI:-memmig-cli}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"
nodes=$(cat /sys/devices/system/node/has_memory 2>/dev/null)
[ "$nodes" = 0-2 ] || { echo "SKIP: needs memory on nodes 0-2, not '$nodes'"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: no jq in the guest (apt-get install jq)"; exit 77; }
[ -c /dev/kvm ] || { echo "FAIL: no /dev/kvm in the tier's guest (kvm-amd did not load)"; exit 1; }

# demo NAME GUEST ARGS...: runs the demo as JSON and checks what it says:
# the guest kind, the nodes (0 DRAM, 2 CPU-less), targets alternating
# between them, and every migration verified with nothing lost.
demo() {
	local name=$1 guest=$2 n=3
	shift 2
	echo "== $name: memmig-cli demo --mem 32M --migrations $n --budget-ms 250 $*"
	if ! exit_is 0 "$cli" demo --mem 32M --migrations "$n" --budget-ms 250 --json "$@"; then
		cat "$tmp/out"
		fails=$((fails + 1))
		return
	fi
	jq -M -c '.migrations[] | {target, gbps, rounds, stop_reason, pause_ms, pause_bytes,
		dirty_method, verified, lost_writes}' "$tmp/out"
	check "$name: guest is $guest" \
		test "$(jq -r .guest "$tmp/out")" = "$guest"
	check "$name: nodes 0 (DRAM) and 2 (CPU-less)" \
		test "$(jq -c '[.nodes[] | [.id, .kind]]' "$tmp/out")" = \
		'[[0,"DRAM"],[2,"CPU-less memory"]]'
	check "$name: targets node 2, node 0, node 2" \
		test "$(jq -c '[.migrations[].target]' "$tmp/out")" = \
		'["node 2","node 0","node 2"]'
	check "$name: $n migrations, all verified, nothing lost or torn" \
		test "$(jq '[.migrations[] | select(.verified and .lost_writes == 0 and
			.torn_pages == 0 and .guest_errors == 0)] | length' "$tmp/out")" = "$n"
}

demo "KVM guest" kvm
demo "host thread" thread --no-kvm
# Human output names the nodes too.
check "the table names the nodes" \
	exit_is 0 "$cli" demo --mem 16M --migrations 1 --budget-ms 250
grep -q 'between node 0 (DRAM) and node 2 (CPU-less memory)' "$tmp/out" ||
	{ echo "FAIL: no node line in:"; cat "$tmp/out"; fails=$((fails + 1)); }
summary
