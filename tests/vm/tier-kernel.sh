# The kernel's own memory tiering, for guest-tier.sh and guest-tier-kvm.sh
# to run a workload under beside memmig's: whether the kernel places node
# $slow in a lower memory tier than node $fast (kernel_tiers, no_tiers),
# NUMA balancing's tiering mode (numab_on, numab_off) and DAMOS on the
# physical address space (damos_on, damos_off), and what they cost
# (kthread_ticks, vmstat_delta); field reads NAME= of a summary line.
# Sourced; needs fast and slow.
# shellcheck disable=SC2154,SC2034 # fast, slow: the sourcer's; the rest: its
# shellcheck shell=bash
# ---- node 2 in a lower tier than node 0? ----
# The tier of node N: the number of the memory_tier<id> whose nodelist has
# it (a larger id is a slower tier); nothing if none.
node_tier() {
	local d n

	for d in /sys/devices/virtual/memory_tiering/memory_tier*; do
		[ -r "$d/nodelist" ] || continue
		for n in $(tr ',' '\n' <"$d/nodelist" | while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done); do
			[ "$n" = "$1" ] && { echo "${d##*memory_tier}"; return 0; }
		done
	done
}
tier_fast=$(node_tier "$fast") tier_slow=$(node_tier "$slow")
for d in /sys/devices/virtual/memory_tiering/memory_tier*; do
	[ -r "$d/nodelist" ] && echo "  ${d##*/}: nodes $(cat "$d/nodelist")"
done
kernel_tiers=1
if [ -z "$tier_fast" ] || [ -z "$tier_slow" ] || [ "$tier_slow" -le "$tier_fast" ]; then
	kernel_tiers=0
	no_tiers="node $slow is not in a lower memory tier than node $fast"
	no_tiers="$no_tiers (tiers '${tier_slow:-none}' and '${tier_fast:-none}'; kernel $(uname -r):"
	no_tiers="$no_tiers memory tiers of boot-time nodes from an HMAT need 6.10, run-vm-new.sh's VM_HMAT=1)"
else
	echo "  node $fast: memory_tier$tier_fast, node $slow: memory_tier$tier_slow"
fi

# ---- measurements ----
clk_tck=$(getconf CLK_TCK 2>/dev/null || echo 100)

# CPU seconds (user + system) of the kernel threads that tier: kdamond.*,
# kswapd*.  In ticks.
kthread_ticks() {
	cat /proc/[0-9]*/stat 2>/dev/null | awk '{
		c = $0; sub(/^[0-9]+ \(/, "", c); sub(/\) .*/, "", c)
		r = $0; sub(/^.*\) /, "", r); split(r, f, " ")
		if (c ~ /^(kdamond|kswapd)/) s += f[12] + f[13] }
		END { print s + 0 }'
}

# vmstat_delta BEFORE AFTER NAME: the growth of a /proc/vmstat counter (0
# where this kernel has none)
vmstat_delta() {
	awk -v n="$3" 'FNR == NR { if ($1 == n) b = $2; next }
		$1 == n { a = $2 } END { print (a ? a : 0) - (b ? b : 0) }' "$1" "$2"
}

