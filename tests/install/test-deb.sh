#!/bin/bash
# The Debian packages (debian/): built from this tree's distribution files
# with dpkg-buildpackage, installed with dpkg -i, every file where its
# reader looks (readers.sh), memmigd started (by systemd when it is PID 1:
# the package starts it; else directly, on a private socket) and a real
# move through its socket by the installed memmig-cli, then dpkg -r and
# --purge.  About two
# minutes, nearly all of it the package build.
set -u
memhog=${MEMHOG:-tests/helpers/memhog}
# shellcheck source=../testlib.sh
. "$(dirname "$0")/../testlib.sh"
# shellcheck source=readers.sh
. "$(dirname "$0")/readers.sh"
top=${top_builddir:-$(pwd)}
pkgs="memmig libmemmig-dev libmemmig0"
sock=/run/memmig/memmigd.sock

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "dpkg -i needs root"
for t in dpkg-buildpackage:dpkg-dev dh:debhelper fakeroot:fakeroot; do
	command -v "${t%:*}" >/dev/null || skip "${t%:*} is not installed (apt-get install ${t#*:})"
done
# Never replace what an administrator installed: memmig's packages, or
# the files they hold put there by make install, or a memmigd running.
for p in $pkgs; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q ' installed$' &&
		skip "package $p is installed already (dpkg -r $p to run this test)"
done
for f in /usr/bin/memmig-cli /usr/bin/memmig-bench /usr/sbin/memmigd /etc/libvirt/hooks/qemu.d/memmig \
	/lib/systemd/system/memmigd.service /etc/memmig/memmigd.conf.sample; do
	[ -e "$f" ] && skip "$f exists already (make install with --prefix=/usr?)"
done
[ -S "$sock" ] && "$top/src/cli/memmig-cli" --socket "$sock" jobs >/dev/null 2>&1 &&
	skip "a memmigd listens on $sock already"
systemd=no
[ -d /run/systemd/system ] && systemd=yes

# dpkg --purge removes the package's directories that are left empty,
# those that were there before it too: they are made again
kept=$(for d in /etc/libvirt/hooks /etc/libvirt/hooks/qemu.d /etc/memmig; do
	[ -d "$d" ] && echo "$d"; done)
installed=no dpid=
purge() {
	dpkg --purge $pkgs >>"$tmp/dpkg.log" 2>&1
	local rc=$? d
	for d in $kept; do mkdir -p "$d"; done
	return $rc
}
undo() {
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid"
	[ "$installed" = yes ] && purge
	[ -n "$hog" ] && kill "$hog" 2>/dev/null
	rm -rf "$tmp"
}
trap undo EXIT

# The tree as make dist would ship it (debian/ included), built as a
# package: nothing of the build tree is touched.
src=$tmp/memmig-src
${MAKE:-make} -C "$top" distdir distdir="$src" >"$tmp/dist.log" 2>&1 ||
	{ cat "$tmp/dist.log"; echo "FAIL: make distdir"; exit 1; }
[ -f "$src/debian/control" ] || { echo "FAIL: make distdir shipped no debian/control"; exit 1; }
(cd "$src" && dpkg-checkbuilddeps) >"$tmp/deps.log" 2>&1 ||
	skip "$(cat "$tmp/deps.log") (contrib/debian-setup.sh installs them)"
start=$(date +%s)
(cd "$src" && dpkg-buildpackage -us -uc -b -j"$(nproc)") >"$tmp/build.log" 2>&1 ||
	{ tail -n 40 "$tmp/build.log"; echo "FAIL: dpkg-buildpackage"; exit 1; }
