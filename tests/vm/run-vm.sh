#!/bin/bash
# The multi-node tier: boots Debian's generic kernel under QEMU (TCG) with
# three NUMA nodes -- 0 and 1 with a CPU each, 2 without one, like a CXL
# expander -- and an emulated NVDIMM, from an initramfs of busybox, the
# build tree's programs and their libraries (and mkfs.ext4 and ext4 for the
# DAX test); runs the tests in the guest and reads their results from the
# serial console ("MEMMIG-TEST <name> <rc>").
#
# Exit: 0 every test passed or skipped and the guest finished, 1 otherwise (a
# hung guest is killed and fails), 77 the tier cannot run here (no QEMU, no
# kernel, no busybox, programs not built), with the reason.
#
# Environment: top_builddir (default: .), srcdir (the harness sets it),
# VM_QEMU (a qemu-system-x86_64), VM_KERNEL (a vmlinuz), VM_TEST_TIMEOUT
# (seconds, default 900: one test's bound, where the guest kills it and
# goes on), VM_TIMEOUT (seconds: a bound on the whole boot; none by
# default, see vm_watch), VM_TESTS (names to run, default all), VM_TAG (a
# suffix for the console log, initramfs and NVDIMM files), VM_EXTRA (more
# programs or scripts of this machine to run in the guest after them, e.g.
# while debugging), VM_KEEP=1 (keep the initramfs tree), VM_NVDIMM=0 (no
# NVDIMM), VM_NUMA_BALANCING=1 (leave the kernel's automatic NUMA
# balancing on in the guest; off by default, see guest-init.sh),
# VM_LOGLEVEL=N (kernel messages up to level N on the console as they come,
# not only after each test: for a guest that hangs), VM_ACCEL (QEMU's
# -accel, default tcg,thread=single), VM_BENCH_MOVE_SIZES (guest-bench-move's
# sizes, default 16M,48M: the suite checks that every mover runs and moves
# the bytes intact, which small sizes show in 40 s; 64M,160M took 450 s
# once, for figures closer to a guest's), VM_CXL=0 (no CXL devices; on by
# default with the NVDIMM, whose drivers they need), VM_HMAT=1 (an ACPI
# HMAT that makes node 2 slower than nodes 0 and 1, so that a kernel with
# memory tiers (6.10 on) puts it in a lower tier; off by default here:
# with it, the 6.1 guest found no CXL memory devices, guest-cxl.sh made no
# CXL node, and 6.1 puts no boot-time node in a lower tier anyway).
set -u
export LC_ALL=C
top_builddir=${top_builddir:-.}
srcdir=${srcdir:-$(dirname "$0")/../..}
vmdir=$top_builddir/tests/vm
tag=${VM_TAG:-}
log=$vmdir/console$tag.log
initrd=$vmdir/initramfs$tag.cpio.gz
pmem=$vmdir/pmem0$tag.img
test_timeout=${VM_TEST_TIMEOUT:-900}
boot_timeout=${VM_TIMEOUT:-0}
all_tests="test-topology test-frames test-multinode test-move-pid guest-move-pid guest-cpuset guest-daemon guest-hwpoison guest-dax test-live test-mce test-minivmm-hot guest-demo test-tier test-tier-api guest-tier guest-tier-kvm guest-tier-vm guest-tier-users guest-tier-perm guest-tier-qemu guest-bench-move"
# Tests for a newer kernel only (run-vm-new.sh runs them).
other_tests="guest-damon guest-tier-kernel guest-tier-kvm-kernel guest-tier-qemu-kernel guest-restart"
tests=${VM_TESTS:-$all_tests}

skip() {
	echo "SKIP: multi-node tier: $*"
	exit 77
}

# ---- what the tier needs on this machine ----
[ "$(uname -m)" = x86_64 ] || skip "the guest is x86-64 and runs this machine's binaries; this is $(uname -m)"
qemu=${VM_QEMU:-$(command -v qemu-system-x86_64)}
[ -n "$qemu" ] && [ -x "$qemu" ] ||
	skip "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
