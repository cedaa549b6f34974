#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The Python package's constants (libxferk/python/xferk/_lib.py, the
# section "constants of uapi/xferk.h") are the headers' values: each NAME
# there must have an XFERK_NAME in uapi/xferk.h or libxferk.h, and the C
# compiler must see the same value. Exit 0 pass, 1 fail (each mismatch
# named), 77 without python3 or cc.
#
# Regression: ABI_VERSION stayed 8 while the header went to 12.
set -u
SRC=${XFERK_SRC:-}
if [ -z "$SRC" ]; then
	SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	while [ "$SRC" != / ] && [ ! -f "$SRC/uapi/xferk.h" ]; do
		SRC=$(dirname "$SRC")
	done
fi
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
command -v cc >/dev/null || { echo "SKIP: no cc"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# name value, one a line, as the package defines them
PYTHONDONTWRITEBYTECODE=1 python3 - "$SRC/libxferk/python/xferk/_lib.py" \
	>"$TMP/py" <<'PY' || exit 1
import re, sys
text = open(sys.argv[1]).read()
start = text.index("# --- constants of uapi/xferk.h")
end = text.index("\nu8, u32, s32, u64", start)
values = {}
exec(text[start:end], {}, values)
for name, value in values.items():
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
        print(name, value)
PY
[ -s "$TMP/py" ] || { echo "no constants found in _lib.py"; exit 1; }

{
	echo '#include <stdio.h>'
	echo '#include "xferk.h"'
	echo '#include "libxferk.h"'
	echo 'int main(void)'
	echo '{'
	while read -r name _; do
		printf '#ifdef XFERK_%s\n' "$name"
		printf '\tprintf("%%s %%llu\\n", "%s", (unsigned long long)(XFERK_%s));\n' \
			"$name" "$name"
		printf '#else\n\tprintf("%%s none\\n", "%s");\n#endif\n' "$name"
	done <"$TMP/py"
	echo '	return 0;'
	echo '}'
} >"$TMP/c.c"
cc -I"$SRC/uapi" -I"$SRC/libxferk" -o "$TMP/c" "$TMP/c.c" || exit 1
"$TMP/c" >"$TMP/c.out" || exit 1

rc=0
while read -r name pyval && read -r cname cval <&3; do
	[ "$name" = "$cname" ] || { echo "internal: $name vs $cname"; exit 1; }
	if [ "$cval" = none ]; then
		echo "FAIL: $name: no XFERK_$name in uapi/xferk.h or libxferk.h"
		rc=1
	elif [ "$pyval" != "$cval" ]; then
		echo "FAIL: $name is $pyval in _lib.py, $cval in the headers"
		rc=1
	fi
done <"$TMP/py" 3<"$TMP/c.out"
[ $rc -eq 0 ] && echo "$(wc -l <"$TMP/py") constants match the headers"
exit $rc