# field LINE NAME: the value of NAME= in a line of hotset's
field() {
	echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# ---- the kernel's mechanisms: each a setup and a teardown ----
debugfs=/sys/kernel/debug
numab_on() {
	echo 2 >/proc/sys/kernel/numa_balancing || return 1
	echo 1 >/sys/kernel/mm/numa/demotion_enabled || return 1
	[ -d "$debugfs/sched" ] || mount -t debugfs none "$debugfs" 2>/dev/null
	local s f

	s="numa_balancing=$(cat /proc/sys/kernel/numa_balancing)"
	s="$s demotion_enabled=$(cat /sys/kernel/mm/numa/demotion_enabled)"
	s="$s promote_rate_limit_MBps=$(cat /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps 2>/dev/null || echo ?)"
	for f in hot_threshold_ms scan_delay_ms scan_period_min_ms scan_period_max_ms scan_size_mb; do
		s="$s $f=$(cat "$debugfs/sched/numa_balancing/$f" 2>/dev/null || echo ?)"
	done
	echo "  $s"
}
numab_off() {
	echo 0 >/proc/sys/kernel/numa_balancing
	echo 0 >/sys/kernel/mm/numa/demotion_enabled
}

# The physical range of node N's memory blocks: "START END" (END past the
# last byte; holes inside are DAMON's to find empty).
node_range() {
	local bs blocks

	bs=$((0x$(cat /sys/devices/system/memory/block_size_bytes)))
	blocks=$(for b in "/sys/devices/system/node/node$1"/memory[0-9]*; do
		[ -e "$b" ] && echo "${b##*memory}"; done | sort -n)
	[ -n "$blocks" ] || return 0
	echo "$(($(echo "$blocks" | head -n 1) * bs)) $((($(echo "$blocks" | tail -n 1) + 1) * bs))"
}

damon=/sys/kernel/mm/damon/admin/kdamonds
# damos_scheme DIR ACTION NID NR_ACC_MIN NR_ACC_MAX AGE_MIN START END:
# a scheme for anonymous memory outside [START, END), the other node's
# range (DAMOS filters in 6.12 say what to leave out); a quota of 64 MiB
# a second, hottest (coldest) first.  The range is the one to leave out
# (matching Y), not the one to keep (matching N): 6.12's paddr operations
# run every filter again on each folio, and an address filter, which is
# not theirs, then never matches: with matching N, nothing was migrated.
damos_scheme() {
	local s=$1

	echo "$2" >"$s/action" || return 1
	echo "$3" >"$s/target_nid" || return 1
	# A new scheme's ranges are all 0: every bound is set.
	echo 4096 >"$s/access_pattern/sz/min" &&
	echo $((1 << 40)) >"$s/access_pattern/sz/max" &&
	echo "$4" >"$s/access_pattern/nr_accesses/min" &&
	echo "$5" >"$s/access_pattern/nr_accesses/max" &&
	echo "$6" >"$s/access_pattern/age/min" &&
	echo 4294967295 >"$s/access_pattern/age/max" &&
	echo $((64 << 20)) >"$s/quotas/bytes" &&
	echo 1000 >"$s/quotas/reset_interval_ms" &&
	echo none >"$s/watermarks/metric" &&
	echo 2 >"$s/filters/nr_filters" &&
	echo addr >"$s/filters/0/type" &&
	echo "$7" >"$s/filters/0/addr_start" &&
	echo "$8" >"$s/filters/0/addr_end" &&
	echo Y >"$s/filters/0/matching" &&
	echo anon >"$s/filters/1/type" &&
	echo N >"$s/filters/1/matching"
}
damos_on() {
	local k=$damon/0 ctx r0 r2

	[ -d "$damon" ] || { echo "no DAMON sysfs ($damon)"; return 2; }
	echo 1 >"$damon/nr_kdamonds" || return 1
	echo 1 >"$k/contexts/nr_contexts" || return 1
	ctx=$k/contexts/0
	grep -qw paddr "$ctx/avail_operations" || { echo "no paddr operations"; return 2; }
	echo paddr >"$ctx/operations" || return 1
	# 5 ms samples, 100 ms aggregation: nr_accesses counts 0..20.
	echo 5000 >"$ctx/monitoring_attrs/intervals/sample_us" &&
	echo 100000 >"$ctx/monitoring_attrs/intervals/aggr_us" &&
	echo 1000000 >"$ctx/monitoring_attrs/intervals/update_us" &&
	echo 10 >"$ctx/monitoring_attrs/nr_regions/min" &&
	echo 1000 >"$ctx/monitoring_attrs/nr_regions/max" || return 1
	r0=$(node_range "$fast") r2=$(node_range "$slow")
	if [ -z "$r0" ] || [ -z "$r2" ]; then echo "no memory blocks of node $fast or $slow"; return 2; fi
	echo "  DAMON regions: node $fast [${r0% *}, ${r0#* }), node $slow [${r2% *}, ${r2#* })"
	echo 1 >"$ctx/targets/nr_targets" &&
	echo 2 >"$ctx/targets/0/regions/nr_regions" &&
	echo "${r0% *}" >"$ctx/targets/0/regions/0/start" &&
	echo "${r0#* }" >"$ctx/targets/0/regions/0/end" &&
	echo "${r2% *}" >"$ctx/targets/0/regions/1/start" &&
	echo "${r2#* }" >"$ctx/targets/0/regions/1/end" || return 1
	echo 2 >"$ctx/schemes/nr_schemes" || return 1
	[ -e "$ctx/schemes/0/target_nid" ] || { echo "no DAMOS target_nid (6.11)"; return 2; }
	# shellcheck disable=SC2086 # r0, r2: START END
	# Hot: accessed in a quarter of the samples or more, on node 2.
	damos_scheme "$ctx/schemes/0" migrate_hot "$fast" 5 20 0 $r0 ||
		{ echo "DAMOS migrate_hot not accepted"; return 2; }
	# Cold: not accessed for 1 s (10 aggregations), on node 0.
	# shellcheck disable=SC2086
	damos_scheme "$ctx/schemes/1" migrate_cold "$slow" 0 0 10 $r2 ||
		{ echo "DAMOS migrate_cold not accepted"; return 2; }
	echo on >"$k/state" || return 1
	echo "  kdamond: $(cat "$k/pid" 2>/dev/null), state $(cat "$k/state")," \
		"schemes migrate_hot->$fast (nr_accesses>=5/20), migrate_cold->$slow (idle>=1 s)," \
		"quota 64 MiB/s each"
}
damos_off() {
	local k=$damon/0 s

	[ -d "$k" ] || return 0
	if [ "$(cat "$k/state")" = on ]; then
		echo update_schemes_stats >"$k/state"
		for s in 0 1; do
			s=$k/contexts/0/schemes/$s
			[ -d "$s" ] && echo "  DAMOS $(cat "$s/action"): tried $(cat "$s/stats/sz_tried")" \
				"bytes, applied $(cat "$s/stats/sz_applied") bytes," \
				"quota exceeded $(cat "$s/stats/qt_exceeds") times"
		done
		echo off >"$k/state"
	fi
	echo 0 >"$damon/nr_kdamonds"
}

