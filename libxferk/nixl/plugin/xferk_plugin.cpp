// SPDX-License-Identifier: Apache-2.0
// libplugin_XFERK.so: the entry points NIXL's plugin manager looks up.
#include <dlfcn.h>
#include <link.h>
#include <cstdint>
#include <filesystem>
#include <string>
#include "backend/backend_plugin.h"
#include "xferk_backend.h"
#include "xferk_interface.h"

namespace {
// The libnixl.so that loads the plugin is found by its soname; the include
// directory of its install, if it has one, must hold the interface the
// plugin was built with, byte for byte (xferk_interface.h). A NIXL without
// headers (a wheel) cannot be compared: the plugin loads and says so.
bool
interface_matches() {
    void *nixl = dlopen("libnixl.so", RTLD_NOW | RTLD_NOLOAD);
    struct link_map *map = nullptr;
    if (!nixl || dlinfo(nixl, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name[0]) {
        if (nixl) dlclose(nixl);
        NIXL_WARN << "XFERK: libnixl.so not found in the process: its backend interface "
                     "is not checked";
        return true;
    }
    std::string name = map->l_name;
    dlclose(nixl);
    std::error_code ec;
    std::filesystem::path lib = std::filesystem::canonical(name, ec);
    if (ec) {
        NIXL_WARN << "XFERK: cannot resolve " << name << " (" << ec.message()
                  << "): its backend interface is not checked";
        return true;
    }
    std::filesystem::path include = xferk_interface_include_dir(lib);
    uint64_t fp;
    if (include.empty()) {
        NIXL_WARN << "XFERK: no headers next to " << lib.string() << ": its backend "
                  << "interface is not checked";
        return true;
    }
    if (xferk_interface_fingerprint({include}, fp) && fp == xferk_interface_built) return true;
    NIXL_ERROR << "XFERK: the NIXL of " << lib.string() << " has another backend interface ("
               << include.string() << ") than the one this plugin was built for: rebuild "
               << "the plugin against it";
    return false;
}

// Backend parameters (nixl_agent.create_backend("XFERK", params)):
//   ip_addr          this host's address (IPv4 or IPv6) for xferk and the
//                    control channel: one device, no rails
//   devices          the RDMA devices to use, by name or address,
//                    comma separated: the first carries the sessions and
//                    the control channel, the others are rails
//                    (default: NIXL_XFERK_IP_ADDR if set, else the devices
//                    nearest the current CUDA device or the process's NUMA
//                    node, xferk_topo.h); not with ip_addr
//   rails            how many of them a remote region is reached through,
//                    1 to XFERK_MAX_RAILS (8); 0 (default): all
//   drain_budget_ms  how long releaseReqH() drains a cancelled op before it
//                    reports it quarantined (default 100)
//   qps              RC QPs each path of a session this engine opens has,
//                    1 to XFERK_MAX_QPS (8); 0 (default): the module's
//                    qps_per_session. A session that exists is shared as
//                    it is.
//   ctrl_port        the TCP port of the control channel's listener;
//                    0 (default): an ephemeral one
nixl_b_params_t
xferk_options() {
    return {{"ip_addr", ""}, {"devices", ""}, {"rails", "0"}, {"drain_budget_ms", "100"},
            {"qps", "0"}, {"ctrl_port", "0"}};
}
} // namespace

// VRAM_SEG: what an engine can offer; each offers it only where the CUDA
// driver exports dma-bufs (XferkEngine::getSupportedMems()).
extern "C" NIXL_PLUGIN_EXPORT nixlBackendPlugin *
nixl_plugin_init() {
    if (!interface_matches()) return nullptr;
    return nixlBackendPluginCreator<XferkEngine>::create(
        NIXL_PLUGIN_API_VERSION, "XFERK", "0.1.0", xferk_options(), {DRAM_SEG, VRAM_SEG});
}

extern "C" NIXL_PLUGIN_EXPORT void
nixl_plugin_fini() {}
