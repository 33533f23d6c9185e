#!/bin/bash
# The multi-node tier a second time, under a newer kernel than Debian 12's
# 6.1 (linux-image-6.12-amd64, from bookworm-security), for the paths 6.1
# does not reach: poison markers (UFFDIO_POISON, 6.6) in migrations and in
# a KVM guest's live migration, userfaultfd write protection with
# PAGEMAP_SCAN (6.7), move_pages answering a full node with a count of
# THPs it could not move (or moving part of a call and failing it whole:
# memmigd's report of that, guest-daemon), MADV_HWPOISON signalling its caller at once, and
# DAMON (CONFIG_DAMON_SYSFS), which tiering reads hot memory from (and
# whose kdamond a killed memmigd leaves on: guest-restart.sh; a tiering
# that reads DAMON and outlives its owner's permission: guest-tier-perm).
# KVM is nested here too.  Node 2 is a lower memory tier here (VM_HMAT=1:
# an ACPI HMAT says it is slower), for the kernel's own tiering, the peer
# of memmig's (guest-tier.sh).  The console log is
# tests/vm/console-new.log.
#
# Exit: as run-vm.sh; 77 when no newer kernel is installed, saying so.
# Environment: as run-vm.sh; VM_KERNEL_NEW (the kernel), VM_TESTS (default:
# the tests above), VM_TAG (default -new), VM_HMAT (default 1).  The whole
# boot took 1053-1059 s on an AMD Zen 5 host (the tiering tests take a few
# minutes each); like the stock boot, it has no bound of its own, only
# its tests' (run-vm.sh's vm_watch).
set -u
srcdir=${srcdir:-$(dirname "$0")/../..}
. "$srcdir/tests/vm/vm-host.sh"
if ! kernel=$(vm_kernel_new); then
	echo "SKIP: multi-node tier, newer kernel: none besides $(vm_kernel || echo none)" \
		"(apt-get install linux-image-6.12-amd64)"
	exit 77
fi
# guest-daemon runs last: right after its hundreds of MiB of moves and a
# full node, guest-damon's DAMON marks failed twice in three runs (DAMON
# samples in time, and the guest is one host thread), alone 4 in 4 passed.
# The CXL devices stay with the stock boot, which runs the CXL cases: QEMU
# emulates each access to CXL memory, and time is short.
VM_KERNEL=$kernel VM_TAG=${VM_TAG:--new} VM_CXL=${VM_CXL:-0} VM_HMAT=${VM_HMAT:-1} \
VM_TESTS=${VM_TESTS:-"test-frames test-multinode guest-hwpoison guest-dax test-mce guest-demo guest-damon guest-restart guest-tier guest-tier-kvm guest-tier-vm guest-tier-perm guest-tier-kernel guest-tier-kvm-kernel guest-tier-qemu guest-tier-qemu-kernel guest-daemon"} \
	exec bash "$srcdir/tests/vm/run-vm.sh"