. "$srcdir/tests/vm/vm-host.sh"
kernel=$(vm_kernel) || skip "no /boot/vmlinuz-*-amd64 (apt-get install linux-image-amd64)"
[ -r "$kernel" ] || skip "$kernel is not readable"
kver=${kernel##*/vmlinuz-}
busybox=$(vm_busybox) || skip "no static busybox (apt-get install busybox-static)"
if command -v cpio >/dev/null; then
	cpio=(cpio --quiet -o -H newc)
else
	cpio=("$busybox" cpio -o -H newc)
fi

# The real ELF of a build-tree program: libtool leaves a wrapper script in
# its place and the binary in .libs/.
is_elf() {
	[ -f "$1" ] && [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = 177ELF ]
}
real_elf() {
	local d=${1%/*} b=${1##*/} c

	for c in "$1" "$d/.libs/$b" "$d/.libs/lt-$b"; do
		is_elf "$c" && { echo "$c"; return 0; }
	done
	return 1
}

builddir_elf() {
	real_elf "$top_builddir/$1" || skip "$1 is not built (make check-vm builds it)"
}
cli=$(builddir_elf src/cli/memmig-cli)
# memmig-cli bench and demo run the memmig-bench beside it.
bench=$(builddir_elf src/bench/memmig-bench)
memhog=$(builddir_elf tests/helpers/memhog)
hotset=$(builddir_elf tests/helpers/hotset)
tiervm=$(builddir_elf tests/vm/guest-tier-vm)
memmigd=$(builddir_elf src/daemon/memmigd)
libmemmig=$(ls "$top_builddir"/src/lib/.libs/libmemmig.so.* 2>/dev/null | head -n 1)
[ -n "$libmemmig" ] || skip "src/lib/.libs/libmemmig.so.* is not built (a --disable-shared build?)"

# One guest at a time per build tree: they share the console log, the
# initramfs and the NVDIMM file (make check and make check-vm at once).
if command -v flock >/dev/null && exec 9<"$vmdir"; then
	flock -n 9 || { echo "run-vm.sh: waiting for the other guest of this build tree"; flock 9; }
fi

# ---- the initramfs ----
root=$(mktemp -d "${TMPDIR:-/tmp}/memmig-vm.XXXXXX") || exit 1
trap 'rm -rf "$root"; rm -f "$pmem" ${cxlfiles:-}' EXIT
[ "${VM_KEEP:-0}" = 1 ] && trap 'echo "initramfs tree kept in $root"; rm -f "$pmem" ${cxlfiles:-}' EXIT
mkdir -p "$root"/{bin,sbin,lib,lib64,usr/bin,usr/sbin,proc,sys,dev,tmp,t,etc}
# The guest's / (mktemp's 0700) must let users other than root in: a test
# runs a client as nobody.
chmod 755 "$root"
chmod 1777 "$root/tmp"

# Copies an ELF and the shared libraries it needs (all into /lib, which the
# guest's LD_LIBRARY_PATH names; the loader where the binary expects it).
add_elf() {
	local src=$1 dst=$2 lib

	cp -L "$src" "$root$dst" && chmod 755 "$root$dst" || return 1
	LD_LIBRARY_PATH=${libmemmig%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$src" 2>/dev/null |
	while read -r a b c _; do
		case $b in
		=\>) lib=$c ;;
		*) lib=$a ;;
		esac
		case $lib in
		/*) ;;
		*) continue ;;
		esac
		if [[ $a == ld-linux* || $lib == */ld-linux* ]]; then
			mkdir -p "$root${lib%/*}"
			[ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
		else
			[ -e "$root/lib/${lib##*/}" ] || cp -L "$lib" "$root/lib/${lib##*/}"
		fi
	done
}

cp "$busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
cp "$srcdir/tests/vm/guest-init.sh" "$root/init"
cp "$srcdir/tests/vm/guest-cxl.sh" "$root/cxl.sh"
chmod 755 "$root/init" "$root/cxl.sh"
add_elf "$cli" /bin/memmig-cli || exit 1
add_elf "$bench" /bin/memmig-bench || exit 1
add_elf "$memhog" /bin/memhog || exit 1
add_elf "$hotset" /bin/hotset || exit 1
add_elf "$tiervm" /bin/guest-tier-vm || exit 1
add_elf "$memmigd" /sbin/memmigd || exit 1
# libdaxctl is loaded when a host has DAX devices (topology-dax.c), not
# linked: ldd does not find it.
daxlib=$(ldconfig -p 2>/dev/null | awk '$1 == "libdaxctl.so.1" { print $NF; exit }')
[ -n "$daxlib" ] && add_elf "$daxlib" /lib/libdaxctl.so.1
# The library under test, whatever ldd found (an installed copy?).
cp -L "$libmemmig" "$root/lib/$(objdump -p "$libmemmig" | sed -n 's/^ *SONAME *//p')"
for p in bash jq migratepages numactl cxl ndctl daxctl; do
	b=$(command -v $p) && add_elf "$b" /usr/bin/$p
