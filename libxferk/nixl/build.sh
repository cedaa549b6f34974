#!/usr/bin/env bash
# make nixl: builds NIXL core and UCX (verbs + rdma_cm, for the comparison
# runs) from pinned sources, cached under $XFERK_CACHE/nixl-<hash>,
# then the xferk backend plugin (libplugin_XFERK.so) into build/nixl/.
#
#   NIXL_SRC_DIR  directory holding the source tarballs (default:
#                 ../shared/third_party/nixl next to the source tree)
#
# Exit 77 when the sources are absent (make check then skips the NIXL tests).
# The cache directory is complete when it holds .done; build/nixl/env is
# what the tests source: paths of the libraries, Python modules, plugins.
set -euo pipefail
XFERK_SRC=$(cd "$(dirname "$0")/../.." && pwd)
XFERK_CACHE=${XFERK_CACHE:-$HOME/.cache/xferk}
XFERK_BUILD=${XFERK_BUILD:-$XFERK_SRC/build}
NIXL_SRC_DIR=${NIXL_SRC_DIR:-$XFERK_SRC/../shared/third_party/nixl}

NIXL_TARBALL=nixl-8770b655.tar.xz
UCX_TARBALL=ucx-1.22.0.tar.xz
SUBPROJECTS="abseil-cpp-20250814.1 asio-1.30.2 taskflow-3.10.0 tomlplusplus-3.4.0"
# Packages the NIXL build and its tests need (tests/vm/lib.sh installs them).
NIXL_PACKAGES="meson ninja-build g++ autoconf automake libtool python3-dev pybind11-dev
python3-pytest python3-numpy python3-torch libgflags-dev"

# ensure_packages (and the package list of the tests).
# shellcheck source=../../tests/vm/lib.sh
source "$XFERK_SRC/tests/vm/lib.sh"
log() { printf '[xferk-nixl] %s\n' "$*" >&2; }

