#!/bin/bash
# bench move at native speed: the multi-node guest once more, under KVM
# with a host thread per vCPU, running only guest-bench-move, where
# /dev/kvm is usable.  The TCG boots (run-vm.sh) run the same bench with
# both vCPUs on one host thread, where no worker count can scale; its
# BENCH-MOVE line says which acceleration ran.  The console log is
# tests/vm/console-kvm.log.
#
# Exit: as run-vm.sh; 77 without a usable /dev/kvm of hardware KVM, saying
# so.
# Environment: as run-vm.sh; VM_TAG (default -kvm).
set -u
srcdir=${srcdir:-$(dirname "$0")/../..}
if ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
	echo "SKIP: bench move under KVM: /dev/kvm is not usable here" \
		"(run-vm.sh ran it under TCG: see BENCH-MOVE in tests/vm/console.log)"
	exit 77
fi
# A /dev/kvm of PVM (kvm_pvm: the hosts' KVM nested without hardware
# virtualization) runs only guest kernels built for it: Debian's stock
# kernel hangs after its real-mode start there, and QEMU 7.2 with -cpu max
# aborts first ("failed to set MSR 0x10a").  Hardware KVM is kvm_intel or
# kvm_amd (in /sys/module, loaded or built in: both have parameters).
if ! [ -d /sys/module/kvm_intel ] && ! [ -d /sys/module/kvm_amd ]; then
	echo "SKIP: bench move under KVM: this /dev/kvm is not hardware KVM" \
		"(no kvm_intel or kvm_amd; loaded: $(cd /sys/module && ls -d kvm* 2>/dev/null | tr '\n' ' '))," \
		"and it does not boot a stock kernel; run-vm.sh ran the bench under TCG:" \
		"see BENCH-MOVE in tests/vm/console.log"
	exit 77
fi
# 256 MiB too: where threads are real, the worker counts can differ there.
VM_ACCEL=kvm VM_TESTS=guest-bench-move VM_NVDIMM=0 VM_CXL=0 VM_TAG=${VM_TAG:--kvm} \
VM_BENCH_MOVE_SIZES=${VM_BENCH_MOVE_SIZES:-64M,256M} \
exec bash "$srcdir/tests/vm/run-vm.sh"
