#!/usr/bin/env bash
# Man page lint over man/*.[0-9] (host check of make check):
#  - mandoc -T lint -W warning: any warning or error fails (style-level
#    messages are below -W warning and not shown; none is ignored);
#  - groff -ww -man -z, and -mandoc as man(1) runs it: any output fails;
#  - every function of libxferk/libxferk.h and libxferk/xferk_uring.h is
#    named in the NAME section of exactly one page of section 3 (so
#    `make install` can link it there), with its prototype in that page's
#    SYNOPSIS as the header declares it (whitespace aside).
# Exit 77 (skip) without mandoc or groff.
set -uo pipefail
cd "$(dirname "$0")/.."

for tool in mandoc groff; do
	command -v "$tool" >/dev/null || {
		echo "manlint: $tool is not installed (apt-get install mandoc groff): skipped"
		exit 77
	}
done

pages=$(ls man/*.[0-9] 2>/dev/null)
[ -n "$pages" ] || { echo "manlint: no man/*.[0-9]"; exit 1; }
fail=0
bad() { echo "$*"; fail=1; }

for p in $pages; do
	out=$(mandoc -T lint -W warning "$p" 2>&1)
	[ -z "$out" ] || bad "$out"
	for m in man mandoc; do
		out=$(groff -ww -"$m" -z "$p" 2>&1)
		[ -z "$out" ] || bad "$(sed "s|^|$p (groff -$m): |" <<<"$out")"
	done
done

# The prototypes of a header, one a line, whitespace collapsed.
prototypes() {
	awk '/^(static inline )?[a-z][a-z0-9_ ]*[ *](xferk_|io_uring_prep_xferk_)[a-z0-9_]*\(/ { p = ""; in_p = 1 }
	     in_p { p = p " " $0; if ($0 ~ /\)[ ;]*$/) { print p; in_p = 0 } }' "$1" |
		sed -e 's/static inline //' -e 's/;[[:space:]]*$//' |
		tr -s ' \t' '  ' | sed -e 's/^ //' -e 's/ $//' -e 's/( /(/g'
}
# The rendered SYNOPSIS of a page, on one line.
synopsis() {
	mandoc -T ascii "$1" | sed 's/.\x08//g' |
		sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' | tr -s ' \t\n' '   '
}

names3=$(for p in man/*.3; do tools/man-names.sh "$p" | sed "s|\$| $p|"; done)
dups=$(awk '{print $1}' <<<"$names3" | sort | uniq -d)
[ -z "$dups" ] || bad "manlint: named by more than one page: $dups"
for h in libxferk/libxferk.h libxferk/xferk_uring.h; do
	while IFS= read -r proto; do
		fn=$(sed -E 's/^.*[ *]([a-z0-9_]+)\(.*/\1/' <<<"$proto")
		page=$(awk -v f="$fn" '$1 == f {print $2}' <<<"$names3" | head -n1)
		if [ -z "$page" ]; then
			bad "manlint: $fn ($h) is in no man page's NAME"
		elif ! synopsis "$page" | grep -qF -- "$proto;"; then
			bad "manlint: $page: SYNOPSIS lacks \"$proto;\" ($h)"
		fi
	done < <(prototypes "$h")
done

n=$(wc -w <<<"$pages")
if [ "$fail" -ne 0 ]; then
	echo "manlint: FAIL ($n pages)"
	exit 1
fi
echo "manlint: $n pages clean (mandoc -W warning, groff -ww), $(wc -l <<<"$names3") names"