done
# The QEMU/KVM guest that memmigd tiers (guest-tier-qemu*): this QEMU,
# nested; without it there the test fails, saying so.
case " $tests " in
*" guest-tier-qemu"*) add_elf "$qemu" /usr/bin/qemu-system-x86_64 || exit 1 ;;
esac
[ -e "$root/usr/bin/bash" ] && ln -s ../usr/bin/bash "$root/bin/bash"
# util-linux's setpriv (busybox's cannot change uids): guest-daemon runs a
# client as nobody.
b=$(command -v setpriv) && add_elf "$b" /usr/bin/setpriv.util-linux
# guest-dax formats the NVDIMM; without e2fsprogs here it skips, saying so.
for b in /sbin/mke2fs /usr/sbin/mke2fs; do
	[ -x "$b" ] && { add_elf "$b" /sbin/mkfs.ext4; break; }
done

# tests.list: name|command, or name|skip reason
list=$root/tests.list
: >"$list"
for t in $tests; do
	case $t in
	test-topology) prog=tests/unit/test-topology ;;
	test-frames) prog=tests/unit/test-frames ;;
	test-multinode) prog=tests/migrate/test-multinode ;;
	guest-hwpoison) prog=tests/vm/guest-hwpoison ;;
	guest-dax) prog=tests/vm/guest-dax ;;
	guest-damon) prog=tests/vm/guest-damon ;;
	guest-tier-kvm | guest-tier-kvm-kernel) script=tests/vm/guest-tier-kvm.sh prog= ;;
	guest-tier-vm) prog=tests/vm/guest-tier-vm ;;
	test-minivmm-hot) prog=tests/unit/test-minivmm-hot ;;
	test-live) prog=tests/kvm/test-live ;;
	test-mce) prog=tests/kvm/test-mce ;;
	test-move-pid) script=tests/migrate/test-move-pid.sh prog= ;;
	guest-move-pid) script=tests/vm/guest-move-pid.sh prog= ;;
	guest-cpuset) script=tests/vm/guest-cpuset.sh prog= ;;
	guest-daemon) script=tests/vm/guest-daemon.sh prog= ;;
	guest-restart) script=tests/vm/guest-restart.sh prog= ;;
	guest-demo) script=tests/vm/guest-demo.sh prog= ;;
	guest-bench-move) script=tests/vm/guest-bench-move.sh prog= ;;
	guest-tier | guest-tier-kernel | guest-tier-qemu | guest-tier-qemu-kernel)
		script=tests/vm/guest-tier.sh prog= ;;
	guest-tier-users) script=tests/vm/guest-tier-users.sh prog= ;;
	guest-tier-perm) script=tests/vm/guest-tier-perm.sh prog= ;;
	test-tier) prog=tests/unit/test-tier ;;
	test-tier-api) prog=tests/unit/test-tier-api ;;
	*) echo "run-vm.sh: unknown test '$t' (known: $all_tests $other_tests)"; exit 1 ;;
	esac
	if [ -n "$prog" ]; then
		if elf=$(real_elf "$top_builddir/$prog"); then
			add_elf "$elf" "/t/$t" || exit 1
			# The same program tiers the KVM guest and its thread twin.
			echo "$t|/t/$t$([ "$t" = guest-tier-vm ] && echo ' --thread')" >>"$list"
		elif [ ! -e "$srcdir/$prog.c" ]; then
			echo "$t|skip $prog.c does not exist yet" >>"$list"
		else
			skip "$prog is not built (make check-vm builds it)"
		fi
	else
		[ -e "$root/bin/bash" ] || { echo "$t|skip bash is not installed on the host" >>"$list"; continue; }
		cp "$srcdir/$script" "$root/t/$t.sh"
		cp "$srcdir/tests/testlib.sh" "$root/testlib.sh" # /t/../testlib.sh
		cp "$srcdir/tests/vm/tier-kernel.sh" "$root/t/tier-kernel.sh"
		echo "$t|/bin/bash /t/$t.sh" >>"$list"
	fi
done

