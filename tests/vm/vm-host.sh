# Sourced by the tests that boot a Linux guest (tests/vm/run-vm.sh,
# tests/libvirt/test-libvirt.sh): what the host must provide.

# Debian's generic kernels here, oldest first: -cloud-amd64 lacks
# CONFIG_MEMORY_FAILURE and NUMA bits.
vm_kernels() {
	ls /boot/vmlinuz-*-amd64 2>/dev/null | grep -v -- -cloud- | sort -V
}

# The kernel the tier boots: Debian 12's own, 6.1 (VM_KERNEL overrides),
# else the newest there is.  Prints it; fails when none.
vm_kernel() {
	local k=${VM_KERNEL:-$(vm_kernels | grep '/vmlinuz-6\.1\.' | tail -n 1)}

	[ -n "$k" ] || k=$(vm_kernels | tail -n 1)
	[ -n "$k" ] && echo "$k"
}

# A newer kernel for the tier's second boot (VM_KERNEL_NEW overrides): the
# newest generic one, when it is not vm_kernel's (linux-image-6.12-amd64,
# from bookworm-security).  Prints it; fails when none.
vm_kernel_new() {
	local stock k

	stock=$(vm_kernel)
	k=${VM_KERNEL_NEW:-$(vm_kernels | tail -n 1)}
	[ -n "$k" ] && [ "$k" != "$stock" ] && echo "$k"
}

# A statically linked busybox, for an initramfs with nothing else in it.
vm_busybox() {
	local b

	for b in /bin/busybox /usr/bin/busybox $(command -v busybox); do
		[ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1 && { echo "$b"; return 0; }
	done
	return 1
}
