# Sourced by the tests that boot a Linux guest (tests/vm/run-vm.sh,
# tests/libvirt/test-libvirt.sh): what the host must provide.

# Debian's generic kernel (VM_KERNEL overrides): -cloud-amd64 lacks
# CONFIG_MEMORY_FAILURE and NUMA bits.  Prints it; fails when none.
vm_kernel() {
	local k=${VM_KERNEL:-$(ls /boot/vmlinuz-*-amd64 2>/dev/null | grep -v -- -cloud- | sort -V | tail -n 1)}

	[ -n "$k" ] && echo "$k"
}

# A statically linked busybox, for an initramfs with nothing else in it.
vm_busybox() {
	local b

	for b in /bin/busybox /usr/bin/busybox $(command -v busybox); do
		[ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1 && { echo "$b"; return 0; }
	done
	return 1
}
