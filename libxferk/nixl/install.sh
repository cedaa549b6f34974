#!/usr/bin/env bash
# make nixl-install (and make install, with --if-built): installs
# libplugin_XFERK.so, built by `make nixl`, into the directory NIXL loads
# plugins from when NIXL_PLUGIN_DIR is not set: "plugins" next to
# libnixl.so. Which NIXL:
#
#   NIXL_PLUGIN_DIR  that directory itself
#   NIXL_PREFIX      a NIXL installed there (meson install): its libnixl.so
#   otherwise        the nixl Python package python3 imports (its
#                    libnixl.so), else the libnixl.so ldconfig knows
#
# The plugin is built against the NIXL of `make nixl` (NIXL_SRC_DIR): where
# the NIXL found has its headers installed, its backend interface headers
# must be the same bytes (plugin/xferk_interface.h), else nothing is
# installed; the plugin makes the same check when NIXL loads it (NIXL's
# plugin API version does not change with that interface). DESTDIR is
# prepended.
# --if-built (make install): exit 0 with a note when the plugin is not
# built, no NIXL is found or its interface differs; without it those fail.
set -euo pipefail
XFERK_SRC=$(cd "$(dirname "$0")/../.." && pwd)
XFERK_BUILD=${XFERK_BUILD:-$XFERK_SRC/build}
plugin=$(realpath -m "$XFERK_BUILD/nixl/libplugin_XFERK.so")
interface=$(realpath -m "$XFERK_BUILD/nixl/interface")
interface_tool=$(realpath -m "$XFERK_BUILD/nixl/interface_tool")
if_built=0
[ "${1:-}" = --if-built ] && if_built=1
log() { printf '[xferk-nixl-install] %s\n' "$*" >&2; }
give_up() {
	log "$*"
	[ "$if_built" = 1 ] && exit 0
	exit 1
}

[ -e "$plugin" ] && [ -e "$interface" ] && [ -x "$interface_tool" ] ||
	give_up "no $plugin: run 'make nixl' first (the NIXL plugin is not installed)"

# The libnixl.so of the NIXL to install into, if any.
find_libnixl() {
	local f
	if [ -n "${NIXL_PREFIX:-}" ]; then
		{ find "$NIXL_PREFIX" -name libnixl.so 2>/dev/null || true; } | head -n1
		return
	fi
	f=$(python3 - 2>/dev/null <<'EOT' || true
import glob, os
import nixl
d = os.path.dirname(os.path.dirname(nixl.__file__))
hits = [h for p in ("nixl*", ".nixl*", "*nixl*.libs")
        for h in glob.glob(os.path.join(d, p, "**", "libnixl.so"), recursive=True)]
print(hits[0] if hits else "")
EOT
)
	[ -n "$f" ] && { echo "$f"; return; }
	# awk reads it all: an early exit would fail the pipe (SIGPIPE).
	{ ldconfig -p 2>/dev/null || true; } | awk '$1 == "libnixl.so" && !found { print $NF; found = 1 }'
}

if [ -n "${NIXL_PLUGIN_DIR:-}" ]; then
	dir=$NIXL_PLUGIN_DIR
	log "note: NIXL_PLUGIN_DIR names no NIXL: its backend interface cannot be compared"
	log "with the one the plugin was built for"
else
	libnixl=$(find_libnixl)
	[ -n "$libnixl" ] ||
		give_up "no NIXL found (set NIXL_PREFIX or NIXL_PLUGIN_DIR): the NIXL plugin is not installed"
	dir=$(dirname "$libnixl")/plugins
	# The headers of that install, found as the plugin finds them when it
	# is loaded (plugin/xferk_interface.h): exit 3 if it has none.
	real=$(realpath -e "$libnixl") || give_up "cannot resolve $libnixl: the NIXL plugin is not installed"
	rc=0
	found=$("$interface_tool" --lib "$real" 2>/dev/null) || rc=$?
	if [ "$rc" = 3 ]; then
		log "note: the NIXL whose plugins go to $dir has no headers installed: its backend"
		log "interface cannot be compared with the one the plugin was built for"
	elif [ "$rc" != 0 ] || [ "$found" != "$(cat "$interface")" ]; then
		give_up "the NIXL of $libnixl has another backend interface than the one the" \
			"plugin was built for: the plugin is not installed"
	fi
fi
install -d "${DESTDIR:-}$dir"
install -m 0755 "$plugin" "${DESTDIR:-}$dir/libplugin_XFERK.so"
log "installed ${DESTDIR:-}$dir/libplugin_XFERK.so"
