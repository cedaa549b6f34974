#!/usr/bin/env bash
# DKMS build of the module (host check of make check): `make dkms-src`
# copies what dkms-install would install into a temporary source tree, and
# `dkms build` builds it there, with its own dkms and install trees, for a
# Debian 6.1 kernel whose headers are installed: XFERK_DKMS_KVER, else the
# stock ABI (tests/vm/lib.sh; its headers are installed if missing), else
# the newest linux-headers-6.1.0-*-amd64 installed. Nothing is loaded or
# installed. Asserts that dkms.conf's PACKAGE_VERSION is the Makefile's
# VERSION, that xferk.ko was built and that its vermagic is that kernel's.
# Exit 77 (skip) without dkms or without any Debian 6.1 headers.
source "$(dirname "$0")/vm/lib.sh"
cd "$XFERK_SRC"

skip() { echo "dkms: $*: skipped"; exit 77; }
fail() { echo "dkms: FAIL: $*"; exit 1; }

command -v dkms >/dev/null || skip "dkms is not installed (apt-get install dkms)"

version=$(sed -n 's/^VERSION[[:space:]]*:=[[:space:]]*//p' Makefile)
conf_version=$(sed -n 's/^PACKAGE_VERSION="*\([^"]*\)"*$/\1/p' dkms.conf)
[ -n "$version" ] && [ "$version" = "$conf_version" ] ||
	fail "dkms.conf PACKAGE_VERSION=$conf_version, Makefile VERSION=$version"

newest_headers() {
	ls -d /usr/src/linux-headers-6.1.0-*-amd64 2>/dev/null | sort -V |
		tail -n1 | sed 's|^/usr/src/linux-headers-||'
}
kver=${XFERK_DKMS_KVER:-$(stock_abi 2>/dev/null || true)}
# The check is dpkg's, not the headers' Makefile: make check's stock VM
# run may be installing the same package meanwhile (ensure_packages then
# waits for it).
if [ -n "$kver" ] && [ "$(id -u)" -eq 0 ] &&
   ! dpkg-query -W -f='${Status}' "linux-headers-$kver" 2>/dev/null |
	grep -q 'ok installed'; then
	ensure_packages "linux-headers-$kver"
fi
[ -n "$kver" ] && [ -e "/usr/src/linux-headers-$kver/Makefile" ] || kver=$(newest_headers)
[ -n "$kver" ] || skip "no linux-headers-6.1.0-*-amd64 installed"
# linux-headers-$kver makes /lib/modules/$kver/build; without it, say where.
ksrc=/lib/modules/$kver/build
[ -e "$ksrc/Makefile" ] || ksrc=/usr/src/linux-headers-$kver

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src" "$tmp/tree" "$tmp/install"
make -s dkms-src DKMS_SRC="$tmp/src/xferk-$version"

# dkms signs what it builds for a kernel with CONFIG_MODULE_SIG and makes a
# key in /var/lib/dkms if there is none. Where it would, a private mount
# namespace gives it a throwaway /var/lib/dkms (root only; as another user
# it cannot write there and builds unsigned).
build() {
	local trees=(--sourcetree "$tmp/src" --dkmstree "$tmp/tree"
		     --installtree "$tmp/install")

	dkms add -m xferk -v "$version" "${trees[@]}" &&
		dkms build -m xferk -v "$version" -k "$kver" \
			--kernelsourcedir "$ksrc" "${trees[@]}"
}
export -f build
export version kver ksrc tmp
if [ "$(id -u)" -eq 0 ] && { [ ! -e /var/lib/dkms/mok.key ] || [ ! -e /var/lib/dkms/mok.pub ]; }; then
	unshare --mount --propagation private bash -c '
		set -e
		mkdir -p /var/lib/dkms
		mount -t tmpfs xferk-dkms-test /var/lib/dkms
		build' >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "dkms build"; }
else
	build >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "dkms build"; }
fi
sed 's/^/    | /' "$tmp/build.log"

ko=$(find "$tmp/tree/xferk/$version/$kver" -name 'xferk.ko*' | head -n1)
[ -n "$ko" ] || fail "no xferk.ko under $tmp/tree/xferk/$version/$kver"
vermagic=$(modinfo -F vermagic "$ko")
case "$vermagic" in
"$kver "*) ;;
*) fail "$ko: vermagic '$vermagic', expected $kver" ;;
esac
echo "dkms: xferk $version built for $kver ($ksrc): vermagic $vermagic"
