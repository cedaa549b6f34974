#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The Python package keeps to what its pyproject.toml promises
# (requires-python >= 3.9): every file of it parses with Python 3.9's
# grammar (ast.parse(feature_version=(3, 9)), which refuses match
# statements, parenthesized context managers and the like), and it imports
# under every Python 3.9 or later this host has (/usr/bin/python3.*, and
# pyenv's if any). Exit 0 pass, 1 fail, 77 without any python3.
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
for py in /usr/bin/python3.* "$HOME"/.pyenv/versions/3.*/bin/python3; do
	case $py in *-config) continue ;; esac
	[ -x "$py" ] || continue
	"$py" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null || continue
	if PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$PKG "$py" -c 'import xferk' 2>/tmp/python_compat.$$; then
		echo "$py: imports"
	else
		echo "$py: does not import:"; cat /tmp/python_compat.$$; rc=1
	fi
	rm -f /tmp/python_compat.$$
done
exit $rc
