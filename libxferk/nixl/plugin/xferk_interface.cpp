// SPDX-License-Identifier: Apache-2.0
#include "xferk_interface.h"

#include <fstream>
#include <iterator>

namespace {
// The headers NIXL installs for a backend, relative to its include directory.
const char *const interface_headers[] = {"backend/backend_engine.h", "backend/backend_aux.h",
                                         "backend/backend_plugin.h", "nixl_types.h",
                                         "nixl_descriptors.h"};
} // namespace

const char *const xferk_interface_marker = interface_headers[0];

bool
xferk_interface_fingerprint(const std::filesystem::path &include_dir, uint64_t &fp) {
    fp = 0xcbf29ce484222325ULL;
    for (const char *name : interface_headers) {
        std::ifstream f(include_dir / name, std::ios::binary);
        if (!f) return false;
        for (std::istreambuf_iterator<char> it(f), end; it != end; ++it)
            fp = (fp ^ static_cast<unsigned char>(*it)) * 0x100000001b3ULL;
        if (f.bad()) return false;
    }
    return true;
}
