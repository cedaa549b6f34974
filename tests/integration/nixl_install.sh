#!/bin/bash
# The NIXL plugin as `make nixl-install` installs it (libxferk/nixl/install.sh):
# into a copy of the NIXL of `make nixl` (a meson install, NIXL_PREFIX), the
# plugin lands in "plugins" next to its libnixl.so, and NIXL, with
# NIXL_PLUGIN_DIR unset, lists XFERK among its plugins and creates the
# backend, which moves 1 MiB. When that NIXL's backend interface header
# changes, the installed plugin refuses to load (NIXL's createBackend
# fails, the plugin says why), and a new install puts nothing there
# (exit 1); with --if-built and no NIXL found, the install is skipped with
# exit 0.
set -u
# shellcheck source=tests/nixl/env.sh
. "$XFERK_SRC/tests/nixl/env.sh"
stock_only "the install is the same on any kernel"
need_python_modules numpy
export XFERK_BUILD
prefix=$(mktemp -d /tmp/nixl-prefix.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cp -a "$NIXL_CACHE/nixl/." "$prefix/"
rm -f "$prefix"/lib/*/plugins/libplugin_XFERK.so
libdir=$(dirname "$(find "$prefix" -name libnixl.so | head -n1)")
rc=0

unset NIXL_PLUGIN_DIR
if ! NIXL_PREFIX=$prefix "$XFERK_SRC/libxferk/nixl/install.sh"; then
	echo "install.sh failed"
	exit 1
fi
[ -e "$libdir/plugins/libplugin_XFERK.so" ] || { echo "not installed in $libdir/plugins"; exit 1; }

cd /tmp || exit 1
LD_LIBRARY_PATH=$libdir:$XFERK_BUILD/lib \
PYTHONPATH=$NIXL_SRC/src/bindings/python/nixl-meta:$(find "$prefix" -type d -name dist-packages | head -n1) \
/usr/bin/python3 - <<'EOT' || rc=1
import os, uuid
import numpy as np
from nixl._api import nixl_agent, nixl_agent_config

assert "NIXL_PLUGIN_DIR" not in os.environ
a = nixl_agent(str(uuid.uuid4()), nixl_agent_config(backends=[]))
plugins = a.get_plugin_list()
print("plugins found without NIXL_PLUGIN_DIR:", plugins)
assert "XFERK" in plugins, "XFERK is not among them"
a.create_backend("XFERK")
src = np.arange(1 << 20, dtype=np.uint8)
dst = np.zeros(1 << 20, np.uint8)
a.register_memory([(src.ctypes.data, src.nbytes, 0, ""), (dst.ctypes.data, dst.nbytes, 0, "")], "DRAM")
h = a.initialize_xfer("WRITE", a.get_xfer_descs([(src.ctypes.data, src.nbytes, 0)], "DRAM"),
                      a.get_xfer_descs([(dst.ctypes.data, dst.nbytes, 0)], "DRAM"), a.name)
state = a.transfer(h)
while state == "PROC":
    state = a.check_xfer_state(h)
a.release_xfer_handle(h)
print("local WRITE through the installed plugin:", state)
assert state == "DONE" and np.array_equal(src, dst), "the transfer failed"
EOT

# Another backend interface: the plugin refuses to load into it.
echo "// another interface" >>"$prefix/include/backend/backend_engine.h"
err=$prefix/guard.err
python_dir=$(find "$prefix" -type d -name dist-packages | head -n1)
# NIXL's package of this build (nixl_cu12), without the meta package's torch.
backend=$(find "$python_dir" -maxdepth 1 -type d -name 'nixl_cu*' -printf '%f\n' | head -n1)
LD_LIBRARY_PATH=$libdir:$XFERK_BUILD/lib PYTHONPATH=$python_dir \
/usr/bin/python3 - "$backend" 2>"$err" <<'EOT' || rc=1
import importlib, sys, uuid
api = importlib.import_module(sys.argv[1] + "._api")
nixl_agent, nixl_agent_config = api.nixl_agent, api.nixl_agent_config

a = nixl_agent(str(uuid.uuid4()), nixl_agent_config(backends=[]))
try:
    a.create_backend("XFERK")
except Exception as e:
    print("createBackend with another backend interface:", type(e).__name__)
else:
    raise SystemExit("the plugin loaded into a NIXL with another backend_engine.h")
EOT
grep -q "XFERK: the NIXL of .* has another backend interface" "$err" ||
	{ echo "the plugin did not say why it refused:"; cat "$err"; rc=1; }

# ... and nothing is installed there.
rm -f "$libdir/plugins/libplugin_XFERK.so"
if NIXL_PREFIX=$prefix "$XFERK_SRC/libxferk/nixl/install.sh"; then
	echo "installed into a NIXL with another backend_engine.h"
	rc=1
fi
[ ! -e "$libdir/plugins/libplugin_XFERK.so" ] || { echo "a plugin was installed anyway"; rc=1; }

# make install's call: no NIXL is no failure.
empty=$prefix/empty
mkdir -p "$empty"
NIXL_PREFIX=$empty "$XFERK_SRC/libxferk/nixl/install.sh" --if-built ||
	{ echo "--if-built failed without a NIXL"; rc=1; }
if NIXL_PREFIX=$empty "$XFERK_SRC/libxferk/nixl/install.sh" 2>/dev/null; then
	echo "nixl-install succeeded without a NIXL"
	rc=1
fi
exit $rc