for x in ${VM_EXTRA:-}; do
	t=${x##*/}
	tests="$tests $t"
	if e=$(real_elf "$x"); then
		add_elf "$e" "/t/$t" || exit 1
		echo "$t|/t/$t" >>"$list"
	else
		cp "$x" "$root/t/$t" && chmod 755 "$root/t/$t" || exit 1
		echo "$t|/t/$t" >>"$list"
	fi
done

# Modules of the guest's kernel (Debian builds these drivers as modules),
# dependencies first; the guest's /init loads them in this order.
nvdimm=${VM_NVDIMM:-1}
moddir=/lib/modules/$kver
# A module's path under moddir as modules.dep names it (kernel/.../x.ko,
# with .xz, .zst or .gz where the kernel compresses them), or nothing.
mod_find() {
	local e

	for e in "" .xz .zst .gz; do
		[ -f "$moddir/$1.ko$e" ] && { echo "$1.ko$e"; return 0; }
	done
	return 1
}
# Copies a module and those it depends on, first, uncompressed: busybox's
# insmod reads plain ELF.
mod_add() {
	local d out=${1%.ko*}.ko

	grep -qx "$out" "$root/lib/modules/load.list" 2>/dev/null && return 0
	for d in $(sed -n "s|^$1: *||p" "$moddir/modules.dep"); do
		mod_add "$d"
	done
	mkdir -p "$root/lib/modules/${1%/*}"
	case $1 in
	*.xz) xz -dc "$moddir/$1" ;;
	*.zst) zstd -qdc "$moddir/$1" ;;
	*.gz) gzip -dc "$moddir/$1" ;;
	*) cat "$moddir/$1" ;;
	esac >"$root/lib/modules/$out" && echo "$out" >>"$root/lib/modules/load.list"
}
if [ -f "$moddir/modules.dep" ]; then
	mkdir -p "$root/lib/modules"
	# KVM: TCG's "max" CPU has SVM with nested paging, so kvm-amd gives the
	# guest a working /dev/kvm whatever this machine's CPU and KVM are.
	wanted=kernel/arch/x86/kvm/kvm-amd
	if [ "$nvdimm" = 1 ]; then
		for m in acpi/nfit/nfit nvdimm/nd_pmem dax/device_dax dax/dax_pmem dax/kmem; do
			wanted="$wanted kernel/drivers/$m"
		done
		# CXL memory devices, and their pmem on the nvdimm bus.
		for m in cxl/cxl_acpi cxl/cxl_pci cxl/cxl_mem cxl/cxl_pmem; do
			wanted="$wanted kernel/drivers/$m"
		done
		# ext4 for the DAX test, and the crc32c its checksums ask the
		# crypto API for (no modprobe in the guest to load it on demand).
		wanted="$wanted kernel/crypto/crc32c_generic kernel/fs/ext4/ext4"
	fi
	for m in $wanted; do
		m=$(mod_find "$m") && mod_add "$m"
	done
fi

(cd "$root" && find . | "${cpio[@]}") | gzip -1 >"$initrd" || exit 1

# ---- boot ----
machine=q35
mem=(-m 1536M)
nv=()
if [ "$nvdimm" = 1 ]; then
	# 256 MiB of emulated pmem (sparse file) for the DAX tests, fresh for
	# every boot: one left by a killed run can hold a namespace's info
	# block, and the guest would find no /dev/pmem0.
	rm -f "$pmem"
	machine=q35,nvdimm=on
	mem=(-m 1536M,slots=2,maxmem=3G)
	nv=(-object "memory-backend-file,id=nv0,share=on,mem-path=$pmem,size=256M"
	    -device nvdimm,memdev=nv0,id=nvdimm0,node=0)
