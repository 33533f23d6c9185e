# Sourced by the tests/install tests: where each reader of an installed
# file looks, asked of the reader itself (systemd, libvirtd, man, pkg-config,
# the compiler, the dynamic linker, bash-completion), and a check that a
# file of an installed tree lies there.

# same_dir DIR LIST: DIR is one of LIST's lines, symbolic links resolved
# (/lib is /usr/lib on a merged /usr)
same_dir() {
	local want d
	want=$(realpath -m "$1")
	while IFS= read -r d; do
		[ -n "$d" ] && [ "$(realpath -m "$d")" = "$want" ] && return 0
	done <<<"$2"
	echo "  $1 is not among: $(echo $2)"
	return 1
}

lines() { tr ':' '\n'; }

unit_dirs() { systemd-analyze unit-paths 2>/dev/null; }
man_dirs() { manpath -g 2>/dev/null | lines; }
pc_dirs() { pkg-config --variable pc_path pkg-config | lines; }
include_dirs() {
	${CC:-cc} -xc -E -v /dev/null 2>&1 |
		sed -n '/<\.\.\.> search starts here:/,/^End of search list/s/^ //p'
}
ld_dirs() { ldconfig -v -N -X 2>/dev/null | sed -n 's|^\(/[^:]*\):.*|\1|p'; }
completion_dirs() {
	local d
	for d in $(echo "${XDG_DATA_DIRS:-/usr/local/share:/usr/share}" | lines); do
		echo "$d/bash-completion/completions"
	done
}
# libvirtd reads its hooks under the directory of its own configuration
hook_dir() {
	local conf
	conf=$(libvirtd --help 2>/dev/null | grep -m1 -A1 '^ *Configuration file' | tail -n 1)
	echo "$(dirname "${conf:-/etc/libvirt/libvirtd.conf}")/hooks/qemu.d"
}

# find_one ROOT NAME: the path (without ROOT) of the file called NAME, or
# NAME.gz (a packaged manual), among FILES (the installed files, one a
# line, with ROOT)
find_one() {
	local p
	p=$(grep -m1 -E "/$2(\.gz)?\$" <<<"$files") || { echo "  $2 was not installed" >&2; return 1; }
	echo "${p#"$1"}"
}

# check_readers ROOT: every installed file of FILES (paths under ROOT)
# lies where its reader reads it; sets unit, hook, cli, daemon, sample,
# libdir (paths without ROOT) for what the caller runs next
check_readers() {
	local root=$1 pc inc man exec

	unit=$(find_one "$root" memmigd.service)
	check "unit in a systemd unit directory ($unit)" same_dir "${unit%/*}" "$(unit_dirs)"
	sock_unit=$(find_one "$root" memmigd.socket)
	check "socket unit beside it ($sock_unit)" test "${sock_unit%/*}" = "${unit%/*}"
	exec=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$root$unit")
	check "the unit's ExecStart ($exec) is installed" test -x "$root$exec"

	hook=$(find_one "$root" hooks/qemu.d/memmig)
	check "hook in libvirtd's hook directory ($hook)" same_dir "${hook%/*}" "$(hook_dir)"
	check "hook executable" test -x "$root$hook"

	cli=$(find_one "$root" bin/memmig-cli)
	bench=$(find_one "$root" bin/memmig-bench)
	# memmig-cli bench and demo run the memmig-bench beside it
	check "memmig-bench beside memmig-cli ($bench)" test "${bench%/*}" = "${cli%/*}"
	daemon=$(find_one "$root" sbin/memmigd)
	check "memmigd is ExecStart's" test "$daemon" = "$exec"
	sample=$(find_one "$root" memmigd.conf.sample)
	libdir=$(find_one "$root" libmemmig.so.0)
	libdir=${libdir%/*}
	check "libmemmig in a directory ld.so searches ($libdir)" same_dir "$libdir" "$(ld_dirs)"

	# memmigd says which configuration it reads; the sample lies beside it
	local conf
	conf=$(LD_LIBRARY_PATH=$root$libdir "$root$daemon" --help 2>&1 |
		sed -n 's/.*--config FILE.*(default \([^;]*\);.*/\1/p')
	check "memmigd reads a configuration ($conf)" test -n "$conf"
	check "the sample is $conf.sample" test "$sample" = "$conf.sample"

	for man in memmig-cli.1 memmig-bench.1 libmemmig.3 memmigd.8; do
		man=$(find_one "$root" "$man")
		check "$man in man's path" same_dir "${man%/man?/*}" "$(man_dirs)"
	done
	man=$(find_one "$root" memmigd.8)
	zcat -f "$root$man" >"$tmp/memmigd.8"
	check "memmigd(8) names its configuration" grep -qxF ".I $conf" "$tmp/memmigd.8"
	check "memmigd(8) names the unit" grep -qxF ".I $unit" "$tmp/memmigd.8"
	check "memmigd(8) names the socket unit" grep -qxF ".I $sock_unit" "$tmp/memmigd.8"
	check "memmigd(8) names the hook" grep -qxF ".I $hook" "$tmp/memmigd.8"

	pc=$(find_one "$root" libmemmig.pc)
	check "libmemmig.pc in pkg-config's path ($pc)" same_dir "${pc%/*}" "$(pc_dirs)"
	inc=$(find_one "$root" memmig.h)
	check "memmig.h in the compiler's path ($inc)" same_dir "${inc%/*}" "$(include_dirs)"
	check "libmemmig.pc names the headers' directory" \
		test "$(pkg-config --variable=includedir "$root$pc")" = "${inc%/*}"
	check "libmemmig.pc names the library's directory" \
		test "$(pkg-config --variable=libdir "$root$pc")" = "$libdir"

	comp=$(find_one "$root" completions/memmig-cli)
	check "completion where bash-completion looks ($comp)" \
		same_dir "${comp%/*}" "$(completion_dirs)"
	# bash-completion's own loader finds it (its directories under ROOT)
	check "bash-completion loads it" bash -c '
		. /usr/share/bash-completion/bash_completion
		XDG_DATA_DIRS=$1/usr/local/share:$1/usr/share
		__load_completion memmig-cli && complete -p memmig-cli' _ "$root" >/dev/null
	# memmig-bench's too, and memmig-cli's bench and demo take its words
	check "bash-completion loads memmig-bench's" bash -c '
		. /usr/share/bash-completion/bash_completion
		XDG_DATA_DIRS=$1/usr/local/share:$1/usr/share
		__load_completion memmig-bench && complete -p memmig-bench' _ "$root" >/dev/null
	check "memmig-cli bench live completes memmig-bench's --busy" bash -c '
		. "$1"
		COMP_WORDS=(memmig-cli bench live --bus) COMP_CWORD=3
		_memmig_cli
		[ "${COMPREPLY[*]}" = --busy ] || { echo "  completed: ${COMPREPLY[*]}"; false; }' _ "$root$comp"
}
