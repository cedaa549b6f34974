#!/bin/sh
# The names a man page documents: those of its NAME section, before "\-".
# `make install` links each one but the page's own to the page (.so), so
# that `man xferk_cancel_drain` finds xferk_submit(3); tests/manlint.sh
# checks that every library function is named by some page.
for page in "$@"; do
	sed -n '/^\.SH NAME/,/^\.SH /{/^\.SH /d;p}' "$page" | tr '\n' ' ' |
		sed 's/\\-.*//' | tr ', ' '\n\n' | sed '/^$/d'
done