missing=""
for t in "$NIXL_TARBALL" "$UCX_TARBALL" ${SUBPROJECTS// /.tar.xz }.tar.xz; do
	[ -e "$NIXL_SRC_DIR/$t" ] || missing="$missing $t"
done
if [ -n "$missing" ]; then
	cat >&2 <<EOT
[xferk-nixl] NIXL sources not found in NIXL_SRC_DIR=$NIXL_SRC_DIR (missing:$missing).
[xferk-nixl] Put these tarballs there (or set NIXL_SRC_DIR): NIXL at commit 8770b655
[xferk-nixl] (github.com/ai-dynamo/nixl), UCX v1.22.0 (github.com/openucx/ucx), and the
[xferk-nixl] meson subprojects abseil-cpp 20250814.1, asio 1.30.2, taskflow 3.10.0 and
[xferk-nixl] tomlplusplus 3.4.0 with their wrapdb build files; see Documentation/nixl.md.
EOT
	exit 77
fi

# The options of the cached build; the cache's name hashes them and the
# sources, so a change to either builds a new cache.
UCX_OPTS="--with-verbs --with-rdmacm --without-cuda --without-rocm --without-java --without-go"
NIXL_OPTS="--wrap-mode=nodownload --force-fallback-for=tomlplusplus -Dbuildtype=release
-Denable_plugins=UCX,POSIX -Dbuild_tests=false -Dbuild_examples=false"
# shellcheck disable=SC2086
ensure_packages $NIXL_PACKAGES
if dpkg-query -W -f='${Status}' libabsl-dev 2>/dev/null | grep -q 'ok installed'; then
	log "libabsl-dev is installed: NIXL would refuse it as too old instead of building"
	log "its own abseil; remove it (apt-get remove libabsl-dev) and run again"
	exit 1
fi

jobs=$(nproc)

build_cache() {
	log "building UCX and NIXL in $dir (several minutes, once)"
	rm -rf "$dir"
	mkdir -p "$dir/src"
	tar -C "$dir/src" -xf "$NIXL_SRC_DIR/$UCX_TARBALL"
	tar -C "$dir/src" -xf "$NIXL_SRC_DIR/$NIXL_TARBALL"
	local s
	for s in $SUBPROJECTS; do
		tar -C "$dir/src/nixl/subprojects" -xf "$NIXL_SRC_DIR/$s.tar.xz"
	done
	(
		cd "$dir/src/ucx-1.22.0"
		./autogen.sh >"$dir/ucx.log" 2>&1
		# shellcheck disable=SC2086
		contrib/configure-release-mt --prefix="$dir/ucx" $UCX_OPTS >>"$dir/ucx.log" 2>&1
		make -s -j"$jobs" install >>"$dir/ucx.log" 2>&1
	) || { tail -n 30 "$dir/ucx.log" >&2; exit 1; }
	# A CPU-only build: no CUDA, Debian's python3 and meson.
	export CUDA_HOME=/nonexistent CUDA_PATH=/nonexistent
	export PATH=/usr/bin:$PATH PKG_CONFIG_PATH=$dir/ucx/lib/pkgconfig
	(
		cd "$dir/src/nixl"
		# shellcheck disable=SC2086
		meson setup "$dir/build" --prefix="$dir/nixl" $NIXL_OPTS -Ducx_path="$dir/ucx"
		ninja -C "$dir/build" -j"$jobs" install
	) >"$dir/nixl.log" 2>&1 || { tail -n 30 "$dir/nixl.log" >&2; exit 1; }
	touch "$dir/.done"
}

# nixlbench (NIXL's benchmark), taught the backend name XFERK (its list of
# backends is fixed); runs as two instances over its ASIO runtime.
build_bench() {
	local b=$dir/src/nixl/benchmark/nixlbench s
	log "building nixlbench in $dir"
	for s in asio-1.30.2 tomlplusplus-3.4.0; do
		[ -e "$b/subprojects/$s" ] || tar -C "$b/subprojects" -xf "$NIXL_SRC_DIR/$s.tar.xz"
	done
	/usr/bin/python3 - "$b/src/worker/nixl/nixl_worker.cpp" <<'EOT'
import sys
p = sys.argv[1]
s = open(p).read()
if '"XFERK"' not in s:
    known = "        0 == xferBenchConfig::backend.compare(XFERBENCH_BACKEND_MOONCAKE) ||\n"
    params = ('    } else {\n        std::cerr << "Unsupported NIXLBench backend: "'
              ' << xferBenchConfig::backend << std::endl;\n        exit(EXIT_FAILURE);\n'
              '    }\n\n    CHECK_NIXL_ERROR(agent->createBackend(')
    if s.count(known) != 1 or s.count(params) != 1:
        sys.exit("nixlbench: cannot add the XFERK backend")
    s = s.replace(known, known + '        0 == xferBenchConfig::backend.compare("XFERK") ||\n')
    s = s.replace(params, '    } else if (0 == xferBenchConfig::backend.compare("XFERK")) {\n'
                  '        std::cout << "XFERK backend" << std::endl;\n' + params)
    open(p, "w").write(s)
EOT
	export CUDA_HOME=/nonexistent CUDA_PATH=/nonexistent PATH=/usr/bin:$PATH
	rm -rf "$dir/bench-build"
	(
		cd "$b"
		meson setup "$dir/bench-build" --prefix="$dir/nixl" --wrap-mode=nodownload \
			--force-fallback-for=tomlplusplus,asio -Dbuildtype=release \
			-Dnixl_path="$dir/nixl" -Ducx_path="$dir/ucx"
		ninja -C "$dir/bench-build" -j"$jobs" install
	) >"$dir/bench.log" 2>&1 || { tail -n 30 "$dir/bench.log" >&2; exit 1; }
	declare -f build_bench >"$dir/.bench-done"
}

# sync_files SRC DST FILE...: copies into DST each FILE of SRC whose
# content differs (an unchanged file keeps its time, so ninja leaves its
# objects) and removes the files of DST not named.
sync_files() {
	local src=$1 dst=$2 f
	shift 2
	mkdir -p "$dst"
	for f in "$@"; do
		cmp -s "$src/$f" "$dst/$f" || cp -P "$src/$f" "$dst/$f"
	done
	for f in "$dst"/* "$dst"/.[!.]*; do
		[ -e "$f" ] || [ -L "$f" ] || continue
		[[ " $* " == *" ${f##*/} "* ]] || rm -rf "$f"
	done
}

# write_xferk_pc FILE LIBDIR CFLAGS: a pkg-config file for libxferk in
# LIBDIR with CFLAGS, what the plugin's meson.build asks pkg-config for.
write_xferk_pc() {
	cat >"$1" <<EOT
Name: xferk
Description: libxferk as libxferk/nixl/build.sh found it
Version: 0
Libs: -L$2 -lxferk
Cflags: $3
EOT
}

