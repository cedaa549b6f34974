// SPDX-License-Identifier: Apache-2.0
// libplugin_XFERK.so: the entry points NIXL's plugin manager looks up.
#include "backend/backend_plugin.h"
#include "xferk_backend.h"

namespace {
// Backend parameters (nixl_agent.create_backend("XFERK", params)):
//   ip_addr          this host's address for xferk and the control channel
//                    (default: NIXL_XFERK_IP_ADDR, else the first IPv4
//                    address of an interface that is up, not loopback)
//   drain_budget_ms  how long releaseReqH() drains a cancelled op before it
//                    reports it quarantined (default 100)
//   qps              RC QPs each path of a session this engine opens has,
//                    1 to XFERK_MAX_QPS (8); 0 (default): the module's
//                    qps_per_session. A session that exists is shared as
//                    it is.
nixl_b_params_t
xferk_options() {
    return {{"ip_addr", ""}, {"drain_budget_ms", "100"}, {"qps", "0"}};
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
