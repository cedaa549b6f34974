// SPDX-License-Identifier: Apache-2.0
// xferk_interface_tool INCLUDE_DIR: prints the fingerprint of the NIXL
// backend interface in INCLUDE_DIR as the C++ source that defines
// xferk_interface_built (meson.build builds the plugin with it; install.sh
// compares it with the plugin's). Exit 1 if a header cannot be read.
#include <cinttypes>
#include <cstdio>
#include "xferk_interface.h"

int
main(int argc, char **argv) {
    uint64_t fp;

    if (argc != 2) {
        fprintf(stderr, "usage: %s INCLUDE_DIR\n", argv[0]);
        return 2;
    }
    if (!xferk_interface_fingerprint(argv[1], fp)) {
        fprintf(stderr, "%s: cannot read NIXL's backend headers in %s\n", argv[0], argv[1]);
        return 1;
    }
    printf("#include \"xferk_interface.h\"\n"
           "const uint64_t xferk_interface_built = 0x%016" PRIx64 "ULL;\n", fp);
    return 0;
}