# setup_intree DIR: a copy of the pinned tree in DIR with the plugin added
# as Documentation/nixl.md tells a user (XFERK in all_plugins,
# subdir('xferk')), configured with NIXL's options to build it alone; the
# plugin's sources and libxferk are copied in by build_intree.
setup_intree() {
	local t=$1
	log "setting up NIXL's tree with the plugin in $t (about two minutes)"
	rm -rf "$t"
	mkdir -p "$t/xferk/pkgconfig"
	cp -a "$dir/src/nixl" "$t/nixl"
	sed -i "s/^all_plugins = \['UCX',/all_plugins = ['XFERK', 'UCX',/" "$t/nixl/meson.build"
	grep -q "^all_plugins = \['XFERK'," "$t/nixl/meson.build" ||
		{ log "NIXL's meson.build has no all_plugins list to add XFERK to"; exit 1; }
	printf "\nif enabled_plugins.get('XFERK')\n    subdir('xferk')\nendif\n" \
		>>"$t/nixl/src/plugins/meson.build"
	write_xferk_pc "$t/xferk/pkgconfig/xferk.pc" "$t/xferk/lib" \
		"-I$t/xferk/include -I$t/xferk/uapi"
	sync_intree "$t"
	(
		export CUDA_HOME=/nonexistent CUDA_PATH=/nonexistent PATH=/usr/bin:$PATH
		export PKG_CONFIG_PATH=$t/xferk/pkgconfig:$dir/ucx/lib/pkgconfig
		cd "$t/nixl"
		# shellcheck disable=SC2086
		meson setup "$t/build" ${NIXL_OPTS/-Denable_plugins=UCX,POSIX/-Denable_plugins=XFERK} \
			-Ducx_path="$dir/ucx"
	) >"$t/setup.log" 2>&1 || { tail -n 30 "$t/setup.log" >&2; exit 1; }
}

# sync_intree DIR: this tree's plugin sources, libxferk's headers and
# library into the copy in DIR, by content (one build directory serves
# every checkout; an unchanged file is not rebuilt).
sync_intree() {
	local t=$1 files
	mapfile -t files < <(cd "$XFERK_SRC/libxferk/nixl/plugin" && printf '%s\n' *)
	sync_files "$XFERK_SRC/libxferk/nixl/plugin" "$t/nixl/src/plugins/xferk" "${files[@]}"
	sync_files "$XFERK_SRC/libxferk" "$t/xferk/include" libxferk.h
	sync_files "$XFERK_SRC/uapi" "$t/xferk/uapi" xferk.h
	sync_files "$XFERK_BUILD/lib" "$t/xferk/lib" libxferk.so libxferk.so.0 \
		"$(readlink "$XFERK_BUILD/lib/libxferk.so.0")"
}

# The plugin as NIXL's own src/plugins/xferk, built by NIXL's meson with
# NIXL's flags (-O3, -Werror): the copy of the tree is set up again only
# when its setup changes (the stamp holds that code and NIXL's options),
# then only the plugin target is built.
build_intree() {
	local t=$dir/intree stamp
	stamp=$(declare -f setup_intree write_xferk_pc; echo "$NIXL_OPTS")
	if [ "$(cat "$t/.setup" 2>/dev/null)" != "$stamp" ]; then
		setup_intree "$t"
		echo "$stamp" >"$t/.setup"
	else
		sync_intree "$t"
	fi
	ninja -C "$t/build" src/plugins/xferk/libplugin_XFERK.so >"$t/build.log" 2>&1 ||
		{ tail -n 40 "$t/build.log" >&2; exit 1; }
}

