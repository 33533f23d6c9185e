#!/bin/sh
# Run by the multi-node guest's /init before the tests (see run-vm.sh): turns
# QEMU's CXL Type-3 devices into what a host with a CXL memory expander has,
# through the kernel's own CXL stack and the cxl, ndctl and daxctl tools:
#  1. a pmem region on each device (cxl create-region, one per root decoder);
#  2. a devdax namespace on each (ndctl create-namespace -m devdax);
#  3. the biggest onlined as system RAM (daxctl reconfigure-device
#     --mode=system-ram): a CPU-less NUMA node of CXL memory;
#  4. the other kept as device DAX.
# Writes MEMMIG_CXL_NODE and MEMMIG_CXL_DAX to the file named by $1 for
# the tests, and says what it did and how long it took.  Without CXL
# devices or tools it writes nothing: the tests that need them skip.
out=$1
: >"$out"
for t in cxl ndctl daxctl jq; do
	command -v $t >/dev/null || { echo "  cxl: no $t in the guest: no CXL node"; exit 0; }
done
[ "$(cxl list -M 2>/dev/null | jq length 2>/dev/null)" -gt 0 ] 2>/dev/null ||
	{ echo "  cxl: no CXL memory devices"; exit 0; }
t0=$(date +%s)

for d in $(cxl list -D -d root | jq -r '.[].decoder'); do
	m=$(cxl list -M -d "$d" | jq -r '.[0].memdev // empty')
	[ -n "$m" ] || continue
	cxl create-region -m -t pmem -d "$d" -w 1 "$m" >/dev/null 2>&1 ||
		echo "  cxl: create-region on $d for $m failed"
done
# The new regions are the ones with room left (the NVDIMM's is full).
for r in $(ndctl list -R | jq -r '.[] | select(.available_size > 0) | .dev'); do
	ndctl create-namespace -r "$r" -m devdax >/dev/null 2>&1 ||
		echo "  cxl: create-namespace on $r failed"
done
t1=$(date +%s)

# CXL device DAX: what sits under the CXL bus's nvdimm bridge.
daxes=
for d in /sys/bus/dax/devices/dax*; do
	case $(readlink -f "$d") in
	*/nvdimm-bridge*) daxes="$daxes ${d##*/}" ;;
	esac
done
ram= ram_size=0
for d in $daxes; do
	s=$(cat "/sys/bus/dax/devices/$d/size")
	[ "$s" -gt "$ram_size" ] && { ram=$d; ram_size=$s; }
done
[ -n "$ram" ] || { echo "  cxl: no CXL device DAX came up"; exit 0; }
daxctl reconfigure-device --mode=system-ram "$ram" >/dev/null 2>&1 ||
	{ echo "  cxl: $ram: reconfigure-device --mode=system-ram failed"; exit 0; }
t2=$(date +%s)
node=$(cat "/sys/bus/dax/devices/$ram/target_node")
keep=
for d in $daxes; do
	[ "$d" != "$ram" ] && keep=$d
done
echo "MEMMIG_CXL_NODE=$node" >>"$out"
[ -n "$keep" ] && echo "MEMMIG_CXL_DAX=/dev/$keep" >>"$out"
echo "  cxl: node $node is CXL memory ($ram, $(grep MemTotal \
	"/sys/devices/system/node/node$node/meminfo" | sed 's/.*MemTotal: *//'))," \
	"${keep:+device DAX /dev/$keep ($(($(cat "/sys/bus/dax/devices/$keep/size") >> 20)) MiB), }" \
	"regions and namespaces $((t1 - t0)) s, onlining $((t2 - t1)) s"
