#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The Python package keeps to what its pyproject.toml promises
# (requires-python >= 3.9): every file of it (package, tests, examples)
# parses with ast's Python 3.9 grammar check (feature_version=(3, 9): match
# statements, for one, are refused), compiles under every Python 3.9 or
# later this host has (/usr/bin/python3.*, and pyenv's if any), and the
# package imports under each. Exit 0 pass, 1 fail, 77 without python3 or
# without a Python 3.9 to check under.
set -u
SRC=${XFERK_SRC:-}
if [ -z "$SRC" ]; then
	# tests/unit/ in the sources, or build/tests/unit/ once built
	SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	while [ "$SRC" != / ] && [ ! -f "$SRC/libxferk/python/pyproject.toml" ]; do
		SRC=$(dirname "$SRC")
	done
fi
PKG=$SRC/libxferk/python
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
grep -q '^requires-python = ">=3.9"' "$PKG/pyproject.toml" ||
	{ echo "pyproject.toml no longer says requires-python >= 3.9"; exit 1; }
rc=0
PYTHONDONTWRITEBYTECODE=1 python3 - "$PKG" <<'PY' || rc=1
import ast, glob, sys
bad = 0
for f in sorted(glob.glob(sys.argv[1] + "/**/*.py", recursive=True)):
    try:
        ast.parse(open(f).read(), f, feature_version=(3, 9))
    except SyntaxError as e:
        print(f"{f}: not Python 3.9: {e}")
        bad = 1
sys.exit(bad)
PY
have39=0
for py in /usr/bin/python3.* "$HOME"/.pyenv/versions/3.*/bin/python3; do
	case $py in *-config) continue ;; esac
	[ -x "$py" ] || continue
	"$py" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null || continue
	"$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 9))' && have39=1
	if PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$PKG "$py" - "$PKG" 2>/tmp/python_compat.$$ <<'PY'; then
import glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/**/*.py", recursive=True)):
    compile(open(f).read(), f, "exec")
import xferk
PY
		echo "$py: compiles and imports"
	else
		echo "$py: does not compile or import:"; cat /tmp/python_compat.$$; rc=1
	fi
	rm -f /tmp/python_compat.$$
done
if [ "$rc" = 0 ] && [ "$have39" = 0 ]; then
	echo "SKIP: no Python 3.9 interpreter to check under (the grammar check passed)"
	exit 77
fi
exit $rc
