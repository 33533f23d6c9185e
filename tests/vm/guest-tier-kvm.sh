#!/bin/bash
# In the multi-node tier: a VMM tiers its own KVM guest.  guest-tier-vm
# (tests/vm/guest-tier-vm.c) runs minivmm's hot-set guest on a nested KVM
# vCPU, its RAM on the slow node 2 at first; the guest rewrites a quarter
# of its RAM, a window the VMM moves every phase, and libmemmig tiers it
# (memmig_tier with opts.vm: writes from KVM's dirty log, reads from DAMON
# where the kernel has it, each run of units moved live).  It judges the
# run as guest-tier.sh judges memmigd's tiering of a process and prints
# TIER name=memmig-kvm ... bounce_pct=<%> react_s=<s> verify=ok
# Two tests of the tier run this script: guest-tier-kvm (memmig) and
# guest-tier-kvm-kernel (the same guest under the kernel's own tiering,
# NUMA balancing's tiering mode and DAMOS on physical memory, in the same
# boot: 6.12 with run-vm-new.sh's HMAT); the kernel's runs fail only when
# the guest loses data or nothing could be measured.
set -u
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"

fast=0 slow=2
prog=${GUEST_TIER_VM:-/bin/guest-tier-vm}
# TCG's intervals, as guest-tier.sh's: a 2 MiB unit moved live under the
# nested vCPU takes tens of ms, a batch of seven up to a second.
args="--size 64 --hot-pct 25 --phase-ms 12000 --phases 4 --interval-ms 3000"
args="$args --pause-ms 500 --fast $fast --slow $slow"

need_nodes "$fast" "$slow"
[ -x "$prog" ] || { echo "FAIL: $prog is not in the guest"; exit 1; }
[ -c /dev/kvm ] || { echo "SKIP: no /dev/kvm in the guest (kvm-amd did not load)"; exit 77; }
# shellcheck source=tier-kernel.sh
. "$(dirname "$0")/tier-kernel.sh"

table=
# run NAME ARGS...: the guest under mechanism NAME, its summary in table.
run() {
	local name=$1 out=$tmp/$1.out vm0=$tmp/$1.vm0 vm1=$tmp/$1.vm1 kt0 kt1 rc sum line
	shift
	cp /proc/vmstat "$vm0"
	kt0=$(kthread_ticks)
	# shellcheck disable=SC2086 # args: options
	"$prog" $args "$@" >"$out" 2>&1
	rc=$?
	kt1=$(kthread_ticks)
	cp /proc/vmstat "$vm1"
	grep -v '^TIER' "$out" | sed 's/^/  /'
	sum=$(grep '^SUMMARY' "$out")
	line=$(grep '^TIER' "$out")
	if [ -z "$line" ] && [ -n "$sum" ]; then
		# The kernel's: what it moved and what its threads cost.
		line="TIER name=$name hot_fast_min_2i=$(field "$sum" hot_fast_min_2i)"
		line="$line slow_pct_mean=$(field "$sum" slow_pct_mean)"
		line="$line bytes_moved=$(($(vmstat_delta "$vm0" "$vm1" pgmigrate_success) * 4096))"
		line="$line cpu_s=$(awk -v a="$kt0" -v b="$kt1" -v t="$clk_tck" \
			'BEGIN { printf "%.2f", (b - a) / t }')"
		line="$line stall_max_ms=$(field "$sum" stall_max_ms) bounce_pct=- react_s=-"
		line="$line verify=$(field "$sum" verify)"
	fi
	echo "$line"
	table="$table$(printf '\n  %-17s %15s %13s %10s %7s %9s %6s %6s' "$name" \
		"$(field "$line" hot_fast_min_2i)" "$(field "$line" slow_pct_mean)" \
		"$(($(field "$line" bytes_moved) >> 20))" "$(field "$line" cpu_s)" \
		"$(field "$line" stall_max_ms)" "$(field "$line" bounce_pct)" "$(field "$line" verify)")"
	check "$name: every page intact ($(field "$sum" verify))" test "$(field "$sum" verify)" = ok
	return "$rc"
}

case ${0##*/} in
*kernel*)
	if [ "$kernel_tiers" != 1 ]; then
		echo "SKIP: the kernel's tiering: $no_tiers"
		exit 77
	fi
	numab_off
	for m in numa_balancing_2:numab damos_paddr:damos; do
		if "${m#*:}_on" >"$tmp/on.out" 2>&1; then
			grep '^  ' "$tmp/on.out"
			run "${m%:*}" --observe "${m%:*}"
		else
			echo "SKIP: ${m%:*}: $(grep -v '^  ' "$tmp/on.out" | tail -n 1)"
		fi
		"${m#*:}_off" >/dev/null 2>&1
	done
	;;
*)
	[ "$kernel_tiers" = 1 ] && numab_off
	# libmemmig's info lines: a bounce names its unit and what moved it.
	MEMMIG_LOG=info run memmig-kvm
	rc=$?
	check "memmig-kvm: memmig's goal, as guest-tier-vm judged it above (exit $rc)" test "$rc" = 0
	[ "$kernel_tiers" = 1 ] || echo "  (the kernel's tiering: $no_tiers)"
	;;
esac

echo "== tiering of a KVM guest (a quarter of 64 MiB hot, moving every 12 s; interval 3 s; all on node $slow at first)"
printf '  %-17s %15s %13s %10s %7s %9s %6s %6s' mechanism hot_fast_min_2i slow_pct_mean \
	moved_MiB cpu_s stall_ms bounce verify
echo "$table"
summary
