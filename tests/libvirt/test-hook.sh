#!/bin/bash
# The libvirt hook (contrib/libvirt/hooks/qemu) reads the domain XML with
# an XML parser: fed the same domain on one line, indented oddly, and as
# libvirt formats it, it registers the same uuid and nodeset with a real
# memmigd (over its socket; the QEMU pid is a stand-in process's, in a pid
# file where libvirt keeps them).
#
# Exit: 0 pass, 1 fail, 77 xmllint is not installed.
# Environment: top_builddir, srcdir, MEMMIGD, MEMMIG_CLI.
set -u
export LC_ALL=C
top_builddir=$(cd "${top_builddir:-.}" && pwd)
srcdir=$(cd "${srcdir:-$(dirname "$0")/../..}" && pwd)
command -v xmllint >/dev/null || { echo "SKIP: hook: xmllint is not installed (apt-get install libxml2-utils)"; exit 77; }
command -v jq >/dev/null || { echo "FAIL: hook: jq is not installed"; exit 1; }
memmigd=${MEMMIGD:-$top_builddir/src/daemon/memmigd}
cli=${MEMMIG_CLI:-$top_builddir/src/cli/memmig-cli}
. "$srcdir/tests/testlib.sh"
sock=$tmp/memmigd.sock
uuid=6a1e0c63-0d1b-4b4e-9c55-3f7d6c2e9a10

sleep 300 &
stand_in=$!
"$memmigd" --foreground --no-libvirt --socket "$sock" >"$tmp/memmigd.log" 2>&1 &
daemon=$!
trap 'kill $stand_in $daemon 2>/dev/null; wait; cleanup' EXIT
for _ in $(seq 50); do
	"$cli" --socket "$sock" domains >/dev/null 2>&1 && break
	sleep 0.1
done
mkdir -p "$tmp/run"

# hook NAME XML: runs the hook as libvirt does for "started"
hook() {
	echo "$stand_in" >"$tmp/run/$1.pid"
	printf '%s' "$2" | MEMMIG_CLI=$cli MEMMIG_SOCKET=$sock MEMMIG_LIBVIRT_RUNDIR=$tmp/run \
		"$srcdir/contrib/libvirt/hooks/qemu" "$1" started begin - 2>>"$tmp/hook.log"
}
registered_as() {
	local got

	got=$("$cli" --socket "$sock" domains --json | jq -c --arg n "$1" \
		'.[] | select(.name == $n) | [.uuid, .nodeset, .pid]')
	[ "$got" = "[\"$uuid\",\"$2\",$stand_in]" ] || { echo "  $1: registered as $got"; return 1; }
}

check "one line" hook one-line \
	"<domain type='qemu'><name>one-line</name><uuid>$uuid</uuid><memory>1</memory><numatune><memory mode='strict' nodeset='0-1,3'/></numatune></domain>"
check "one line: uuid and nodeset" registered_as one-line 0-1,3
check "odd indentation, attributes over lines" hook odd "<?xml version='1.0'?>
<domain type='qemu'>
<name>odd</name>
	    <uuid>
$uuid</uuid>
 <numatune>
        <memnode cellid='0' mode='strict' nodeset='5'/>
   <memory
      nodeset=\"2\"
      mode='strict'/>
 </numatune>
   <description>&lt;numatune&gt;&lt;memory nodeset='7'/&gt;</description>
</domain>"
check "odd: uuid and nodeset (not the memnode's, not the description's)" registered_as odd 2
check "libvirt's layout" hook plain "<domain type='kvm' id='3'>
  <name>plain</name>
  <uuid>$uuid</uuid>
  <numatune>
    <memory mode='strict' nodeset='1'/>
  </numatune>
</domain>"
check "libvirt's layout: uuid and nodeset" registered_as plain 1
check "no numatune: no nodeset" hook bare "<domain><name>bare</name><uuid>$uuid</uuid></domain>"
check "bare: registered without a nodeset" sh -c "'$cli' --socket '$sock' domains --json |
	jq -e '.[] | select(.name == \"bare\") | .nodeset == null' >/dev/null"
check "the hook printed nothing it should not" sh -c "! grep -v 'exited 0' '$tmp/hook.log' | grep ."
summary