echo "dpkg-buildpackage -us -uc -b: $(($(date +%s) - start)) s"
debs=
for p in $pkgs; do debs="$debs $(ls "$tmp/${p}"_*.deb)"; done
echo "built:$(for d in $debs; do printf ' %s' "${d##*/}"; done)"

check "dpkg -i" dpkg -i $debs >"$tmp/dpkg.log" 2>&1 || cat "$tmp/dpkg.log"
installed=yes
files=$(for p in $pkgs; do dpkg -L "$p"; done | while IFS= read -r f; do
	[ -d "$f" ] || echo "$f"; done | sort)
check_readers ""
check "memmig-cli is /usr/bin's" test "$cli" = /usr/bin/memmig-cli
check "memmigd is /usr/sbin's" test "$daemon" = /usr/sbin/memmigd
loaded=$(ldd /usr/bin/memmig-cli | sed -n 's/.*libmemmig\.so\.0 => \([^ ]*\).*/\1/p')
check "memmig-cli loads the packaged libmemmig ($loaded)" \
	test "$(realpath -m "$loaded")" = "$(realpath -m "$libdir/libmemmig.so.0")"
check "installed memmig-cli runs" exit_is 0 /usr/bin/memmig-cli --version
check "memmig-bench is /usr/bin's" test "$bench" = /usr/bin/memmig-bench
check "installed memmig-bench runs" exit_is 0 /usr/bin/memmig-bench --version
check "the documents the man pages name are packaged" test -s /usr/share/doc/memmig/json.md
check "and the examples" test -s /usr/share/doc/memmig/examples/live-ram.c
cat "$tmp/out"

if [ "$systemd" = yes ]; then
	# the package enabled and started it
	check "memmigd.service enabled" systemctl -q is-enabled memmigd
	systemctl start memmigd
	check "memmigd.service active" systemctl -q is-active memmigd
else
	# on a socket of its own: other tests may be running, and a memmigd on
	# the default socket would take their in-process moves
	echo "systemd is not PID 1: memmigd started directly"
	def=$(/usr/sbin/memmigd --help 2>&1 | sed -n 's/.*--socket PATH.*(default \([^)]*\)).*/\1/p')
	check "memmig-cli's default socket is memmigd's ($def)" \
		grep -qF "${def:-no default}" < <(/usr/bin/memmig-cli --help 2>&1)
	sock=$tmp/memmigd.sock
	export MEMMIG_SOCKET=$sock
	/usr/sbin/memmigd --foreground --no-libvirt --socket "$sock" \
		--config /etc/memmig/memmigd.conf.sample 2>"$tmp/daemon.log" &
	dpid=$!
fi
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
check "memmigd listens on $sock" test -S "$sock"

# A real move through the socket, the CLI and memmigd both the packages'
memhog_start 32 8
check "move through memmigd" exit_is 0 /usr/bin/memmig-cli move --pid "$hog" --to-node 0 --wait --json
check "via memmigd at $sock" grep -q "via memmigd at $sock" "$tmp/err"
head -n 1 "$tmp/err"
check "move result OK" test "$(jq -r .result "$tmp/out")" = OK
check_alive "after the move"
memhog_stop

if [ "$systemd" = yes ]; then
	dpkg -r $pkgs >>"$tmp/dpkg.log" 2>&1
	check "dpkg -r stopped memmigd" test "$(systemctl is-active memmigd)" != active
else
	kill "$dpid"
	wait "$dpid"
	check "memmigd stops on SIGTERM" test $? -eq 0
	dpid=
	check "dpkg -r" dpkg -r $pkgs >>"$tmp/dpkg.log" 2>&1
fi
check "dpkg -r removed the programs" test ! -e /usr/bin/memmig-cli -a ! -e /usr/bin/memmig-bench -a ! -e /usr/sbin/memmigd
check "dpkg -r removed the library" test ! -e "$libdir/libmemmig.so.0"
check "dpkg -r kept the configuration" test -e /etc/memmig/memmigd.conf.sample
check "dpkg --purge" purge
installed=no
check "purge removed the configuration and hook" \
	test ! -e /etc/memmig/memmigd.conf.sample -a ! -e /etc/libvirt/hooks/qemu.d/memmig
summary