fi
# Two CXL Type-3 memory devices, each behind its own host bridge and fixed
# memory window: the guest's CXL stack makes the first a NUMA node of CXL
# memory (guest-cxl.sh: region, devdax namespace, system-ram) and keeps the
# second as device DAX.  Persistent memory to QEMU 7.2, with a label area
# each; sparse files, fresh for every boot.  Each host bridge has a second,
# empty root port: with one, Linux treats its decoder as a passthrough and
# does not program it, and QEMU 7.2 then routes no access to the device
# (every word read back 0).  QEMU emulates each access to CXL memory:
# about 13 MB/s here, so the tests keep their CXL cases small.
cxl=()
if [ "${VM_CXL:-$nvdimm}" = 1 ]; then
	machine=$machine,cxl=on
	for i in 0 1; do
		size=$((i == 0 ? 512 : 256))
		for f in mem lsa; do
			rm -f "$vmdir/cxl-$f$i$tag.img"
			cxlfiles="${cxlfiles:-} $vmdir/cxl-$f$i$tag.img"
		done
		cxl+=(-object "memory-backend-file,id=cxl-mem$i,share=on,mem-path=$vmdir/cxl-mem$i$tag.img,size=${size}M"
		      -object "memory-backend-file,id=cxl-lsa$i,share=on,mem-path=$vmdir/cxl-lsa$i$tag.img,size=1M"
		      -device "pxb-cxl,bus_nr=$((12 + 100 * i)),bus=pcie.0,id=cxl.$i"
		      -device "cxl-rp,port=0,bus=cxl.$i,id=cxl-rp$i,chassis=$i,slot=$((2 + i))"
		      -device "cxl-rp,port=1,bus=cxl.$i,id=cxl-rp${i}b,chassis=$i,slot=$((4 + i))"
		      -device "cxl-type3,bus=cxl-rp$i,memdev=cxl-mem$i,lsa=cxl-lsa$i,id=cxl-dev$i")
		fmw="${fmw:+$fmw,}cxl-fmw.$i.targets.0=cxl.$i,cxl-fmw.$i.size=4G"
	done
	cxl+=(-M "$fmw")
fi
# The nodes' performance in an ACPI HMAT: node 2, the CPU-less node, at
# 2.5 times the latency and 0.4 times the bandwidth of the local DRAM,
# like CXL memory.  Linux (memory_tier_late_init, 6.10 on) computes the
# abstract distance of a CPU-less node from these figures, relative to the
# CPU nodes' local ones, and puts node 2 in a lower memory tier: the
# kernel's own tiering (NUMA-balancing promotion, demotion, DAMOS
# migrate_hot/cold) then has a slow node to work with.  Without an HMAT,
# every node is in the DRAM tier.  QEMU wants the initiator of a CPU-less
# node named; nodes 0 and 1 are their own.
numa=(-numa node,nodeid=0,cpus=0,memdev=m0 -numa node,nodeid=1,cpus=1,memdev=m1)
if [ "${VM_HMAT:-0}" = 1 ]; then
	machine=$machine,hmat=on
	numa+=(-numa node,nodeid=2,memdev=m2,initiator=0)
	# initiator target latency(ns) bandwidth(bytes/s)
	while read -r i t lat bw; do
		numa+=(-numa "hmat-lb,initiator=$i,target=$t,hierarchy=memory,data-type=access-latency,latency=$lat"
		       -numa "hmat-lb,initiator=$i,target=$t,hierarchy=memory,data-type=access-bandwidth,bandwidth=$bw")
	done <<-EOF
	0 0 10 10G
	0 1 20 5G
	0 2 25 4G
	1 0 20 5G
	1 1 10 10G
	1 2 30 3G
	EOF
else
	numa+=(-numa node,nodeid=2,memdev=m2)
fi
# vm_watch PID: stops QEMU (PID) where the guest hung: no test started or
# ended for a test's bound and two minutes more (the guest kills a test at
# its bound, then prints its result).  A bound on the whole boot judged
# the host's speed: the 6.1 boot took 542-625 s on an AMD Zen 5 host, and
# in one CI run (issue 37's) it passed the 1200 s it had then, which
# failed every test it had not reached yet.
vm_watch() {
	local pid=$1 seen=-1 last=$start n now
	while kill -0 "$pid" 2>/dev/null; do
		sleep 2
		now=$(date +%s)
		n=$(grep -a -c 'MEMMIG-TEST' "$log" 2>/dev/null)
		if [ "$n" != "$seen" ]; then
			seen=$n last=$now
		elif [ $((now - last)) -gt $((test_timeout + 120)) ]; then
			stopped="no test started or ended for $((now - last)) s: the guest hung"
		fi
		if [ "$boot_timeout" -gt 0 ] && [ $((now - start)) -gt "$boot_timeout" ]; then
			stopped="the boot passed VM_TIMEOUT (${boot_timeout} s)"
		fi
		if [ -n "$stopped" ]; then
			kill -KILL "$pid" 2>/dev/null
			return
		fi
	done
}
stopped=
start=$(date +%s)
# One TCG thread for both vCPUs: with a thread each (MTTCG, QEMU 7.2), the
# guest froze for good, both threads spinning, in 3 of 6 runs of its nested
# KVM tests, and in none of 6 with one thread (about 20% slower).
"$qemu" -machine "$machine" -accel "${VM_ACCEL:-tcg,thread=single}" -cpu max \
	-smp 2,sockets=2,cores=1,threads=1 \
	"${mem[@]}" \
	-object memory-backend-ram,id=m0,size=512M \
	-object memory-backend-ram,id=m1,size=512M \
	-object memory-backend-ram,id=m2,size=512M \
	"${numa[@]}" \
	-numa dist,src=0,dst=1,val=21 -numa dist,src=0,dst=2,val=30 \
	-numa dist,src=1,dst=2,val=25 \
	"${nv[@]}" "${cxl[@]}" \
	-kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyS0 panic=-1 quiet MEMMIG_TEST_TIMEOUT=$test_timeout MEMMIG_NUMA_BALANCING=${VM_NUMA_BALANCING:-0} MEMMIG_CONSOLE_LOGLEVEL=${VM_LOGLEVEL:-1} MEMMIG_ACCEL=${VM_ACCEL:-tcg,thread=single} MEMMIG_BENCH_MOVE_SIZES=${VM_BENCH_MOVE_SIZES:-16M,48M}" \
	-nodefaults -display none -serial stdio -monitor none -no-reboot \
	</dev/null >"$log" 2>&1 &
