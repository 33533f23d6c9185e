#!/bin/bash
# hotset --qemu, the workload the tier's guest-tier-qemu tiers with
# memmigd: a real QEMU/KVM guest (QEMU's firmware is hotset-bios.S, which
# runs minivmm's hot-set guest in long mode) whose window hotset moves each
# phase; the guest writes it, hotset asks where QEMU's pages are and checks
# every page with QEMU stopped.  This machine has one node, so nothing is
# tiered here: what is checked is that the guest runs and writes what
# hotset asks, that the check passes, and that it sees a lost write.
set -u
hotset=${HOTSET:-tests/helpers/hotset}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"

qemu=$(command -v qemu-system-x86_64) ||
	{ echo "SKIP: no qemu-system-x86_64 (apt-get install qemu-system-x86)"; exit 77; }
[ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo "SKIP: no usable /dev/kvm"; exit 77; }

args="--qemu $qemu --size 16 --hot-pct 25 --phase-ms 1500 --phases 2 --interval-ms 500 --fast 0 --slow 0"
# shellcheck disable=SC2086 # args: options
"$hotset" $args >"$tmp/out" 2>"$tmp/err"
rc=$?
sed 's/^/  /' "$tmp/err"
grep -v '^SAMPLE' "$tmp/out" | sed 's/^/  /'
ready=$(grep '^READY' "$tmp/out") guest=$(grep '^GUEST' "$tmp/out")
qpid=$(echo "$ready" | sed -n 's/^READY pid=\([0-9]*\) .*/\1/p')
check "hotset --qemu exits 0 (exit $rc)" test "$rc" -eq 0
check "READY names QEMU's pid, not hotset's ($ready)" test -n "$qpid"
check "QEMU is gone with hotset" sh -c "! kill -0 $qpid 2>/dev/null"
check "the guest wrote its window during the phases ($guest)" \
	test "$(echo "$guest" | sed -n 's/.*passes=\([0-9]*\).*/\1/p')" -gt 0
check "the guest's own checks: no error" grep -q '^GUEST .* errors=0$' "$tmp/out"
check "every page verified" grep -q '^VERIFY pages=4096 bad=0$' "$tmp/out"
check "each phase's window: unit 1 on, 1 unit" \
	test "$(grep -c '^PHASE k=[01] t_ms=[0-9]* first_page=\(512\|1024\) pages=512$' "$tmp/out")" -eq 2
check "its pages all on node 0, sampled" grep -q '^SUMMARY hot_fast_min_2i=100.0 ' "$tmp/out"

# A write lost in the guest's RAM: the check sees it.
# shellcheck disable=SC2086 # args: options
HOTSET_QEMU_LOSE_WRITE=1 "$hotset" $args >"$tmp/out" 2>"$tmp/err"
rc=$?
sed 's/^/  /' "$tmp/err"
grep -E '^(GUEST|VERIFY)' "$tmp/out" | sed 's/^/  /'
check "a lost write: hotset exits 1 (exit $rc)" test "$rc" -eq 1
check "... the check counts it" grep -q '^VERIFY pages=4096 bad=[1-9]' "$tmp/out"
check "... and says what it saw" grep -q 'pages lost 1,' "$tmp/err"

summary
