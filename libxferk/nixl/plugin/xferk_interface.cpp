// SPDX-License-Identifier: Apache-2.0
#include "xferk_interface.h"

#include <fstream>
#include <iterator>
#include <string>

namespace {
// The headers of a backend's interface with NIXL, relative to an include
// directory: nixlBackendEngine and what it holds and inlines.
const char *const interface_headers[] = {"backend/backend_engine.h", "backend/backend_aux.h",
                                         "backend/backend_plugin.h", "nixl_types.h",
                                         "nixl_descriptors.h", "telemetry_event.h"};
} // namespace

bool
xferk_interface_fingerprint(const std::vector<std::filesystem::path> &dirs, uint64_t &fp) {
    fp = 0xcbf29ce484222325ULL;
    for (const char *name : interface_headers) {
        std::ifstream f;
        for (const std::filesystem::path &d : dirs) {
            f.open(d / name, std::ios::binary);
            if (f) break;
        }
        if (!f) return false;
        for (std::istreambuf_iterator<char> it(f), end; it != end; ++it)
            fp = (fp ^ static_cast<unsigned char>(*it)) * 0x100000001b3ULL;
        if (f.bad()) return false;
    }
    return true;
}

std::filesystem::path
xferk_interface_include_dir(const std::filesystem::path &libnixl) {
    std::filesystem::path dir = libnixl.parent_path(), prefix;
    std::error_code ec;

    if (dir.filename().string().find("-linux-") != std::string::npos)
        dir = dir.parent_path();
    if (dir.filename() != "lib" && dir.filename() != "lib64") return {};
    prefix = dir.parent_path();
    if (!std::filesystem::exists(prefix / "include" / interface_headers[0], ec)) return {};
    return prefix / "include";
}