qpid=$!
trap 'kill -KILL $qpid 2>/dev/null' EXIT
trap 'exit 1' INT TERM HUP
vm_watch "$qpid"
wait "$qpid"
qrc=$?
trap - EXIT INT TERM HUP
secs=$(($(date +%s) - start))

# ---- results ----
pass=0 fail=0 skipped=0 failed=
# test_log NAME: what the guest printed between NAME's start and its result
test_log() {
	tr -d '\r' <"$log" | sed -n "/^MEMMIG-TEST-START $1\$/,/^MEMMIG-TEST $1 /p"
}
results=$(tr -d '\r' <"$log" | sed -n 's/.*MEMMIG-TEST \([A-Za-z0-9_.-]*\) \([0-9]*\)$/\1 \2/p')
times=$(tr -d '\r' <"$log" | sed -n 's/^MEMMIG-TEST-TIME \([A-Za-z0-9_.-]*\) \([0-9]*\)$/\1 \2/p')
for t in $tests; do
	rc=$(echo "$results" | awk -v t="$t" '$1 == t { print $2; exit }')
	took=$(echo "$times" | awk -v t="$t" '$1 == t { print " (" $2 " s)"; exit }')
	case $rc in
	0) pass=$((pass + 1)); echo "PASS: vm: $t$took" ;;
	77) skipped=$((skipped + 1)); echo "SKIP: vm: $t$took"
	    test_log "$t" | grep -m1 '^SKIP' | sed 's/^/  /' ;;
	'') fail=$((fail + 1))
	    if tr -d '\r' <"$log" | grep -qx "MEMMIG-TEST-START $t"; then
		    echo "FAIL: vm: $t (no result: it started and did not end)"
	    else
		    echo "FAIL: vm: $t (no result: the guest did not get there)"
	    fi ;;
	*) fail=$((fail + 1)); echo "FAIL: vm: $t (exit $rc)$took"; failed="$failed $t" ;;
	esac
done
done=1
if ! grep -q '^MEMMIG-VM-DONE' <(tr -d '\r' <"$log"); then
	done=0
	if [ -n "$stopped" ]; then
		echo "FAIL: vm: QEMU was stopped: $stopped"
	else
		echo "FAIL: vm: the guest stopped before the end (qemu exit $qrc)"
	fi
fi
# A failed test's own lines: what it said failed, then how it ended.  A
# guest that stopped short shows the console's tail, where it stopped.
for t in $failed; do
	echo "--- $t: its FAIL lines, then its last 40 lines ($log):"
	test_log "$t" | grep '^ *FAIL' | sed 's/^/  /'
	echo "  ..."
	test_log "$t" | tail -n 40 | sed 's/^/  /'
done
if [ "$done" = 0 ]; then
	echo "--- tail of $log:"
	tr -d '\r' <"$log" | tail -n 40
fi
if [ "$fail" -gt 0 ] || [ "$done" = 0 ]; then
	echo "---"
fi

echo "vm: $pass passed, $fail failed, $skipped skipped ($secs s, kernel $kver, console log $log)"
[ "$fail" -eq 0 ] && [ "$done" = 1 ]
