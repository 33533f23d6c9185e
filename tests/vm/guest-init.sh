#!/bin/sh
# /init of the multi-node test guest (see run-vm.sh): mounts the kernel file
# systems, loads the pmem modules, runs each test of /tests.list and reports
# it on the serial console as "MEMMIG-TEST <name> <rc>", then
# "MEMMIG-VM-DONE" and powers off.  The host parses those lines.
/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
# The initramfs keeps its builder's uid: root's / whoever built it, as
# memmigd wants of the directories above its socket (src/daemon/sock.c).
chown 0:0 / 2>/dev/null
# bash's process substitution needs /dev/fd.
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/tmp TMPDIR=/tmp
export LD_LIBRARY_PATH=/lib MEMMIG_CLI=/bin/memmig-cli MEMHOG=/bin/memhog HOTSET=/bin/hotset
# Tests that run on hosts too take the tier's scale and cases here.
export MEMMIG_TEST_TIER=1
# Kernel messages go to the log after each test, not into the middle of
# the test's own lines (MEMMIG_CONSOLE_LOGLEVEL=N on the kernel command
# line, run-vm.sh's VM_LOGLEVEL, shows them as they come: for a guest that
# hangs).
dmesg -n "${MEMMIG_CONSOLE_LOGLEVEL:-1}"
cd /tmp || exit 1

# Automatic NUMA balancing migrates pages back to the node of the CPU that
# touches them, behind memmig's back and racing every placement check.  Off
# unless the kernel command line says MEMMIG_NUMA_BALANCING=1 (run-vm.sh:
# VM_NUMA_BALANCING=1).
echo "${MEMMIG_NUMA_BALANCING:-0}" >/proc/sys/kernel/numa_balancing

echo "MEMMIG-VM-START kernel $(uname -r) nodes $(cat /sys/devices/system/node/has_memory)" \
	"cpus $(cat /sys/devices/system/cpu/online)" \
	"numa_balancing $(cat /proc/sys/kernel/numa_balancing)"
for n in /sys/devices/system/node/node[0-9]*; do
	echo "  ${n##*/}: cpus [$(cat "$n/cpulist")] distance [$(cat "$n/distance")]" \
		"$(grep MemTotal "$n/meminfo" | sed 's/.*MemTotal: *//')"
done
# KVM and the emulated NVDIMM's drivers (modules in Debian's kernel).
if [ -f /lib/modules/load.list ]; then
	while read -r m; do
		insmod "/lib/modules/$m" || echo "  insmod $m failed"
	done </lib/modules/load.list
	echo "  pmem: $(ls /sys/bus/nd/devices 2>/dev/null | tr '\n' ' ')" \
		"$(ls /dev/pmem* 2>/dev/null | tr '\n' ' ')"
fi
echo "  kvm: $(if [ -c /dev/kvm ]; then echo /dev/kvm; else echo none; fi)" \
	"$(dmesg | grep -o 'Nested Paging enabled' | head -n 1)"
# The CXL devices: a node of CXL memory and a device DAX (guest-cxl.sh),
# named to the tests in MEMMIG_CXL_NODE and MEMMIG_CXL_DAX.
if [ -x /cxl.sh ]; then
	/cxl.sh /tmp/cxl.env
	set -a
	. /tmp/cxl.env
	set +a
fi
# The nodes as memmig sees them (kind, tier, the device DAX behind each).
memmig-cli nodes 2>/dev/null | sed -n '1,/^$/p' | sed '/^$/d; s/^/  /'
dmesg -c >/tmp/boot-dmesg
# A kernel warning during boot taints the kernel: show it.
grep -A 12 -E 'WARNING:|BUG:' /tmp/boot-dmesg | sed 's/^/boot: /'

# name|command, or name|skip reason
while IFS='|' read -r name cmd; do
	[ -n "$name" ] || continue
	echo "MEMMIG-TEST-START $name"
	t0=$(date +%s)
	case $cmd in
	skip\ *)
		echo "SKIP: ${cmd#skip }"
		rc=77
		;;
	*)
		timeout -s KILL "${MEMMIG_TEST_TIMEOUT:-240}" sh -c "$cmd" </dev/null
		rc=$?
		;;
	esac
	dmesg -c | sed 's/^/kernel: /'
	echo
	echo "MEMMIG-TEST-TIME $name $(($(date +%s) - t0))"
	echo "MEMMIG-TEST $name $rc"
done </tests.list
echo "MEMMIG-VM-DONE"
sync
poweroff -f
