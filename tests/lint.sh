#!/usr/bin/env bash
# Kernel coding style: checkpatch.pl --strict (from linux-source-6.1) over
# the module, the uAPI header, the KUnit suites and the reproductions
# (tests/repro/). Any error, warning or check fails.
source "$(dirname "$0")/vm/lib.sh"
prepare_checkpatch
cd "$XFERK_SRC"

checkpatch() {
	perl "$CHECKPATCH" --no-tree --terse --strict --show-types \
		--ignore SPDX_LICENSE_TAG,FILE_PATH_CHANGES "$@"
}

out=$( {
	# Table macros take constant command numbers: reuse is harmless.
	checkpatch --ignore MACRO_ARG_REUSE -f $(ls kmod/*.[ch] tests/kunit/*.[ch] tests/repro/*.c |
		grep -v -e '\.mod\.c$' -e '^kmod/trace\.h$')
	# TRACE_EVENT()'s layout, as in the kernel's own trace headers.
	checkpatch --ignore OPEN_ENDED_LINE,PARENTHESIS_ALIGNMENT -f kmod/trace.h
	# uAPI headers cannot use BIT_ULL().
	checkpatch --ignore BIT_MACRO -f uapi/*.h
} 2>&1)
bad=$(grep -v '^total: 0 errors, 0 warnings, 0 checks' <<<"$out" || true)
if [ -n "$bad" ]; then
	echo "$bad"
	exit 1
fi
echo "checkpatch: clean"
