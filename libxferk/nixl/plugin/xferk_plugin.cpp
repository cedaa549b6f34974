// SPDX-License-Identifier: Apache-2.0
// libplugin_XFERK.so: the entry points NIXL's plugin manager looks up.
#include "backend/backend_plugin.h"
#include "xferk_backend.h"

namespace {
// Backend parameters (nixl_agent.create_backend("XFERK", params)):
//   ip_addr          this host's address for xferk and the control channel:
//                    one device, no rails
//   devices          the RDMA devices to use, by name or IPv4 address,
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
nixl_b_params_t
xferk_options() {
    return {{"ip_addr", ""}, {"devices", ""}, {"rails", "0"}, {"drain_budget_ms", "100"},
            {"qps", "0"}};
}
} // namespace

// VRAM_SEG: what an engine can offer; each offers it only where the CUDA
// driver exports dma-bufs (XferkEngine::getSupportedMems()).
extern "C" NIXL_PLUGIN_EXPORT nixlBackendPlugin *
nixl_plugin_init() {
    return nixlBackendPluginCreator<XferkEngine>::create(
        NIXL_PLUGIN_API_VERSION, "XFERK", "0.1.0", xferk_options(), {DRAM_SEG, VRAM_SEG});
}

extern "C" NIXL_PLUGIN_EXPORT void
nixl_plugin_fini() {}