key=$( (echo "$UCX_OPTS $NIXL_OPTS"; declare -f build_cache; cd "$NIXL_SRC_DIR" &&
	sha256sum "$NIXL_TARBALL" "$UCX_TARBALL" ${SUBPROJECTS// /.tar.xz }.tar.xz) |
	sha256sum | cut -c1-12)
dir=$XFERK_CACHE/nixl-$key
rm -f "$XFERK_BUILD/nixl/env"
# One build of the cache at a time.
mkdir -p "$XFERK_CACHE"
exec 9>"$XFERK_CACHE/nixl.lock"
flock 9
[ -e "$dir/.done" ] || build_cache
# Built by this script's build_bench, else again.
declare -f build_bench | cmp -s - "$dir/.bench-done" || build_bench

# The plugin, built by meson.build against the cached NIXL install (as
# against any installed NIXL) and this tree's libxferk (a pkg-config file
# for the build tree).
out=$XFERK_BUILD/nixl
nixl_lib=$(dirname "$(find "$dir/nixl" -name libnixl.so | head -n1)")
ucx_plugin=$(find "$dir/nixl" -name libplugin_UCX.so | head -n1)
[ -n "$nixl_lib" ] && [ -n "$ucx_plugin" ] || { log "NIXL install in $dir is incomplete"; exit 1; }
mkdir -p "$out/plugins" "$out/pkgconfig"
make -s -C "$XFERK_SRC" lib
src=$dir/src/nixl
write_xferk_pc "$out/pkgconfig/xferk.pc" "$XFERK_BUILD/lib" "-I$XFERK_SRC/libxferk -I$XFERK_SRC/uapi"
meson_opts=(-Dnixl_path="$dir/nixl" -Dabsl_include="$src/subprojects/abseil-cpp-20250814.1")
export PKG_CONFIG_PATH=$out/pkgconfig
if [ -e "$out/meson/build.ninja" ]; then
	meson configure "$out/meson" "${meson_opts[@]}" >"$out/meson.log" 2>&1
else
	meson setup "$out/meson" "$XFERK_SRC/libxferk/nixl" "${meson_opts[@]}" >"$out/meson.log" 2>&1
fi || { cat "$out/meson.log" >&2; exit 1; }
ninja -C "$out/meson" >>"$out/meson.log" 2>&1 || { tail -n 40 "$out/meson.log" >&2; exit 1; }
# Installed (into a staging directory): the build's run paths are gone.
rm -rf "$out/stage"
meson install -C "$out/meson" --destdir "$out/stage" --no-rebuild >>"$out/meson.log" 2>&1 ||
	{ tail -n 20 "$out/meson.log" >&2; exit 1; }
install -m 0755 "$out/stage$nixl_lib/plugins/libplugin_XFERK.so" "$out/libplugin_XFERK.so"
# The backend interface it was built for, and the tool that fingerprints
# one (install.sh compares an installed NIXL's headers with it).
install -m 0644 "$out/meson/plugin/xferk_interface_built.cpp" "$out/interface"
install -m 0755 "$out/meson/plugin/xferk_interface_tool" "$out/interface_tool"
# Every symbol must resolve: NIXL's plugin manager would only log it.
LD_LIBRARY_PATH="$nixl_lib:$XFERK_BUILD/lib" /usr/bin/python3 -c \
	"import ctypes, os, sys; ctypes.CDLL(sys.argv[1], os.RTLD_NOW)" "$out/libplugin_XFERK.so"
# NIXL_PLUGIN_DIR replaces NIXL's plugin directory: UCX and POSIX (NIXL's
# tests use it) next to XFERK.
ln -sf "$out/libplugin_XFERK.so" "$out/plugins/libplugin_XFERK.so"
ln -sf "$ucx_plugin" "$out/plugins/libplugin_UCX.so"
ln -sf "$(dirname "$ucx_plugin")/libplugin_POSIX.so" "$out/plugins/libplugin_POSIX.so"
python_dir=$(find "$dir/nixl" -type d -name dist-packages | head -n1)
[ -n "$python_dir" ] || { log "no NIXL Python package in $dir"; exit 1; }
# `import nixl` names the one backend package this build has (nixl_cu12).
# NIXL's meta package `nixl` would pick it by torch's CUDA version and,
# with a CPU-only torch (Debian's), imports torch to learn there is none:
# 17 s per Python process in the stock VM, 45 s on the debug kernel.
# NIXL's own tests and ours import `nixl` as before; nixl_install.sh
# still goes through the meta package, as `pip install` would.
backend=$(find "$python_dir" -maxdepth 1 -type d -name 'nixl_cu*')
[ -n "$backend" ] && [ "$(wc -l <<<"$backend")" -eq 1 ] ||
	{ log "not one nixl_cu* package in $python_dir: ${backend:-none}"; exit 1; }
mkdir -p "$out/python"
ln -sfn "$backend" "$out/python/nixl"
cat >"$out/env" <<EOT
# Written by libxferk/nixl/build.sh: what a NIXL program needs to find
# NIXL, UCX and the xferk plugin built from this tree.
NIXL_CACHE='$dir'
NIXLBENCH='$dir/nixl/bin/nixlbench'
NIXL_SRC='$src'
NIXL_PLUGIN_DIR='$out/plugins'
LD_LIBRARY_PATH='$nixl_lib:$dir/ucx/lib:$XFERK_BUILD/lib'
PYTHONPATH='$out/python:$python_dir'
export NIXL_PLUGIN_DIR LD_LIBRARY_PATH PYTHONPATH
EOT
build_intree
log "built $out/libplugin_XFERK.so (environment: $out/env), and in NIXL's tree"
