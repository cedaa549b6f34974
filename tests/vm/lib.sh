#!/usr/bin/env bash
# Shared helpers for the VM harness: package installation, kernel preparation
# and the per-kernel build directories. Sourced by tests/vm/run.
set -euo pipefail

XFERK_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
XFERK_CACHE=${XFERK_CACHE:-$HOME/.cache/xferk}
XFERK_BUILD=${XFERK_BUILD:-$XFERK_SRC/build}

# The guests' CPU (qemu -cpu): all that TCG emulates but ERMS and FSRM.
# With them, the kernel's memcpy, user copies and clear_page, and glibc's
# large copies and fills, use rep movsb and rep stosb, which qemu 7.2
# runs one byte per turn of a loop; without them, rep movsq (REP_GOOD)
# and vector code. Seventeen stock steps took 13 % less time.
VM_CPU_MODEL=max,erms=off,fsrm=off

# Debian packages the harness, the build and the tests need.
XFERK_PACKAGES="build-essential pkg-config kmod cpio bc bison flex libelf-dev libssl-dev
dwarves xz-utils python3 perl qemu-system-x86 busybox-static iproute2 rdma-core
perftest ibverbs-utils librdmacm-dev libibverbs-dev liburing-dev linux-source-6.1 procps
mandoc groff dkms python3-pytest python3-numpy python3-torch fio jq"

