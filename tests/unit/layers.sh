#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The module's layers (kmod/xferk.h describes them), checked on its sources:
#
#  - every kmod/*.c and kmod/*.h has a layer in the table below: a new file
#    must be placed, a file that is gone must leave the table;
#  - a file's #include "..." name headers of its own layer or lower ones.
#    Today's upward includes are listed below, one a line with why: an
#    upward include not listed fails, and so does a listed one that no
#    longer occurs, so the list only shrinks as the layers are decoupled;
#  - no kmod/*.c over 900 lines and no kmod/*.h over 400, except the files
#    listed below, which fail once they are within the limit (the list
#    only shrinks too).
#
# Exit 0 when all of it holds; 1 with what is wrong, one line each.
set -u

# Layers, top to bottom: a file may include its own layer's headers and
# those of the layers below it.
LAYERS=(front requests sessions transport bottom uapi)

layer_table() {
	cat <<'EOF'
front      main.c uarg.c uring.c sysfs.c debugfs.c limits.c op_ioctl.c
front      conn_query.c group_ioctl.c notify_ioctl.c export_ioctl.c
front      front.h limits.h uring.h uring_compat.h
requests   op.c op_submit.c op_cancel.c group.c export.c evq.c ready.c
requests   op.h op_internal.h export.h evq.h ready.h
sessions   conn.c conn_post.c conn_timer.c conn_lookup.c conn_path.c
sessions   conn_connect.c conn_handshake.c
sessions   revoke.c notify.c rail.c remote.c queue.c fence.c
sessions   conn.h conn_internal.h notify.h rail.h remote.h queue.h fence.h
sessions   revoke.h chunk.h
transport  rdma.c rdma_cm.c rdma_dev.c rdma_mr.c rdma_msg.c rdma_post.c
transport  nullpeer.c
transport  rdma.h transport.h path.h
bottom     lifecycle.c sched.c handle.c frag.c conn_state.c region.c stats.c
bottom     trace.c region_dmabuf.c
bottom     lifecycle.h sched.h handle.h frag.h conn_state.h region.h stats.h
bottom     trace.h wire.h fault.h xferk.h
uapi       ../uapi/xferk.h
EOF
}

# Known upward includes: "file -> header: why". Remove a line once its
# include is gone; never add one.
upward_includes() {
	cat <<'EOF'
EOF
}

# Files over their size limit today: "file: why". Remove a line once the
# file is within the limit; never add one.
big_files() {
	cat <<'EOF'
EOF
}

C_MAX=900
H_MAX=400

src=${XFERK_SRC:-}
if [ -z "$src" ]; then
	# tests/unit/ in the sources, or build/tests/unit/ once installed
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	while [ "$src" != / ] && [ ! -f "$src/kmod/xferk.h" ]; do
		src=$(dirname "$src")
	done
fi
if [ ! -f "$src/kmod/xferk.h" ]; then
	echo "layers: no kmod/xferk.h above $(dirname "${BASH_SOURCE[0]}"); set XFERK_SRC"
	exit 1
fi
cd "$src/kmod" || exit 1

fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

declare -A rank layer_of
i=0
for l in "${LAYERS[@]}"; do
	rank[$l]=$i
	i=$((i + 1))
done

while read -r l files; do
	[ -n "$l" ] || continue
	[ -n "${rank[$l]+x}" ] || { bad "table: unknown layer '$l'"; continue; }
	for f in $files; do
		[ -z "${layer_of[$f]+x}" ] || bad "table: $f is in two layers"
		layer_of[$f]=$l
		[ -e "$f" ] || bad "table: $f is gone; remove it from the layer table"
	done
done < <(layer_table)

files=
for f in *.c *.h; do
	case $f in *.mod.c) continue ;; esac
	[ -e "$f" ] && files="$files $f"
done
for f in $files; do
	[ -n "${layer_of[$f]+x}" ] ||
		bad "$f has no layer: add it to the layer table in tests/unit/layers.sh"
done

declare -A known=() seen=()
while IFS= read -r line; do
	case $line in '#'* | '') continue ;; esac
	key=${line%%:*}
	[ -z "${known[$key]+x}" ] || bad "exceptions: '$key' is listed twice"
	known[$key]=1
done < <(upward_includes)

nincludes=0
for f in $files; do
	[ -n "${layer_of[$f]+x}" ] || continue
	while IFS= read -r h; do
		nincludes=$((nincludes + 1))
		if [ -z "${layer_of[$h]+x}" ]; then
			bad "$f includes \"$h\", which has no layer"
			continue
		fi
		[ "${rank[${layer_of[$h]}]}" -lt "${rank[${layer_of[$f]}]}" ] || continue
		key="$f -> $h"
		if [ -n "${known[$key]+x}" ]; then
			seen[$key]=1
		else
			bad "$f (${layer_of[$f]}) includes $h (${layer_of[$h]}): upward;" \
				"reach the higher layer through a callback instead"
		fi
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done
for key in "${!known[@]}"; do
	[ -n "${seen[$key]+x}" ] ||
		bad "$key no longer occurs: remove it from the known upward includes"
done

declare -A big=()
while IFS= read -r line; do
	[ -n "$line" ] || continue
	big[${line%%:*}]=1
done < <(big_files)
for f in $files; do
	case $f in *.c) max=$C_MAX ;; *) max=$H_MAX ;; esac
	n=$(wc -l < "$f")
	if [ "$n" -gt "$max" ] && [ -z "${big[$f]+x}" ]; then
		bad "$f has $n lines, over $max: split it"
	elif [ "$n" -le "$max" ] && [ -n "${big[$f]+x}" ]; then
		bad "$f has $n lines, within $max: remove it from the files over the limit"
	fi
done
for f in "${!big[@]}"; do
	[ -e "$f" ] || bad "$f is gone: remove it from the files over the limit"
done

if [ "$fail" -ne 0 ]; then
	echo "layers: FAIL"
	exit 1
fi
echo "layers: $(wc -w <<<"$files") files, $nincludes includes," \
	"${#known[@]} known upward, ${#big[@]} known over the size limit: ok"
