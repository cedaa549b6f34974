// SPDX-License-Identifier: Apache-2.0
// Prints the fingerprint of a NIXL backend interface as the C++ source
// that defines xferk_interface_built:
//   xferk_interface_tool DIR...        the headers in DIR... (meson.build
//                                      builds the plugin with the output)
//   xferk_interface_tool --lib LIBNIXL the headers of the install of
//                                      LIBNIXL (install.sh compares the
//                                      output with the plugin's)
// Exit 1 if a header cannot be read, 3 if LIBNIXL's install has none.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include "xferk_interface.h"

int
main(int argc, char **argv) {
    std::vector<std::filesystem::path> dirs(argv + 1, argv + argc);
    uint64_t fp;

    if (argc == 3 && !strcmp(argv[1], "--lib")) {
        dirs = {xferk_interface_include_dir(argv[2])};
        if (dirs[0].empty()) return 3;
    }
    if (dirs.empty()) {
        fprintf(stderr, "usage: %s DIR... | --lib LIBNIXL\n", argv[0]);
        return 2;
    }
    if (!xferk_interface_fingerprint(dirs, fp)) {
        fprintf(stderr, "%s: cannot read NIXL's backend headers\n", argv[0]);
        return 1;
    }
    printf("#include \"xferk_interface.h\"\n"
           "const uint64_t xferk_interface_built = 0x%016" PRIx64 "ULL;\n", fp);
    return 0;
}