log() { printf '[xferk-vm] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# vm_monitor SOCKET CMD: runs the qemu monitor command CMD through the
# monitor at SOCKET and prints its answer.
vm_monitor() {
	python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
out = b""
def until_prompt():
    global out
    while not out.endswith(b"(qemu) "):
        data = s.recv(65536)
        if not data:
            sys.exit("the monitor closed")
        out += data
until_prompt()
out = b""
s.sendall(sys.argv[2].encode() + b"\n")
until_prompt()
text = out.decode(errors="replace").replace("\r", "")
print("\n".join(text.splitlines()[1:-1]))
PY
}

# Install whatever is missing from XFERK_PACKAGES (plus any extra arguments).
ensure_packages() {
	local apt_log=$XFERK_BUILD/logs/apt.log
	# make check's runs may install at the same time, and apt-get refuses
	# a second install while one runs: they take turns (the lock), and
	# one that waited finds what the other installed.
	mkdir -p "$XFERK_BUILD/logs"
	(
		missing=()
		flock 8
		for p in $XFERK_PACKAGES "$@"; do
			dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
				missing+=("$p")
		done
		[ ${#missing[@]} -eq 0 ] && exit 0
		[ "$(id -u)" -eq 0 ] || die "need root to apt-get install ${missing[*]}"
		# apt's thousand lines go to a log, named here and shown on
		# failure.
		log "installing ${#missing[@]} packages (log: $apt_log): ${missing[*]}"
		if ! { apt-get update -qq &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				--no-install-recommends "${missing[@]}"; } >"$apt_log" 2>&1; then
			tail -n 30 "$apt_log" >&2
			die "apt-get install failed; see $apt_log"
		fi
	) 8>"$XFERK_BUILD/logs/apt.lock" || exit 1
}

# The ABI name of Debian's current stock amd64 kernel, e.g. 6.1.0-57-amd64.
# XFERK_STOCK_ABI overrides it.
stock_abi() {
	if [ -n "${XFERK_STOCK_ABI:-}" ]; then
		echo "$XFERK_STOCK_ABI"
		return
	fi
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/.*Depends: linux-image-\(6\.1\.0-[0-9]*-amd64\)$/\1/p' | head -n1
}

# Prepare the stock kernel: image + module tree in the cache, headers installed.
# Sets STOCK_VMLINUZ, STOCK_MODROOT (a root dir for modprobe -d), STOCK_KDIR.
prepare_stock_kernel() {
	local abi dir deb
	abi=$(stock_abi)
	[ -n "$abi" ] || { apt-get update -qq; abi=$(stock_abi); }
	[ -n "$abi" ] || die "cannot resolve Debian's stock kernel (linux-image-amd64)"
	STOCK_ABI=$abi
	dir=$XFERK_CACHE/stock-$abi
	if [ ! -e "$dir/.done" ]; then
		log "fetching linux-image-$abi"
		rm -rf "$dir"
		mkdir -p "$dir/dl"
		(cd "$dir/dl" && apt-get download -qq "linux-image-$abi" >&2)
		for deb in "$dir"/dl/*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
		rm -rf "$dir/dl"
		depmod -b "$dir/root" "${abi}"
		touch "$dir/.done"
	fi
	ensure_packages "linux-headers-$abi"
	STOCK_VMLINUZ=$(ls "$dir"/root/boot/vmlinuz-*)
	STOCK_MODROOT=$dir/root
	STOCK_KDIR=/usr/src/linux-headers-$abi
}

# Build (or reuse) the debug kernel from linux-source-6.1 and tests/vm/debug.config.
# Sets DEBUG_VMLINUZ and DEBUG_KDIR.
prepare_debug_kernel() {
	local srcver key dir tarball
	tarball=/usr/src/linux-source-6.1.tar.xz
	[ -e "$tarball" ] || ensure_packages linux-source-6.1
	srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1)
	key=$( (echo "$srcver"; cat "$XFERK_SRC/tests/vm/debug.config") | sha256sum | cut -c1-12)
	dir=$XFERK_CACHE/debug-$key
	DEBUG_KDIR=$dir/build
	DEBUG_VMLINUZ=$DEBUG_KDIR/arch/x86/boot/bzImage
	[ -e "$dir/.done" ] && return 0
	log "building the debug kernel in $dir (linux-source $srcver); this takes several minutes"
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -C "$dir" -xf "$tarball"
	mv "$dir"/linux-source-6.1 "$dir/src"
	mkdir -p "$DEBUG_KDIR"
	local jobs
	jobs=$(nproc)
	(
		cd "$dir/src"
		make -s O="$DEBUG_KDIR" allnoconfig >&2
		scripts/kconfig/merge_config.sh -n -O "$DEBUG_KDIR" \
			"$DEBUG_KDIR/.config" "$XFERK_SRC/tests/vm/debug.config" >"$dir/merge.log" 2>&1
		make -s O="$DEBUG_KDIR" olddefconfig >&2
		# Every requested option must have survived the merge.
		local opt
		while read -r opt; do
			case "$opt" in ''|'#'*) continue ;; esac
			grep -qxF "$opt" "$DEBUG_KDIR/.config" ||
				die "debug.config: '$opt' did not take effect (see $dir/merge.log)"
		done < "$XFERK_SRC/tests/vm/debug.config"
		make -s -j"$jobs" O="$DEBUG_KDIR" bzImage modules >"$dir/build.log" 2>&1 ||
			{ tail -n 40 "$dir/build.log" >&2; die "debug kernel build failed"; }
		make -s O="$DEBUG_KDIR" modules_prepare >>"$dir/build.log" 2>&1
	)
	touch "$dir/.done"
}

# checkpatch.pl and its data files from linux-source-6.1, cached.
# Sets CHECKPATCH.
prepare_checkpatch() {
	local srcver dir f
	[ -e /usr/src/linux-source-6.1.tar.xz ] || ensure_packages linux-source-6.1
	srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1)
	dir=$XFERK_CACHE/checkpatch-$srcver
	CHECKPATCH=$dir/linux-source-6.1/scripts/checkpatch.pl
	[ -e "$CHECKPATCH" ] && return 0
	mkdir -p "$dir"
	for f in checkpatch.pl spelling.txt const_structs.checkpatch; do
		echo "linux-source-6.1/scripts/$f"
	done | tar -C "$dir" -xJf /usr/src/linux-source-6.1.tar.xz -T -
}
