#!/bin/sh
# The README's first command, for a fresh Debian 12 machine, as root:
# installs every package memmig needs, builds it, and runs the main job.
set -eu
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
apt-get update
# Build tools and libraries; libpmem and numactl are benchmark peers;
# qemu-system-x86, linux-image-amd64 and busybox-static are for the
# multi-node test tier, which boots a second time under linux-image-6.12-amd64
# (bookworm-security) for what 6.1 lacks, and whose initramfs carries ndctl's
# cxl, ndctl and daxctl to turn QEMU's CXL memory devices into a CXL node;
# jq reads the CLI's JSON in the tests; gnuplot draws the benchmarks'
# --plot pictures; libvirtd runs a real domain for the
# libvirt tests; xmllint (libxml2-utils) is how the libvirt hook reads the
# domain XML; valgrind checks memmigd for leaks;
# clang and its runtime fuzz memmigd's request parser (libFuzzer);
# systemd and bash-completion say where units and completions go
# (pkg-config); debhelper, devscripts and fakeroot build the Debian
# packages that tests/install/test-deb.sh installs.
apt-get install -y --no-install-recommends \
	build-essential autoconf automake libtool pkg-config \
	libnuma-dev liburing-dev libjson-c-dev libdaxctl-dev libcunit1-dev \
	libvirt-dev libpmem-dev numactl jq gnuplot-nox \
	qemu-system-x86 linux-image-amd64 linux-image-6.12-amd64 busybox-static ndctl daxctl \
	libvirt-daemon-system libvirt-clients valgrind clang libclang-rt-14-dev \
	systemd bash-completion debhelper devscripts fakeroot \
	libxml2-utils

./autogen.sh
# The distribution's paths, as the Debian package has them: make install
# puts everything where memmigd, systemd, libvirtd and bash read it, and
# the calibration below goes to /var/lib/memmig, which libmemmig reads.
./configure --enable-werror --prefix=/usr --sysconfdir=/etc --localstatedir=/var
make -j"$(nproc)"

# The main job: measure this CPU's copy thresholds (written to the system
# calibration file that libmemmig loads), then live-migrate a running
# guest's RAM five times, every page checked (memmig-cli demo).
./src/cli/memmig-cli bench copy --calibrate
./src/cli/memmig-cli demo
