// SPDX-License-Identifier: Apache-2.0
// libplugin_XFERK: the NIXL backend engine over libxferk (xferk_backend.h).
#include "xferk_backend.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <ifaddrs.h>
#include <net/if.h>
#include <sched.h>
#include <sstream>
#include <system_error>
#include <thread>
#include <unistd.h>

#include "common/nixl_log.h"

namespace {
constexpr unsigned int kConnectTimeoutMs = 5000;
/* A rail address that could not be connected to is not tried again for
 * this long: each try of an unreachable one waits kConnectTimeoutMs. */
constexpr auto kRailRetry = std::chrono::seconds(30);
constexpr size_t kMaxPendingBytes = 64 << 20; /* notifications held */
constexpr size_t kArrivalCost = 256; /* a held notification's entry */
/* A held notification with no news (its message, an event) this long goes. */
constexpr auto kArrivalTtl = std::chrono::minutes(30);
/* Ops one request may have: far more than the descriptors NIXL can carry. */
constexpr uint32_t kMaxNotifOps = 1u << 24;
constexpr uint64_t kWaitRoundNs = 10ULL * 1000000000ULL;
constexpr uint64_t kRevokeNs = 2ULL * 1000000000ULL; /* disconnect's wait for answers */
/* Exports disconnect() closes at a time: the kernel asks a session's peer
 * about at most XFERK_REVOKES_MAX (16) at once, and forces the rest. */
constexpr size_t kClosers = 16;
constexpr size_t kMaxAgentName = 256; /* in a token request */
/* fence=request: windows per 'W' frame (of at most kWindowPages blocks:
 * under the 1 MiB a frame may have). */
constexpr size_t kFrameWindows = 200;
/* Notifications a 'C' waits for (a request has one), and how long. */
constexpr size_t kCloseTags = 16;
constexpr uint64_t kCloseWaitNs = 2ULL * 1000000000ULL;
/* Closed nonces kept: longer than a 'W' sent twice may take (2 x 20 s);
 * at most this many of all peer hosts'. */
constexpr auto kClosedKeep = std::chrono::seconds(60);
constexpr size_t kClosedNonces = 65536;
/* max_windows_per_peer's largest value: the module's largest
 * max_exports_per_file. */
constexpr unsigned int kMaxWindowsPerPeer = 65535;
constexpr uint32_t kRegionAccess = XFERK_ACCESS_ALL;
constexpr uint32_t kExportAccess = XFERK_ACCESS_REMOTE_READ | XFERK_ACCESS_REMOTE_WRITE;

std::string
param_str(const nixl_b_params_t &params, const char *key) {
    auto it = params.find(key);
    return it == params.end() ? "" : it->second;
}

uint64_t
param_u64(const nixl_b_params_t &params, const char *key, uint64_t dflt) {
    auto it = params.find(key);
    return it == params.end() ? dflt : strtoull(it->second.c_str(), nullptr, 0);
}

// [addr, addr + len) lies in [base, base + size), without overflow.
bool
within(uintptr_t addr, size_t len, uintptr_t base, size_t size) {
    return addr >= base && addr - base <= size && len <= size - (addr - base);
}

uint64_t
random_tag() {
    uint64_t tag = 0;
    while (!tag) {
        xferk_key_t k = xferk_random_key();
        memcpy(&tag, k.data(), sizeof(tag));
    }
    return tag;
}

// Reads a control frame's fields in order; @ok turns false at the first
// that is missing (and stays so).
struct FrameReader {
    const std::string &frame;
    size_t pos = 1; /* past the type */
    bool ok = true;

    template<typename T>
    T
    get() {
        T v{};
        if (!ok || left() < sizeof(T)) {
            ok = false;
            return v;
        }
        memcpy(&v, frame.data() + pos, sizeof(T));
        pos += sizeof(T);
        return v;
    }

    std::string
    bytes(size_t n) {
        if (!ok || left() < n) {
            ok = false;
            return "";
        }
        pos += n;
        return frame.substr(pos - n, n);
    }

    void
    copy(void *to, size_t n) {
        if (!ok || left() < n) {
            ok = false;
            return;
        }
        memcpy(to, frame.data() + pos, n);
        pos += n;
    }

    size_t
    left() const {
        return frame.size() - pos;
    }
};

template<typename T>
void
put(std::string &frame, const T &v) {
    frame.append((const char *)&v, sizeof(v));
}

// The reply that refuses a frame: 'X' and a negative errno (4 bytes).
std::string
refusal(int32_t err) {
    return "X" + std::string((const char *)&err, sizeof(err));
}

// The errno a peer refused a frame with ('X'), as a negative errno; -EPROTO
// for any other reply or a value that is not an errno (only ever printed).
int32_t
refused_with(const std::string &reply) {
    int32_t why = -EPROTO;

    if (reply.size() == 1 + sizeof(why) && reply[0] == 'X') memcpy(&why, reply.data() + 1, sizeof(why));
    return why < 0 && why > -4096 ? why : -EPROTO;
}

// Whether a frame names an agent the way token and window requests must:
// 1 to kMaxAgentName bytes.
bool
agent_name_ok(const std::string &agent) {
    return !agent.empty() && agent.size() <= kMaxAgentName;
}

// A frame of @type, with @agent's name and its length (2 bytes) first.
std::string
named(char type, const std::string &agent) {
    std::string s(1, type);
    put(s, (uint16_t)agent.size());
    return s.append(agent);
}

// The address of @names among @addrs: itself, or the address of the RDMA
// device of that name. nullptr if none.
const XferkAddr *
device_addr(const std::string &name,
            const std::vector<XferkNic> &nics,
            const std::vector<XferkAddr> &addrs) {
    XferkAddr parsed;
    bool is_ip = xferk_parse_ip(name, parsed);
    for (const XferkAddr &a : addrs)
        if (is_ip && a.ip == parsed.ip) return &a;
    for (const XferkNic &n : nics)
        if (n.name == name) return xferk_nic_addr(n, addrs);
    return nullptr;
}

// Whether @ip, from a peer's connection info, names an address one can
// connect to, in canonical spelling (it keys maps).
bool
peer_ip_ok(const std::string &ip) {
    XferkAddr a;
    return xferk_parse_ip(ip, a) && a.ip == ip && xferk_unicast_ip(a);
}

// Is @ip on @a's subnet?
bool
on_subnet(const XferkAddr &a, const std::string &ip) {
    return xferk_addr_on_subnet({a}, ip) != nullptr;
}

// The NUMA node of every CPU this thread may run on, or -1.
int
affinity_node() {
    cpu_set_t set;
    std::vector<int> cpus;

    if (sched_getaffinity(0, sizeof(set), &set)) return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
    return xferk_cpus_node("/sys", cpus);
}

// An unsigned parameter: @dflt if absent; false if it is not a number
// from 0 to @max.
bool
param_uint(const nixl_b_params_t &params, const char *key, unsigned int dflt, unsigned int max,
           unsigned int &out) {
    auto it = params.find(key);
    if (it == params.end() || it->second.empty()) {
        out = dflt;
        return true;
    }
    const char *s = it->second.c_str();
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s < '0' || *s > '9' || *end || errno || v > max) return false;
    out = (unsigned int)v;
    return true;
}
} // namespace

// A region this engine registered. @exports: its export and token for each
// grantee: the address it was made to (a peer host's, or this host's for
// local transfers) and the agent that asked for it; undone at deregister,
// and those of an agent when it is disconnected. @users: request handles
// whose ops may use the region.
struct XferkLocalMD : public nixlBackendMD {
    XferkLocalMD() : nixlBackendMD(true) {}

    uint64_t mr = 0;
    uintptr_t base = 0;
    size_t len = 0;
    xferk_key_t key;
    struct Export {
        uint64_t handle;
        xferk_token token;
    };
    using Grantee = std::pair<std::string, std::string>; /* ip, agent */
    std::map<Grantee, Export> exports; /* one each */
    std::map<std::string, std::set<std::string>> rails_of; /* rail ips by asking peer */
    std::set<XferkReqH *> users;
};

// A remote agent's region (or this agent's own, for local transfers) as
// imported: the remote handle and the address NIXL's descriptors are
// relative to. A region of a fence=request target is not imported
// (@remote 0): each request gets windows over its blocks of it, by @key,
// in the target's @page size.
struct XferkRemoteMD : public nixlBackendMD {
    XferkRemoteMD() : nixlBackendMD(false) {}

    uint64_t remote = 0;
    uintptr_t base = 0;
    size_t len = 0;
    xferk_key_t key;
    uint32_t page = 0;
};

// A transfer: its fragments (fixed at prepXfer), the keys of the local
// regions they use and how many remote handles they name; the windows it
// has on a fence=request target (from prepXfer to releaseReqH); the xferk ops of
// the last post (none: not posted), each with at most XFERK_MAX_FRAGS
// fragments, their group (0: one op, or the fragments name more remote
// handles than a group takes), what each op ended as once reusable
// (NIXL_IN_PROG before),
// why the post could not submit them all (0: it did); what the last
// checkXfer() said, and whether a release was already refused.
struct XferkReqH : public nixlBackendReqH {
    std::vector<xferk_frag> frags;
    std::set<xferk_key_t> regions;
    size_t remotes = 0;
    std::string remote_agent;
    std::vector<uint64_t> ops;
    std::vector<nixl_status_t> outcome;
    uint64_t window_nonce = 0;            /* its windows' (fence=request) */
    std::vector<uint64_t> window_imports; /* their imports, in order */
    uint64_t tag = 0;                     /* the last post's notification */
    uint64_t group = 0;
    int submit_error = 0;
    nixl_status_t last_check = NIXL_ERR_NOT_POSTED;
    bool refused = false;
};

XferkEngine::XferkEngine(const nixlBackendInitParams *init_params)
    : nixlBackendEngine(init_params),
      secret_(xferk_random_key()) {
    const nixl_b_params_t &params = *init_params->customParams;

    drain_budget_ns_ =
        std::clamp<uint64_t>(param_u64(params, "drain_budget_ms", 100), 1, 60000) * 1000000ULL;
    if (!param_uint(params, "qps", 0, XFERK_MAX_QPS, qps_)) {
        NIXL_ERROR << "XFERK: qps: a number from 0 to " << XFERK_MAX_QPS;
        initErr = true;
        return;
    }
    if (!param_uint(params, "rails", 0, XFERK_MAX_RAILS, rails_)) {
        NIXL_ERROR << "XFERK: rails: a number from 0 to " << XFERK_MAX_RAILS;
        initErr = true;
        return;
    }
    if (!rails_) rails_ = XFERK_MAX_RAILS;
    // An engine that creates its backend without parameters (vLLM's) is
    // fenced per request through the environment.
    const char *fence_env = getenv("NIXL_XFERK_FENCE");
    std::string fence = params.count("fence") ? param_str(params, "fence") :
        fence_env                             ? fence_env :
                                                "";
    if (!fence.empty() && fence != "agent" && fence != "request") {
        NIXL_ERROR << "XFERK: fence (or NIXL_XFERK_FENCE): agent or request";
        initErr = true;
        return;
    }
    per_request_ = fence == "request";
    if (!param_uint(params, "max_windows_per_peer", 0, kMaxWindowsPerPeer,
                    max_windows_per_peer_)) {
        NIXL_ERROR << "XFERK: max_windows_per_peer: a number from 0 to " << kMaxWindowsPerPeer;
        initErr = true;
        return;
    }
    unsigned int ctrl_port;
    if (!param_uint(params, "ctrl_port", 0, 65535, ctrl_port)) {
        NIXL_ERROR << "XFERK: ctrl_port: a number from 0 to 65535";
        initErr = true;
        return;
    }
    int ret = xferk_open(&x_);
    if (ret) {
        NIXL_ERROR << "XFERK: cannot open /dev/xferk: " << strerror(-ret);
        initErr = true;
        return;
    }
    if (per_request_ && !(xferk_features(x_) & XFERK_FEAT_WINDOW_EDGES)) {
        NIXL_ERROR << "XFERK: fence=request: the xferk module has no XFERK_FEAT_WINDOW_EDGES"
                   << " (windows over memory that is not page-aligned)";
        initErr = true;
        return;
    }
    // A host without the driver is a DRAM host; one whose driver cannot
    // export dma-bufs is a GPU host that cannot have VRAM_SEG: say why.
    if (!cuda_.usable() && cuda_.loaded())
        NIXL_WARN << "XFERK: VRAM_SEG not offered: " << cuda_.why();
    else if (!cuda_.usable())
        NIXL_INFO << "XFERK: VRAM_SEG not offered: " << cuda_.why();
    std::string why;
    if (!choose_devices(params, why)) {
        NIXL_ERROR << "XFERK: " << why;
        initErr = true;
        return;
    }
    server_ = std::make_unique<XferkCtrlServer>(
        ip_, (uint16_t)ctrl_port, secret_,
        [this](const std::string &frame, const std::string &peer_ip) {
            return handle_ctrl(frame, peer_ip);
        });
    if (!server_->port()) {
        NIXL_ERROR << "XFERK: no control listener on " << ip_ << " port " << ctrl_port << ": "
                   << strerror(server_->error());
        initErr = true;
        return;
    }
    try {
        worker_ = std::thread([this] { work(); });
    }
    catch (const std::system_error &e) {
        NIXL_ERROR << "XFERK: no worker thread: " << e.what();
        initErr = true;
    }
}

XferkEngine::~XferkEngine() {
    if (worker_.joinable()) {
        {
            std::lock_guard<std::mutex> guard(tasks_lock_);
            tasks_stop_ = true;
        }
        tasks_cv_.notify_one();
        worker_.join();
    }
    server_.reset();
    // Closing the file never unpins early: the kernel keeps every page an
    // op may still touch pinned until the op is physically complete.
    if (x_) xferk_close(x_);
}

// The devices this engine uses: ip_addr; else devices; else
// NIXL_XFERK_IP_ADDR; else the devices nearest the current CUDA device or
// the NUMA node of this thread's CPUs (xferk_topo.h); else, with no RDMA
// device in sysfs, the first address that is up and not loopback (IPv4
// before IPv6). The first carries the sessions and the control channel; of
// the others, the first on each further subnet is a rail (routing cannot
// tell two devices of one subnet apart). False, with @why, if a parameter
// names no device or no address.
bool
XferkEngine::choose_devices(const nixl_b_params_t &params, std::string &why) {
    std::string ip = param_str(params, "ip_addr"), devices = param_str(params, "devices");
    std::vector<XferkAddr> addrs = xferk_host_addrs(), chosen;
    std::vector<XferkNic> nics = xferk_scan_nics("/sys");
    const char *env = getenv("NIXL_XFERK_IP_ADDR");
    bool named = !devices.empty();

    if (!ip.empty() && named) {
        why = "ip_addr and devices exclude each other";
        return false;
    }
    if (!ip.empty() || (!named && env && *env)) {
        XferkAddr a;
        if (!xferk_parse_ip(!ip.empty() ? ip : env, a) || !xferk_unicast_ip(a)) {
            why = (!ip.empty() ? "ip_addr: " + ip : std::string("NIXL_XFERK_IP_ADDR: ") + env) +
                ": not a unicast IPv4 or IPv6 address peers can reach";
            return false;
        }
        ip_ = a.ip;
        return true;
    }
    if (named) {
        for (const std::string &d : xferk_split(devices, ',')) {
            const XferkAddr *a = device_addr(d, nics, addrs);
            if (!a) {
                why = "devices: " + d +
                    ": neither an address of this host that is up nor an RDMA device with one";
                return false;
            }
            chosen.push_back(*a);
        }
    } else {
        std::string gpu = xferk_pci_path("/sys", cuda_.current_pci_bus_id());
        for (const XferkNic &n : xferk_nearest_nics(nics, addrs, gpu, affinity_node()))
            chosen.push_back(*xferk_nic_addr(n, addrs));
        if (chosen.empty() && !addrs.empty()) chosen.push_back(addrs[0]);
    }
    if (chosen.empty()) {
        why = "no RDMA device with an address that is up (set devices or ip_addr)";
        return false;
    }
    ip_ = chosen[0].ip;
    for (size_t i = 1; i < chosen.size(); i++) {
        bool shared = on_subnet(chosen[i], ip_);
        for (const XferkAddr &r : rail_addrs_)
            shared |= on_subnet(chosen[i], r.ip);
        if (shared && named) {
            why = "devices: " + chosen[i].ip + " shares a subnet with another device";
            return false;
        }
        if (!shared && rail_addrs_.size() + 1 < XFERK_MAX_RAILS) rail_addrs_.push_back(chosen[i]);
    }
    return true;
}

bool
XferkEngine::conn_to(const std::string &ip, uint64_t &conn) const {
    {
        std::lock_guard<std::mutex> guard(lock_);
        auto it = conns_.find(ip);
        if (it != conns_.end()) {
            conn = it->second;
            return true;
        }
    }
    int ret = xferk_connect_qps(x_, ip.c_str(), 0, kConnectTimeoutMs, qps_, &conn);
    if (ret) {
        NIXL_ERROR << "XFERK: connect to " << ip << ": " << strerror(-ret);
        return false;
    }
    std::lock_guard<std::mutex> guard(lock_);
    auto res = conns_.emplace(ip, conn);
    if (!res.second) {
        // Another thread connected first: use its connection.
        xferk_disconnect(x_, conn);
        conn = res.first->second;
    }
    return true;
}

// conn_to() for a rail's address, unless a connect to it failed within
// kRailRetry: a request whose rail cannot be reached goes without it at
// once instead of waiting for the connect's timeout again.
bool
XferkEngine::rail_conn(const std::string &ip, uint64_t &conn) const {
    auto now = std::chrono::steady_clock::now();
    {
        std::lock_guard<std::mutex> guard(lock_);
        auto it = rail_down_.find(ip);
        if (it != rail_down_.end() && now < it->second) return false;
    }
    bool up = conn_to(ip, conn);
    std::lock_guard<std::mutex> guard(lock_);
    // Addresses whose wait was over when this call began are forgotten,
    // so the map holds the rails that failed within about kRailRetry of
    // the last connect; one that connected now is up, whatever another
    // thread's connect to it found meanwhile.
    for (auto it = rail_down_.begin(); it != rail_down_.end();)
        it = now < it->second ? std::next(it) : rail_down_.erase(it);
    if (up)
        rail_down_.erase(ip);
    else
        rail_down_[ip] = std::chrono::steady_clock::now() + kRailRetry;
    return up;
}

// GPU memory (VRAM_SEG) is registered as a dma-buf region: the CUDA
// driver exports the page-aligned range around it (xferk_cuda.h).
int
XferkEngine::register_vram(const nixlBlobDesc &mem, uint64_t &mr) const {
    std::string why;
    uint64_t offset = 0;
    int fd = -1;

    int ret = cuda_.dmabuf_of(mem.addr, mem.len, fd, offset, why);
    if (ret) {
        NIXL_ERROR << "XFERK: VRAM at 0x" << std::hex << mem.addr << std::dec << " (device "
                   << mem.devId << "): " << why;
        return ret;
    }
    ret = xferk_mr_reg_dmabuf(x_, fd, offset, mem.len, kRegionAccess, &mr);
    close(fd); /* the region holds the dma-buf */
    return ret;
}

nixl_status_t
XferkEngine::registerMem(const nixlBlobDesc &mem, const nixl_mem_t &nixl_mem, nixlBackendMD *&out) {
    if ((nixl_mem != DRAM_SEG && nixl_mem != VRAM_SEG) || !mem.len)
        return NIXL_ERR_NOT_SUPPORTED;
    if (nixl_mem == VRAM_SEG && !cuda_.usable()) {
        NIXL_ERROR << "XFERK: VRAM registration: " << cuda_.why();
        return NIXL_ERR_NOT_SUPPORTED;
    }
    auto md = std::make_unique<XferkLocalMD>();
    int ret = nixl_mem == VRAM_SEG ?
        register_vram(mem, md->mr) :
        xferk_mr_reg(x_, (void *)mem.addr, mem.len, kRegionAccess, &md->mr);
    if (ret) {
        NIXL_ERROR << "XFERK: register " << mem.len << " bytes: " << strerror(-ret);
        if (ret == -EOPNOTSUPP || ret == -ENODEV) return NIXL_ERR_NOT_SUPPORTED;
        return ret == -EINVAL || ret == -EFAULT ? NIXL_ERR_INVALID_PARAM : NIXL_ERR_BACKEND;
    }
    md->base = mem.addr;
    md->len = mem.len;
    md->key = xferk_random_key();
    std::lock_guard<std::mutex> guard(lock_);
    regions_[md->key] = md.get();
    out = md.release();
    return NIXL_SUCCESS;
}

// Refuses while an op that may use the region is not physically complete:
// the caller may not free or reuse the memory yet.
nixl_status_t
XferkEngine::deregisterMem(nixlBackendMD *meta) {
    auto *md = dynamic_cast<XferkLocalMD *>(meta);
    std::vector<uint64_t> ops;

    if (!md) return NIXL_ERR_INVALID_PARAM;
    {
        std::lock_guard<std::mutex> guard(lock_);
        for (XferkReqH *req : md->users)
            ops.insert(ops.end(), req->ops.begin(), req->ops.end());
    }
    // NIXL's agent drops the region whatever this returns: wait instead of
    // refusing (NIXL excludes transfers on this agent meanwhile).
    for (uint64_t op : ops)
        wait_reusable(op);
    std::vector<uint64_t> handles;
    std::unique_lock<std::mutex> guard(lock_);
    for (XferkReqH *req : md->users)
        req->regions.erase(md->key);
    regions_.erase(md->key);
    for (auto r = window_reqs_.begin(); r != window_reqs_.end();) {
        auto &windows = r->second.windows;
        for (auto w = windows.begin(); w != windows.end();) {
            if (w->second != md->key) {
                ++w;
                continue;
            }
            handles.push_back(w->first);
            w = windows.erase(w);
        }
        r = windows.empty() ? window_reqs_.erase(r) : std::next(r);
    }
    guard.unlock();
    for (const auto &e : md->exports)
        handles.push_back(e.second.handle);
    for (uint64_t h : handles)
        xferk_unexport(x_, h);
    int ret = xferk_mr_dereg(x_, md->mr);
    delete md;
    return ret ? NIXL_ERR_BACKEND : NIXL_SUCCESS;
}

nixl_status_t
XferkEngine::getPublicData(const nixlBackendMD *meta, std::string &str) const {
    auto *md = dynamic_cast<const XferkLocalMD *>(meta);
    if (!md) return NIXL_ERR_INVALID_PARAM;
    str = xferk_hex(md->key.data(), md->key.size());
    return NIXL_SUCCESS;
}

// "ip port secret [rail,rail...]": the rails are the addresses of the
// engine's other devices (an engine without them sends three fields).
nixl_status_t
XferkEngine::getConnInfo(std::string &str) const {
    str = ip_ + " " + std::to_string(server_->port()) + " " +
        xferk_hex(secret_.data(), secret_.size());
    for (size_t i = 0; i < rail_addrs_.size(); i++)
        str += (i ? "," : " ") + rail_addrs_[i].ip;
    return NIXL_SUCCESS;
}

nixl_status_t
XferkEngine::loadRemoteConnInfo(const std::string &remote_agent,
                                const std::string &remote_conn_info) {
    std::istringstream in(remote_conn_info);
    std::string ip, secret_hex, rails, extra;
    unsigned int port = 0;
    xferk_key_t secret;

    if (!(in >> ip >> port >> secret_hex) || !peer_ip_ok(ip) || port == 0 ||
        port > 65535 || secret_hex.size() != 32 ||
        !xferk_unhex(secret_hex, secret.data(), secret.size()))
        return NIXL_ERR_INVALID_PARAM;
    in >> rails;
    if (in >> extra) return NIXL_ERR_INVALID_PARAM;
    auto peer = std::make_shared<Peer>();
    peer->ip = ip;
    peer->rails = xferk_split(rails, ',');
    if (peer->rails.size() >= XFERK_MAX_RAILS ||
        !std::all_of(peer->rails.begin(), peer->rails.end(), peer_ip_ok))
        return NIXL_ERR_INVALID_PARAM;
    peer->closes.open(ip, (uint16_t)port, secret, false);
    if (!peer->ctrl.open(ip, (uint16_t)port, secret)) {
        NIXL_ERROR << "XFERK: control connection to " << remote_agent << " at " << ip << ":"
                   << port << " failed";
        return NIXL_ERR_BACKEND;
    }
    std::lock_guard<std::mutex> guard(lock_);
    peers_[remote_agent] = std::move(peer);
    return NIXL_SUCCESS;
}

nixl_status_t
XferkEngine::connect(const std::string &remote_agent) {
    uint64_t conn;

    if (remote_agent == localAgent) return conn_to(ip_, conn) ? NIXL_SUCCESS : NIXL_ERR_BACKEND;
    std::lock_guard<std::mutex> guard(lock_);
    return peers_.count(remote_agent) ? NIXL_SUCCESS : NIXL_ERR_NOT_FOUND;
}

nixl_status_t
XferkEngine::disconnect(const std::string &remote_agent) {
    std::vector<uint64_t> handles;
    {
        std::lock_guard<std::mutex> guard(lock_);
        peers_.erase(remote_agent);
        auto busy = exporting_.find(remote_agent);
        if (busy != exporting_.end()) busy->second.disconnects++;
        for (auto &r : regions_) {
            auto &exports = r.second->exports;
            for (auto e = exports.begin(); e != exports.end();) {
                if (e->first.second != remote_agent) {
                    ++e;
                    continue;
                }
                handles.push_back(e->second.handle);
                e = exports.erase(e);
            }
        }
        for (auto r = window_reqs_.begin(); r != window_reqs_.end();) {
            if (r->second.grantee.second != remote_agent) {
                ++r;
                continue;
            }
            for (const auto &w : r->second.windows)
                handles.push_back(w.first);
            r = window_reqs_.erase(r);
        }
    }
    close_handles(handles, remote_agent);
    return NIXL_SUCCESS;
}

// Closes exports and windows of @agent's, as xferk_window_close() does:
// once it returns, no access through them can land. One deadline for all,
// kClosers at a time: bounded by kRevokeNs, plus the invalidations. A
// helper thread that cannot be made leaves its share to the others (this
// one at least).
void
XferkEngine::close_handles(const std::vector<uint64_t> &handles, const std::string &agent) const {
    uint64_t deadline = xferk_now_ns() + kRevokeNs;
    std::atomic<size_t> next{0};
    auto close_some = [&] {
        for (size_t i; (i = next++) < handles.size();) {
            int ret = xferk_window_close(x_, handles[i], deadline, nullptr, nullptr);
            if (ret)
                NIXL_WARN << "XFERK: closing an export of " << agent << ": " << strerror(-ret);
        }
    };
    std::vector<std::thread> closers;
    try {
        for (size_t t = 1; t < std::min(handles.size(), kClosers); t++)
            closers.emplace_back(close_some);
    }
    catch (const std::system_error &) {
    }
    close_some();
    for (std::thread &t : closers)
        t.join();
}

// A control frame from a peer (listener thread). 'E': export a region the
// peer presents the key of, to the host the request came from, for the
// agent the frame names; with fence=request, only the page size is
// answered ('P'), and 'W' and 'C' open and close windows instead.
std::string
XferkEngine::handle_ctrl(const std::string &frame, const std::string &peer_ip) {
    xferk_key_t key;
    xferk_token tok;
    int32_t err = -EINVAL;
    if (frame[0] == 'M') {
        uint64_t tag;
        uint32_t ops;
        uint16_t namelen;
        if (frame.size() >= 15) {
            memcpy(&tag, frame.data() + 1, 8);
            memcpy(&ops, frame.data() + 9, 4);
            memcpy(&namelen, frame.data() + 13, 2);
        }
        if (frame.size() < 15 || frame.size() < 15u + namelen || (tag && !ops) ||
            ops > kMaxNotifOps)
            err = -EINVAL;
        else if (!arrive_msg(tag, frame.substr(15, namelen), frame.substr(15 + namelen), ops))
            err = -ENOBUFS;
        else
            return "A";
    } else if (frame[0] == 'W') {
        return open_windows(frame, peer_ip);
    } else if (frame[0] == 'C') {
        return close_windows(frame, peer_ip);
    } else if (frame[0] == 'E' && frame.size() >= 1 + key.size() && per_request_) {
        std::string agent = frame.substr(1 + key.size());
        uint32_t page = sysconf(_SC_PAGESIZE);
        memcpy(key.data(), frame.data() + 1, key.size());
        std::lock_guard<std::mutex> guard(lock_);
        if (!agent_name_ok(agent))
            err = -EINVAL;
        else if (!regions_.count(key))
            err = -ENOENT;
        else
            return "P" + std::string((const char *)&page, sizeof(page));
    } else if (frame[0] == 'E' && frame.size() >= 1 + key.size()) {
        memcpy(key.data(), frame.data() + 1, key.size());
        err = export_region(key, peer_ip, frame.substr(1 + key.size()), tok);
    } else if (frame[0] == 'R' && per_request_) {
        err = -EPERM;
    } else if (frame[0] == 'R' && frame.size() > 1 + key.size()) {
        std::string rest = frame.substr(1 + key.size());
        size_t nul = rest.find('\0');
        memcpy(key.data(), frame.data() + 1, key.size());
        err = rail_export(key, rest.substr(0, nul),
                          nul == std::string::npos ? "" : rest.substr(nul + 1), peer_ip, tok);
    } else if (frame[0] != 'E' && frame[0] != 'R') {
        return ""; /* unknown: ignored */
    }
    if (!err) return "T" + std::string((const char *)tok.bytes, sizeof(tok.bytes));
    return refusal(err);
}

// The token of the region with @key for @agent at the host at @ip: one
// export per region and grantee, made at the first request. 0 or a
// negative errno: -EINVAL for no agent (a plugin before per-agent exports)
// or a name longer than kMaxAgentName, -EACCES when disconnect() of @agent
// came while the export was being made.
int
XferkEngine::export_region(const xferk_key_t &key, const std::string &ip, const std::string &agent,
                           xferk_token &tok) {
    const XferkLocalMD::Grantee grantee(ip, agent);
    uint64_t mr = 0, len = 0, exp, disconnects;

    if (!agent_name_ok(agent)) return -EINVAL;
    {
        std::lock_guard<std::mutex> guard(lock_);
        auto it = regions_.find(key);
        if (it == regions_.end()) return -ENOENT;
        auto e = it->second->exports.find(grantee);
        if (e != it->second->exports.end()) {
            tok = e->second.token;
            return 0;
        }
        mr = it->second->mr;
        len = it->second->len;
        disconnects = begin_export(agent);
    }
    int ret = on_conn(ip, [&](uint64_t conn) {
        return xferk_export(x_, conn, mr, 0, len, kExportAccess, &tok, &exp);
    });
    std::unique_lock<std::mutex> guard(lock_);
    bool revoked = end_export(agent, disconnects);
    if (ret) return ret;
    auto it = regions_.find(key);
    if (revoked || it == regions_.end() || it->second->exports.count(grantee)) {
        // Revoked, deregistered, or exported by another thread meanwhile.
        guard.unlock();
        xferk_unexport(x_, exp);
        if (revoked) return -EACCES;
        return it == regions_.end() ? -ENOENT : export_region(key, ip, agent, tok);
    }
    it->second->exports[grantee] = {exp, tok};
    return 0;
}

// An export or windows for @agent are being made: what end_export() needs
// to tell whether disconnect() of @agent came meanwhile. With lock_.
uint64_t
XferkEngine::begin_export(const std::string &agent) {
    Exporting &busy = exporting_[agent];
    busy.calls++;
    return busy.disconnects;
}

// The export begin_export() announced is made or failed: whether @agent
// was disconnected meanwhile (then it must be undone). With lock_.
bool
XferkEngine::end_export(const std::string &agent, uint64_t disconnects) {
    auto busy = exporting_.find(agent);
    bool revoked = busy->second.disconnects != disconnects;
    if (!--busy->second.calls) exporting_.erase(busy);
    return revoked;
}

// Calls @fn with the connection to @ip, and once more with a new one if
// that one failed (-ENOTCONN or -ESTALE, and the connection is not up, or
// its handle is gone): what @fn returns, or -ENOTCONN.
int
XferkEngine::on_conn(const std::string &ip, const std::function<int(uint64_t conn)> &fn) const {
    int ret = -ENOTCONN;
    uint64_t conn = 0;

    for (int attempt = 0; attempt < 2 && (ret == -ENOTCONN || ret == -ESTALE); attempt++) {
        xferk_conn_info info;
        // ESTALE may be another handle's (a region deregistered meanwhile):
        // a connection that is up stays.
        if (attempt && conn && !xferk_conn_query(x_, conn, &info) &&
            info.state == XFERK_CONN_STATE_UP)
            break;
        if (attempt && conn) forget_conn(ip, conn);
        conn = 0;
        ret = conn_to(ip, conn) ? fn(conn) : -ENOTCONN;
    }
    return ret;
}

// 'W' (fence=request): windows for a request of the agent the frame names,
// at the host it came from, each over blocks of one region. Frame: 'W',
// name length (2 bytes), name, the request's nonce (8), the frame's index
// among the request's (4), access (4: XFERK_ACCESS_REMOTE_READ for a READ,
// _WRITE for a WRITE), windows (4), then per window the region's key
// (16), blocks (4) and each block's offset in the region and length (8
// each), and, for a rail, the peer's address on it (2 bytes of length,
// the address: windows made to it, on one of our rails' subnets, at most
// XFERK_MAX_RAILS - 1 such per peer host among its live requests, else -E2BIG). Reply:
// 'V' and each window's token, or 'X' errno (-EINVAL:
// malformed; -ESTALE: a 'C' closed the nonce already; -EEXIST: the nonce
// is another grantee's; -ENOENT: a region is not registered; -EMFILE:
// the peer host would hold more than max_windows_per_peer; -EACCES:
// disconnect() of the agent came meanwhile; what
// xferk_window_open() says). A frame's windows all open or none do; a
// frame sent again gets the same reply, and 'C' closes the request's.
std::string
XferkEngine::open_windows(const std::string &frame, const std::string &peer_ip) {
    struct Ask {
        xferk_key_t key;
        uint64_t mr = 0;
        std::vector<xferk_block> blocks;
    };
    FrameReader in{frame};
    std::string agent = in.bytes(in.get<uint16_t>());
    uint64_t nonce = in.get<uint64_t>();
    uint32_t index = in.get<uint32_t>(), access = in.get<uint32_t>(), nwin = in.get<uint32_t>();
    const std::pair<std::string, std::string> grantee(peer_ip, agent);
    std::vector<Ask> asks;
    std::vector<std::pair<uint64_t, xferk_token>> opened; /* handle, token */
    uint64_t disconnects;

    if (!in.ok || !agent_name_ok(agent) || !nwin ||
        nwin > kFrameWindows || !access || (access & ~kExportAccess))
        return refusal(-EINVAL);
    asks.resize(nwin);
    for (Ask &a : asks) {
        in.copy(a.key.data(), a.key.size());
        uint32_t n = in.get<uint32_t>();
        if (!in.ok || !n || n > XFERK_WINDOW_MAX_BLOCKS || in.left() / 16 < n)
            return refusal(-EINVAL);
        a.blocks.resize(n);
        for (xferk_block &b : a.blocks) {
            b.offset = in.get<uint64_t>();
            b.len = in.get<uint64_t>();
        }
    }
    // For a rail: the peer's address on it, which the windows are made to.
    std::string to = in.left() ? in.bytes(in.get<uint16_t>()) : peer_ip;
    if (!in.ok || in.left()) return refusal(-EINVAL);
    if (to != peer_ip) {
        int ret = rail_addr_ok(to);
        if (ret) return refusal(ret);
    }
    {
        std::lock_guard<std::mutex> guard(lock_);
        if (was_closed(peer_ip, nonce)) return refusal(-ESTALE);
        auto r = window_reqs_.find(nonce);
        if (r != window_reqs_.end() && r->second.grantee != grantee) return refusal(-EEXIST);
        if (r != window_reqs_.end() && r->second.replies.count(index))
            return r->second.replies[index];
        for (Ask &a : asks) {
            auto it = regions_.find(a.key);
            if (it == regions_.end()) return refusal(-ENOENT);
            a.mr = it->second->mr;
        }
        if (!windows_fit(peer_ip, asks.size())) return refusal(-EMFILE);
        if (!rail_fits(peer_ip, to)) return refusal(-E2BIG);
        disconnects = begin_export(agent);
    }
    auto undo = [&] {
        for (const auto &o : opened)
            xferk_unexport(x_, o.first);
        opened.clear();
    };
    int err = on_conn(to, [&](uint64_t conn) {
        for (const Ask &a : asks) {
            uint64_t handle;
            xferk_token tok;
            int ret = xferk_window_open(x_, conn, a.mr, a.blocks.data(), a.blocks.size(),
                                        access, &tok, &handle, nullptr);
            if (ret) {
                undo();
                return ret;
            }
            opened.emplace_back(handle, tok);
        }
        return 0;
    });
    std::unique_lock<std::mutex> guard(lock_);
    bool revoked = end_export(agent, disconnects);
    bool gone = std::any_of(asks.begin(), asks.end(),
                            [&](const Ask &a) { return !regions_.count(a.key); });
    auto r = window_reqs_.find(nonce);
    bool taken = r != window_reqs_.end() &&
        (r->second.grantee != grantee || r->second.replies.count(index));
    bool full = !windows_fit(peer_ip, opened.size());
    if (!err && (revoked || gone || taken || full)) {
        guard.unlock();
        undo();
        err = revoked ? -EACCES : gone ? -ENOENT : taken ? -EEXIST : -EMFILE;
    }
    if (err) return refusal(err);
    WindowReq &req = window_reqs_[nonce];
    std::string reply = "V";
    req.grantee = grantee;
    if (to != peer_ip) req.rails.insert(to);
    for (size_t i = 0; i < asks.size(); i++) {
        req.windows.emplace_back(opened[i].first, asks[i].key);
        reply.append((const char *)opened[i].second.bytes, sizeof(opened[i].second.bytes));
    }
    return req.replies[index] = reply;
}

// Takes xferk's events: the DATA event of each op that carried a
// notification to this engine (arrive_data()).
void
XferkEngine::take_events() const {
    xferk_event ev[64];
    uint32_t n;
    uint64_t dropped;

    while (!xferk_events(x_, ev, 64, xferk_now_ns(), &n, &dropped) && n) {
        if (dropped) NIXL_ERROR << "XFERK: " << dropped << " notifications dropped (queue full)";
        for (uint32_t i = 0; i < n; i++)
            if (ev[i].type == XFERK_EVENT_DATA)
                arrive_data(ev[i].tag, ev[i].flags & XFERK_EVENT_INCOMPLETE);
    }
}

// Whether every op of each notification from @agent that @tags names has
// had its DATA event, or the notification will not be delivered anyway
// (its message was refused, or it is gone: delivered, dropped or expired).
// Another agent's notifications are not waited for.
bool
XferkEngine::notes_in(const std::string &agent, const std::vector<uint64_t> &tags) const {
    std::lock_guard<std::mutex> guard(lock_);
    return std::all_of(tags.begin(), tags.end(), [&](uint64_t tag) {
        auto it = arrivals_.find(tag);
        return it == arrivals_.end() || !it->second.have_msg || it->second.agent != agent ||
            it->second.ended >= it->second.ops;
    });
}

// 'C' (fence=request): closes the windows of a request. Frame: 'C', name
// length (2), name, the request's nonce (8), tags (4, at most kCloseTags),
// each tag (8): the request's notifications. Answered 'A' at once (or 'X'
// -EINVAL); the worker closes the windows (finish_close()). The nonce is
// remembered, so that a 'W' of it that comes later opens nothing. A nonce
// of another grantee's, or unknown, closes nothing.
std::string
XferkEngine::close_windows(const std::string &frame, const std::string &peer_ip) {
    FrameReader in{frame};
    std::string agent = in.bytes(in.get<uint16_t>());
    uint64_t nonce = in.get<uint64_t>();
    uint32_t n = in.get<uint32_t>();
    Task task;

    if (!in.ok || n > kCloseTags || in.left() != n * sizeof(uint64_t)) return refusal(-EINVAL);
    while (n--)
        task.tags.push_back(in.get<uint64_t>());
    {
        std::lock_guard<std::mutex> guard(lock_);
        // A nonce named before is closing already: one close each.
        if (!note_closed(peer_ip, nonce)) return "A";
        auto r = window_reqs_.find(nonce);
        if (r == window_reqs_.end() || r->second.grantee != std::make_pair(peer_ip, agent))
            return "A";
    }
    task.agent = agent;
    task.nonce = nonce;
    queue_task(std::move(task));
    return "A";
}

// Whether the agents at @peer_ip may hold @more windows besides theirs
// (max_windows_per_peer). With lock_.
bool
XferkEngine::windows_fit(const std::string &peer_ip, size_t more) const {
    size_t held = 0;

    if (!max_windows_per_peer_) return true;
    for (const auto &r : window_reqs_)
        if (r.second.grantee.first == peer_ip) held += r.second.windows.size();
    return held + more <= max_windows_per_peer_;
}

// Whether the live requests of @peer_ip may have windows made to @to as
// well: at most XFERK_MAX_RAILS - 1 rail addresses per peer host among
// its live requests (rail_export()'s bound, per region and peer host,
// counts every address ever asked for, unlike this one). With lock_.
bool
XferkEngine::rail_fits(const std::string &peer_ip, const std::string &to) const {
    std::set<std::string> rails;

    if (to == peer_ip) return true;
    rails.insert(to);
    for (const auto &r : window_reqs_)
        if (r.second.grantee.first == peer_ip)
            rails.insert(r.second.rails.begin(), r.second.rails.end());
    return rails.size() < XFERK_MAX_RAILS;
}

// Whether a 'C' from @peer_ip named @nonce within kClosedKeep. With lock_.
bool
XferkEngine::was_closed(const std::string &peer_ip, uint64_t nonce) const {
    auto it = closed_.find(peer_ip);
    return it != closed_.end() && it->second.nonces.count(nonce);
}

// Remembers that a 'C' from @peer_ip named @nonce; false if one did
// already. Forgets every host's nonces older than kClosedKeep; past
// kClosedNonces in all, the oldest of the host that holds the most: a
// host's 'C' frames push out its own nonces before any other host's.
// With lock_.
bool
XferkEngine::note_closed(const std::string &peer_ip, uint64_t nonce) {
    auto now = std::chrono::steady_clock::now();
    size_t held = 0;

    if (was_closed(peer_ip, nonce)) return false;
    for (auto it = closed_.begin(); it != closed_.end();) {
        ClosedNonces &c = it->second;
        while (!c.order.empty() && now - c.order.front().second > kClosedKeep) {
            c.nonces.erase(c.order.front().first);
            c.order.pop_front();
        }
        held += c.order.size();
        it = c.order.empty() ? closed_.erase(it) : std::next(it);
    }
    if (held >= kClosedNonces) {
        auto most = std::max_element(closed_.begin(), closed_.end(), [](const auto &x, const auto &y) {
            return x.second.order.size() < y.second.order.size();
        });
        most->second.nonces.erase(most->second.order.front().first);
        most->second.order.pop_front();
        if (most->second.order.empty()) closed_.erase(most);
    }
    ClosedNonces &mine = closed_[peer_ip];
    mine.nonces.insert(nonce);
    mine.order.emplace_back(nonce, now);
    return true;
}

// The worker's close of a request's windows (close_windows()): first, for
// at most kCloseWaitNs, until every op of its notifications has had its
// DATA event (the initiator sent 'C' once its ops were complete, so the
// events are on their way, and a closed window's events are dropped); then
// as disconnect() closes. Windows that disconnect() or deregisterMem()
// took meanwhile are theirs.
void
XferkEngine::finish_close(const Task &task) {
    std::vector<uint64_t> handles;

    {
        std::lock_guard<std::mutex> guard(lock_);
        if (!window_reqs_.count(task.nonce)) return; /* taken meanwhile */
    }
    for (uint64_t until = xferk_now_ns() + kCloseWaitNs;
         !notes_in(task.agent, task.tags) && xferk_now_ns() < until;) {
        take_events();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    {
        std::lock_guard<std::mutex> guard(lock_);
        auto r = window_reqs_.find(task.nonce);
        if (r != window_reqs_.end()) {
            for (const auto &w : r->second.windows)
                handles.push_back(w.first);
            window_reqs_.erase(r);
        }
    }
    close_handles(handles, task.agent);
}

// A rail's export of the region with @key to @ip, for @agent at the peer
// at @peer_ip: @ip must be a canonical address on one of our rails'
// subnets (this host's own when the peer is on it), and the peer gets at
// most XFERK_MAX_RAILS - 1 such addresses per region. 0 or a negative
// errno.
int
XferkEngine::rail_export(const xferk_key_t &key, const std::string &ip, const std::string &agent,
                         const std::string &peer_ip, xferk_token &tok) {
    int ret = rail_addr_ok(ip);

    if (ret) return ret;
    {
        std::lock_guard<std::mutex> guard(lock_);
        auto it = regions_.find(key);
        if (it == regions_.end()) return -ENOENT;
        std::set<std::string> &rails = it->second->rails_of[peer_ip];
        if (!rails.count(ip) && rails.size() + 1 >= XFERK_MAX_RAILS) return -E2BIG;
        rails.insert(ip);
    }
    return export_region(key, ip, agent, tok);
}

// Whether a peer may have a rail's export or windows made to @ip: a
// canonical address on one of our rails' subnets. 0, -EINVAL or
// -EADDRNOTAVAIL.
int
XferkEngine::rail_addr_ok(const std::string &ip) const {
    if (!xferk_canonical_ip(ip)) return -EINVAL;
    for (const XferkAddr &r : rail_addrs_)
        if (on_subnet(r, ip)) return 0;
    return -EADDRNOTAVAIL;
}

// Drops @conn, the connection to @ip that failed for good, and its handle:
// the next call connects again (sharing the session if it still lives).
// Nothing if another thread replaced it already.
void
XferkEngine::forget_conn(const std::string &ip, uint64_t conn) const {
    {
        std::lock_guard<std::mutex> guard(lock_);
        auto it = conns_.find(ip);
        if (it == conns_.end() || it->second != conn) return; /* replaced already */
        conns_.erase(it);
    }
    xferk_disconnect(x_, conn);
}

nixl_status_t
XferkEngine::import_region(const std::string &ip,
                           const xferk_token &token,
                           uintptr_t base,
                           size_t len,
                           nixlBackendMD *&output) {
    auto md = std::make_unique<XferkRemoteMD>();
    int ret = on_conn(ip, [&](uint64_t conn) { return xferk_import(x_, conn, &token, &md->remote); });

    if (ret) {
        NIXL_ERROR << "XFERK: import: " << strerror(-ret);
        return NIXL_ERR_BACKEND;
    }
    md->base = base;
    md->len = len;
    output = md.release();
    return NIXL_SUCCESS;
}

nixl_status_t
XferkEngine::loadRemoteMD(const nixlBlobDesc &input,
                          const nixl_mem_t &nixl_mem,
                          const std::string &remote_agent,
                          nixlBackendMD *&output) {
    std::shared_ptr<Peer> peer = find_peer(remote_agent);
    xferk_key_t key;

    if (nixl_mem != DRAM_SEG && nixl_mem != VRAM_SEG) return NIXL_ERR_NOT_SUPPORTED;
    if (!xferk_unhex(input.metaInfo, key.data(), key.size())) return NIXL_ERR_INVALID_PARAM;
    if (!peer) return NIXL_ERR_NOT_FOUND;
    xferk_token tok;
    int32_t why = 0;
    uint32_t page = 0;
    int err = ask_token(*peer, "E" + std::string(key.begin(), key.end()) + localAgent, true, tok,
                        why, &page);
    if (err == -ENOTCONN) return NIXL_ERR_REMOTE_DISCONNECT;
    if (err) {
        NIXL_ERROR << "XFERK: " << remote_agent << " refused an export: " << strerror(-why);
        return NIXL_ERR_BACKEND;
    }
    if (page) {
        // A fence=request target: windows per request (prep_windows()).
        auto md = std::make_unique<XferkRemoteMD>();
        md->base = input.addr;
        md->len = input.len;
        md->key = key;
        md->page = page;
        output = md.release();
        return NIXL_SUCCESS;
    }
    nixl_status_t ret = import_region(peer->ip, tok, input.addr, input.len, output);
    if (ret == NIXL_SUCCESS)
        import_rails(*peer, key, static_cast<XferkRemoteMD *>(output)->remote);
    return ret;
}

// The token the peer answers @frame with (@again: the call may be made
// twice): 0, -ENOTCONN (no answer) or -EACCES (refused; @why: the errno
// the peer gave, only ever printed, -EPROTO if it is none). With @page, a
// fence=request target's answer is taken too: 0 with its page size there
// (a power of two from 4 KiB to 2 MiB), and no token.
int
XferkEngine::ask_token(Peer &peer, const std::string &frame, bool again, xferk_token &tok,
                       int32_t &why, uint32_t *page) const {
    std::string reply;

    if (!peer.ctrl.call(frame, reply, again)) return -ENOTCONN;
    if (reply.size() == 1 + sizeof(tok.bytes) && reply[0] == 'T') {
        memcpy(tok.bytes, reply.data() + 1, sizeof(tok.bytes));
        return 0;
    }
    if (page && reply.size() == 1 + sizeof(*page) && reply[0] == 'P') {
        memcpy(page, reply.data() + 1, sizeof(*page));
        if (*page >= 4096 && *page <= (2u << 20) && !(*page & (*page - 1))) return 0;
        *page = 0;
    }
    why = refused_with(reply);
    return -EACCES;
}

// Makes the rest of @peer's devices rails of @remote, the import of its
// region @key: for each of our rails (up to rails_ with the first) the
// peer's address on that rail's subnet, if it has one, exports the region
// to our address there, and we import it through the session between the
// two. A rail that cannot be made leaves the region with fewer.
void
XferkEngine::import_rails(Peer &peer, const xferk_key_t &key, uint64_t remote) {
    unsigned int rails = 1;

    for (const auto &[mine, theirs] : rail_pairs(peer)) {
        if (rails >= rails_) break;
        xferk_token tok;
        uint64_t conn;
        int32_t why = 0;
        std::string frame(1, 'R');

        frame.append(key.begin(), key.end());
        frame += mine;
        frame += '\0';
        frame += localAgent;
        // Once: the owner may take up to a connect's timeout to answer.
        int ret = ask_token(peer, frame, false, tok, why);
        if (!ret) ret = conn_to(theirs, conn) ? xferk_import_rail(x_, conn, &tok, remote) : -ENOTCONN;
        if (ret) {
            NIXL_WARN << "XFERK: no rail through " << mine << " to " << theirs << ": "
                      << strerror(why ? -why : -ret);
            continue;
        }
        rails++;
    }
}

// The rails @peer may be reached through besides the first devices: for
// each of our rails, our address and the peer's on that rail's subnet, if
// it has one there (and the first devices are not on it). A caller uses
// at most rails_ - 1 of them: those it can make.
std::vector<std::pair<std::string, std::string>>
XferkEngine::rail_pairs(const Peer &peer) const {
    std::vector<std::pair<std::string, std::string>> pairs;

    for (const XferkAddr &mine : rail_addrs_) {
        auto theirs = std::find_if(peer.rails.begin(), peer.rails.end(),
                                   [&](const std::string &ip) { return on_subnet(mine, ip); });
        if (theirs == peer.rails.end() || on_subnet(mine, peer.ip)) continue;
        pairs.emplace_back(mine.ip, *theirs);
    }
    return pairs;
}

// This agent's own region as the remote side of a local transfer.
nixl_status_t
XferkEngine::loadLocalMD(nixlBackendMD *input, nixlBackendMD *&output) {
    auto *md = dynamic_cast<XferkLocalMD *>(input);
    xferk_token tok;

    if (!md) return NIXL_ERR_INVALID_PARAM;
    int ret = export_region(md->key, ip_, localAgent, tok);
    if (ret) {
        NIXL_ERROR << "XFERK: export: " << strerror(-ret);
        return NIXL_ERR_BACKEND;
    }
    return import_region(ip_, tok, md->base, md->len, output);
}

nixl_status_t
XferkEngine::unloadMD(nixlBackendMD *input) {
    auto *md = dynamic_cast<XferkRemoteMD *>(input);
    if (!md) return NIXL_ERR_INVALID_PARAM;
    if (md->remote) xferk_unimport(x_, md->remote);
    delete md;
    return NIXL_SUCCESS;
}

nixl_status_t
XferkEngine::prepXfer(const nixl_xfer_op_t &operation,
                      const nixl_meta_dlist_t &local,
                      const nixl_meta_dlist_t &remote,
                      const std::string &remote_agent,
                      nixlBackendReqH *&handle,
                      const nixl_opt_b_args_t *opt_args) const {
    if ((operation != NIXL_READ && operation != NIXL_WRITE) || !local.descCount() ||
        local.descCount() != remote.descCount())
        return NIXL_ERR_INVALID_PARAM;
    auto req = std::make_unique<XferkReqH>();
    uint32_t opcode = operation == NIXL_READ ? XFERK_OP_READ : XFERK_OP_WRITE;
    std::vector<int> windowed; /* descriptors of fence=request targets */
    req->remote_agent = remote_agent;
    for (int i = 0; i < local.descCount(); i++) {
        auto *lmd = dynamic_cast<XferkLocalMD *>(local[i].metadataP);
        auto *rmd = dynamic_cast<XferkRemoteMD *>(remote[i].metadataP);
        if (!lmd || !rmd || local[i].len != remote[i].len ||
            !within(local[i].addr, local[i].len, lmd->base, lmd->len) ||
            !within(remote[i].addr, remote[i].len, rmd->base, rmd->len) ||
            (rmd->page && !remote[i].len))
            return NIXL_ERR_INVALID_PARAM;
        req->regions.insert(lmd->key);
        if (rmd->page) {
            windowed.push_back(i);
            continue;
        }
        xferk_frag f = {};
        f.mr = lmd->mr;
        f.offset = local[i].addr - lmd->base;
        f.len = local[i].len;
        f.remote = rmd->remote;
        f.remote_offset = remote[i].addr - rmd->base;
        f.opcode = opcode;
        req->frags.push_back(f);
    }
    if (!windowed.empty()) {
        nixl_status_t ret = prep_windows(req.get(), local, remote, windowed, opcode);
        if (ret != NIXL_SUCCESS) return ret;
    }
    std::set<uint64_t> remotes;
    for (const xferk_frag &f : req->frags)
        remotes.insert(f.remote);
    req->remotes = remotes.size();
    handle = req.release();
    return NIXL_SUCCESS;
}


// The windows of @req's descriptors @descs on a fence=request target: asked
// for in 'W' frames (open_windows()) and imported, and @req's fragments
// over them (a descriptor that two windows share becomes two). On an
// error, whatever was opened is closed again.
nixl_status_t
XferkEngine::prep_windows(XferkReqH *req,
                          const nixl_meta_dlist_t &local,
                          const nixl_meta_dlist_t &remote,
                          const std::vector<int> &descs,
                          uint32_t opcode) const {
    std::map<const XferkRemoteMD *, std::vector<std::pair<uintptr_t, size_t>>> spans;
    std::map<const XferkRemoteMD *, std::vector<XferkWindowPiece>> pieces;
    std::vector<XferkWindowPlan> plan;
    std::vector<const XferkRemoteMD *> region_of; /* each window's */
    std::shared_ptr<Peer> peer = find_peer(req->remote_agent);

    if (!peer) return NIXL_ERR_NOT_FOUND;
    for (int i : descs)
        spans[static_cast<const XferkRemoteMD *>(remote[i].metadataP)].emplace_back(
            remote[i].addr, remote[i].len);
    for (const auto &sp : spans) {
        xferk_plan_windows(sp.first->base, sp.first->len, sp.first->page, sp.second, plan,
                           pieces[sp.first]);
        region_of.resize(plan.size(), sp.first);
    }
    req->window_nonce = random_tag();
    // The frames' windows: each frame's index and, for a rail, the address
    // and rail number are added when it is sent (window_frame()).
    std::vector<WindowFrame> frames;
    for (size_t first = 0; first < plan.size(); first += kFrameWindows) {
        size_t n = std::min(kFrameWindows, plan.size() - first);
        std::string &frame = frames.emplace_back(WindowFrame{n, {}}).body;

        put(frame, opcode == XFERK_OP_READ ? XFERK_ACCESS_REMOTE_READ : XFERK_ACCESS_REMOTE_WRITE);
        put(frame, (uint32_t)n);
        for (size_t w = first; w < first + n; w++) {
            frame.append((const char *)region_of[w]->key.data(), region_of[w]->key.size());
            put(frame, (uint32_t)plan[w].blocks.size());
            for (const xferk_block &b : plan[w].blocks) {
                put(frame, (uint64_t)b.offset);
                put(frame, (uint64_t)b.len);
            }
        }
    }
    for (size_t i = 0; i < frames.size(); i++) {
        std::vector<xferk_token> toks;
        int ret = ask_windows(*peer, window_frame(req->window_nonce, i, frames[i], ""), toks);
        if (ret) {
            NIXL_ERROR << "XFERK: " << req->remote_agent << " refused " << toks.size()
                       << " windows: " << strerror(-ret);
            drop_windows(req);
            return ret == -ENOTCONN ? NIXL_ERR_REMOTE_DISCONNECT : NIXL_ERR_BACKEND;
        }
        for (const xferk_token &t : toks) {
            uint64_t imp;
            ret = on_conn(peer->ip, [&](uint64_t conn) { return xferk_import(x_, conn, &t, &imp); });
            if (ret) {
                NIXL_ERROR << "XFERK: import of a window: " << strerror(-ret);
                drop_windows(req);
                return NIXL_ERR_BACKEND;
            }
            req->window_imports.push_back(imp);
        }
    }
    // Each pair its own rail number, made or not: the target keeps the
    // replies of a failed rail's frames.
    std::vector<std::pair<std::string, std::string>> pairs = rail_pairs(*peer);
    unsigned int rails = 1;
    for (size_t k = 0; k < pairs.size() && rails < rails_; k++)
        rails += rail_windows(req, *peer, pairs[k].first, pairs[k].second, frames, k + 1);
    for (int i : descs) {
        const std::vector<XferkWindowPiece> &ps =
            pieces[static_cast<const XferkRemoteMD *>(remote[i].metadataP)];
        auto *lmd = static_cast<XferkLocalMD *>(local[i].metadataP);
        uintptr_t a = remote[i].addr;
        uint64_t offset = local[i].addr - lmd->base;
        for (size_t left = remote[i].len; left;) {
            const XferkWindowPiece &p = xferk_piece_of(ps, a);
            size_t n = std::min<size_t>(left, p.end - a);
            xferk_frag f = {};
            f.mr = lmd->mr;
            f.offset = offset;
            f.len = n;
            f.remote = req->window_imports[p.win];
            f.remote_offset = p.offset + (a - p.start);
            f.opcode = opcode;
            req->frags.push_back(f);
            a += n;
            offset += n;
            left -= n;
        }
    }
    return NIXL_SUCCESS;
}

// The 'W' frame of request @nonce's frame @index, @windows its access and
// windows; for a rail, @addr is our address on it, and the index says
// which rail (bits 24 and up), since the target keeps each frame's reply.
XferkEngine::WindowFrame
XferkEngine::window_frame(uint64_t nonce, uint32_t index, const WindowFrame &windows,
                          const std::string &addr) const {
    WindowFrame frame{windows.windows, named('W', localAgent)};

    put(frame.body, nonce);
    put(frame.body, index);
    frame.body += windows.body;
    if (!addr.empty()) {
        put(frame.body, (uint16_t)addr.size());
        frame.body += addr;
    }
    return frame;
}

// Asks @peer for the windows of @frame ('W'): their tokens in @toks, in
// order. Sent again once if the call failed: the target answers a frame
// it served again with the same reply. 0, -ENOTCONN (no answer) or why
// the target refused.
int
XferkEngine::ask_windows(Peer &peer, const WindowFrame &frame, std::vector<xferk_token> &toks) const {
    std::string reply;

    toks.resize(frame.windows);
    if (!peer.ctrl.call(frame.body, reply, true)) return -ENOTCONN;
    if (reply.size() != 1 + toks.size() * sizeof(xferk_token::bytes) || reply[0] != 'V')
        return refused_with(reply);
    FrameReader in{reply};
    for (xferk_token &t : toks)
        in.copy(t.bytes, sizeof(t.bytes));
    return 0;
}

// Makes rail number @rail of each of @req's windows: the target opens the
// windows of @frames again on its session with @mine, our address on the
// rail, and we import each as a rail of the window's import through
// @theirs, the target's address there. Whether the rail was made for
// every window: one that fails leaves the rest of the windows without it
// (the target closes what it opened with the request's windows).
bool
XferkEngine::rail_windows(XferkReqH *req, Peer &peer, const std::string &mine,
                          const std::string &theirs, const std::vector<WindowFrame> &frames,
                          uint32_t rail) const {
    size_t w = 0;
    uint64_t conn;
    int ret = 0;

    if (!rail_conn(theirs, conn)) return false;
    for (size_t i = 0; !ret && i < frames.size(); i++) {
        std::vector<xferk_token> toks;
        ret = ask_windows(peer, window_frame(req->window_nonce, i | rail << 24, frames[i], mine),
                          toks);
        for (size_t t = 0; !ret && t < toks.size(); t++)
            ret = xferk_import_rail(x_, conn, &toks[t], req->window_imports[w++]);
    }
    if (ret)
        NIXL_WARN << "XFERK: no rail through " << mine << " to " << theirs
                  << " for a request's windows: " << strerror(-ret);
    return !ret;
}

// Gives @req's windows back: its imports dropped, and the target to be
// asked to close them ('C', by the worker: work()).
void
XferkEngine::drop_windows(XferkReqH *req) const {
    Task task;

    for (uint64_t imp : req->window_imports)
        xferk_unimport(x_, imp);
    req->window_imports.clear();
    if (!req->window_nonce) return;
    task.agent = req->remote_agent;
    task.frame = named('C', localAgent);
    put(task.frame, req->window_nonce);
    put(task.frame, (uint32_t)(req->tag ? 1 : 0));
    if (req->tag) put(task.frame, req->tag);
    req->window_nonce = 0;
    queue_task(std::move(task));
}

void
XferkEngine::queue_task(Task task) const {
    {
        std::lock_guard<std::mutex> guard(tasks_lock_);
        tasks_.push_back(std::move(task));
    }
    tasks_cv_.notify_one();
}

// The worker thread: closes windows (finish_close()) and sends 'C' frames,
// each on a control connection of its own (a 'C' may take seconds: no
// other request's notification waits behind it), sent again once on a new
// connection if the call fails. A target that could not be asked loses
// the rest of its 'C' frames queued (each would wait as long): it closes
// those windows when it disconnects this agent or deregisters the
// regions.
void
XferkEngine::work() {
    std::unique_lock<std::mutex> guard(tasks_lock_);

    for (;;) {
        tasks_cv_.wait(guard, [this] { return tasks_stop_ || !tasks_.empty(); });
        if (tasks_stop_) break;
        Task task = std::move(tasks_.front());
        tasks_.pop_front();
        guard.unlock();
        if (task.frame.empty()) {
            finish_close(task);
            guard.lock();
            continue;
        }
        std::shared_ptr<Peer> peer = find_peer(task.agent);
        std::string reply;
        bool sent = peer && peer->closes.call(task.frame, reply, true) && reply == "A";
        guard.lock();
        if (sent) continue;
        size_t dropped = 1;
        for (auto t = tasks_.begin(); t != tasks_.end();) {
            bool same = !t->frame.empty() && t->agent == task.agent;
            dropped += same;
            t = same ? tasks_.erase(t) : std::next(t);
        }
        NIXL_WARN << "XFERK: " << task.agent << " was not asked to close the windows of "
                  << dropped << " requests";
    }
    if (!tasks_.empty()) NIXL_WARN << "XFERK: " << tasks_.size() << " closes not done";
}

// What a submit's errno means to NIXL.
static nixl_status_t
submit_status(int err) {
    return err == -EINVAL || err == -ERANGE || err == -E2BIG ? NIXL_ERR_INVALID_PARAM :
                                                              NIXL_ERR_BACKEND;
}

// Submits @req's fragments as ops of at most XFERK_MAX_FRAGS fragments
// (fewer where the kernel says E2BIG: too many work requests; the smaller
// size is kept for the ops after), with the notification @tag if @opts
// asks for it. A request of more than one op gets a group for them, made
// before the first (an op joins at submit only), if it names no more
// remote handles than a group takes. Stops at the first error, which it
// returns; the ops submitted before it are in @req->ops.
int
XferkEngine::submit_ops(XferkReqH *req, const xferk_submit_opts &opts, uint64_t tag) const {
    size_t done = 0, total = req->frags.size(), n = XFERK_MAX_FRAGS;
    int ret;

    while (done < total) {
        uint64_t op;

        n = std::min(n, total - done);
        if (!req->group && req->ops.empty() && n < total &&
            req->remotes <= XFERK_GROUP_MAX_TARGETS) {
            ret = xferk_group_create(x_, tag, &req->group, nullptr);
            if (ret) return ret;
        }
        ret = xferk_submit_group(x_, &req->frags[done], n, XFERK_DEADLINE_NONE, &opts,
                                 req->group, tag, &op);
        if (ret == -E2BIG && n > 1) {
            n /= 2;
            continue;
        }
        if (ret) return ret;
        req->ops.push_back(op);
        req->outcome.push_back(NIXL_IN_PROG);
        done += n;
    }
    return 0;
}

nixl_status_t
XferkEngine::postXfer(const nixl_xfer_op_t &operation,
                      const nixl_meta_dlist_t &local,
                      const nixl_meta_dlist_t &remote,
                      const std::string &remote_agent,
                      nixlBackendReqH *&handle,
                      const nixl_opt_b_args_t *opt_args) const {
    auto *req = static_cast<XferkReqH *>(handle);
    bool notif = opt_args && opt_args->hasNotif;
    xferk_submit_opts opts = {};
    uint64_t tag = 0;

    if (!req->ops.empty()) {
        if (!reusable(req)) return NIXL_ERR_REPOST_ACTIVE;
        finish(req);
    }
    req->refused = false;
    if (notif) {
        opts.flags = XFERK_SUBMIT_NOTIFY;
        tag = random_tag();
    }
    req->tag = tag;
    int ret = submit_ops(req, opts, tag);
    if (ret) {
        NIXL_ERROR << "XFERK: submit of " << req->frags.size() << " descriptors, after "
                   << req->ops.size() << " ops: " << strerror(-ret);
        if (req->ops.empty()) {
            finish(req);
            return submit_status(ret);
        }
        // The ops submitted run on (cancelling them now would kill their
        // paths at once); the error is reported once they are reusable
        // (checkXfer()), and releaseReqH() cancels them.
        req->submit_error = ret;
        notif = false;
    }
    {
        std::lock_guard<std::mutex> guard(lock_);
        for (const xferk_key_t &key : req->regions) {
            auto it = regions_.find(key);
            if (it != regions_.end()) it->second->users.insert(req);
        }
    }
    // The message goes to the target's control listener; the target hands
    // it out once xferk's DATA events say the data of every op has landed.
    // One that cannot be sent fails the transfer, once its ops are
    // reusable (the target holds what it may have taken until it
    // expires), with NIXL_ERR_BACKEND: NIXL forgets a peer whose transfer
    // says NIXL_ERR_REMOTE_DISCONNECT, and the peer may well be there.
    if (notif &&
        send_notif(req->remote_agent, tag, req->ops.size(), opt_args->notifMsg) != NIXL_SUCCESS) {
        NIXL_ERROR << "XFERK: notification to " << req->remote_agent
                   << " not sent: the transfer fails";
        req->submit_error = -ENOTCONN;
    }
    return checkXfer(req);
}

// What an op that is reusable ended as, for NIXL.
static nixl_status_t
op_status(const xferk_op_snapshot &snap) {
    switch (snap.state) {
    case XFERK_STATE_SUCCEEDED:
        return NIXL_SUCCESS;
    case XFERK_STATE_DRAINED:
        return NIXL_ERR_CANCELED;
    default:
        return snap.failure == XFERK_FAILURE_PATH ? NIXL_ERR_REMOTE_DISCONNECT : NIXL_ERR_BACKEND;
    }
}

// In progress until every op of the request is reusable; then its first
// error, or success. An error before that only while an op is
// QUARANTINED (its memory must not be reused until releaseReqH()
// succeeds). Ops once seen reusable are not queried again.
nixl_status_t
XferkEngine::checkXfer(nixlBackendReqH *handle) const {
    auto *req = static_cast<XferkReqH *>(handle);
    nixl_status_t status = NIXL_SUCCESS;
    bool busy = false;

    if (req->ops.empty()) return req->last_check = NIXL_ERR_NOT_POSTED;
    for (size_t i = 0; i < req->ops.size(); i++) {
        xferk_op_snapshot snap;

        if (req->outcome[i] == NIXL_IN_PROG) {
            if (xferk_query(x_, req->ops[i], &snap)) return req->last_check = NIXL_ERR_BACKEND;
            if (snap.state == XFERK_STATE_QUARANTINED)
                return req->last_check = NIXL_ERR_BACKEND;
            if (!snap.buffer_reusable) {
                busy = true;
                continue;
            }
            req->outcome[i] = op_status(snap);
        }
        if (status == NIXL_SUCCESS) status = req->outcome[i];
    }
    if (busy) return req->last_check = NIXL_IN_PROG;
    if (req->submit_error) return req->last_check = submit_status(req->submit_error);
    return req->last_check = status;
}

// Whether every op of @req is reusable now: those not yet seen reusable
// are queried, and what each ended as is noted.
bool
XferkEngine::reusable(XferkReqH *req) const {
    for (size_t i = 0; i < req->ops.size(); i++) {
        xferk_op_snapshot snap;

        if (req->outcome[i] != NIXL_IN_PROG) continue;
        if (xferk_query(x_, req->ops[i], &snap) || !snap.buffer_reusable) return false;
        req->outcome[i] = op_status(snap);
    }
    return true;
}

// Releases the ops of @req (physically complete) and their group, and
// forgets its regions. Its ops leave it under lock_, with it leaving its
// regions' users: deregisterMem() reads them there.
void
XferkEngine::finish(XferkReqH *req) const {
    std::vector<uint64_t> ops;
    {
        std::lock_guard<std::mutex> guard(lock_);
        for (const xferk_key_t &key : req->regions) {
            auto it = regions_.find(key);
            if (it != regions_.end()) it->second->users.erase(req);
        }
        ops.swap(req->ops);
    }
    for (uint64_t op : ops)
        xferk_release(x_, op);
    if (req->group) xferk_group_release(x_, req->group);
    req->outcome.clear();
    req->group = 0;
    req->submit_error = 0;
}

// Waits until @op's memory is reusable, however long the kernel takes to
// drain it (it escalates to the path's teardown; Documentation/lifecycle.md).
void
XferkEngine::wait_reusable(uint64_t op) const {
    xferk_op_snapshot snap = {};

    for (;;) {
        int ret = xferk_wait(x_, op, xferk_now_ns() + kWaitRoundNs, XFERK_WAIT_PHYSICAL, &snap);
        if ((!ret && snap.buffer_reusable) || (ret && ret != -ETIMEDOUT)) return;
        NIXL_ERROR << "XFERK: still waiting for an op (" << xferk_state_name(snap.state)
                   << ") to finish touching its memory";
    }
}

// Cancels the request's ops and drains them together for at most
// drain_budget_ms: its group aborted, or (no group) each op cancelled
// against the same drain deadline. NIXL calls this for a transfer in
// progress right after a checkXfer() that said so (then an error keeps the
// handle and makes NIXL report NIXL_ERR_REPOST_ACTIVE), and for every other
// handle it destroys, ignoring the result and reporting success. So a
// request whose ops are not all reusable fails the first kind of call
// once, and otherwise is waited for: success always means reusable.
nixl_status_t
XferkEngine::releaseReqH(nixlBackendReqH *handle) const {
    auto *req = static_cast<XferkReqH *>(handle);

    if (!req->ops.empty() && !reusable(req)) {
        uint64_t deadline = xferk_now_ns() + drain_budget_ns_;
        bool done = true;

        if (req->group) {
            xferk_group_snapshot gs;
            done = !xferk_group_abort(x_, req->group, deadline, &gs);
        } else {
            for (uint64_t op : req->ops) {
                xferk_op_snapshot snap;
                if (xferk_cancel_drain(x_, op, deadline, &snap) || !snap.buffer_reusable)
                    done = false;
            }
        }
        if (!done) {
            if (req->last_check == NIXL_IN_PROG && !req->refused) {
                NIXL_ERROR << "XFERK: releaseReqH: an op of the transfer is not reusable yet;"
                           << " release again to wait";
                req->refused = true;
                return NIXL_ERR_BACKEND;
            }
            for (uint64_t op : req->ops)
                wait_reusable(op);
        }
    }
    if (!req->ops.empty()) finish(req);
    drop_windows(req);
    delete req;
    return NIXL_SUCCESS;
}

// What a notification held costs against kMaxPendingBytes: its strings
// and a share for its entry, so that entries without a message yet (data
// that landed first) count too.
size_t
XferkEngine::Arrival::cost() const {
    return kArrivalCost + agent.size() + msg.size();
}

// The entry of @tag, made (and charged) if new, with news now; nullptr
// when the budget is spent. With lock_.
XferkEngine::Arrival *
XferkEngine::arrival(uint64_t tag) const {
    auto it = arrivals_.find(tag);
    if (it != arrivals_.end()) {
        it->second.news = std::chrono::steady_clock::now();
        return &it->second;
    }
    if (pending_bytes_ + kArrivalCost > kMaxPendingBytes) {
        NIXL_ERROR << "XFERK: " << pending_bytes_
                   << " bytes of notifications not yet taken; dropped one";
        return nullptr;
    }
    pending_bytes_ += kArrivalCost;
    Arrival &a = arrivals_[tag];
    a.news = std::chrono::steady_clock::now();
    return &a;
}

// Hands @a's message out once it and the DATA event of every op that
// carries its tag are in, or drops it if one op's data did not all land.
// With lock_.
void
XferkEngine::arrival_settle(uint64_t tag, Arrival &a) const {
    if (!a.have_msg || a.ended < a.ops) return;
    pending_bytes_ -= a.cost();
    if (!a.failed) {
        pending_bytes_ += a.agent.size() + a.msg.size();
        ready_.emplace_back(std::move(a.agent), std::move(a.msg));
    }
    arrivals_.erase(tag);
}

// A notification's message, carried by @ops ops with @tag; tag 0: one
// without data (genNotif), ready at once. A second message for a tag is
// ignored.
bool
XferkEngine::arrive_msg(uint64_t tag,
                        const std::string &agent,
                        const std::string &msg,
                        uint32_t ops) const {
    std::lock_guard<std::mutex> guard(lock_);
    size_t bytes = agent.size() + msg.size();

    if (pending_bytes_ + bytes > kMaxPendingBytes) {
        NIXL_ERROR << "XFERK: " << pending_bytes_
                   << " bytes of notifications not yet taken; refused one";
        return false;
    }
    if (!tag) {
        pending_bytes_ += bytes;
        ready_.emplace_back(agent, msg);
        return true;
    }
    Arrival *a = arrival(tag);
    if (!a) return false;
    if (a->have_msg) return true;
    pending_bytes_ += bytes;
    a->have_msg = true;
    a->agent = agent;
    a->msg = msg;
    a->ops = ops;
    arrival_settle(tag, *a);
    return true;
}

// The DATA event of one op that carries @tag: its data all landed, or
// not (@failed).
void
XferkEngine::arrive_data(uint64_t tag, bool failed) const {
    std::lock_guard<std::mutex> guard(lock_);
    Arrival *a = arrival(tag);

    if (!a) return;
    a->ended++;
    a->failed |= failed;
    arrival_settle(tag, *a);
}

// Drops what had no news for kArrivalTtl: the data of a transfer whose
// initiator sent no message (its submit failed part way, or it died), or a
// message whose data will not come (the session ended under it). Scans at
// most once a second. With lock_.
void
XferkEngine::expire_arrivals() const {
    auto now = std::chrono::steady_clock::now();

    if (now - expired_ < std::chrono::seconds(1)) return;
    expired_ = now;
    for (auto it = arrivals_.begin(); it != arrivals_.end();) {
        if (now - it->second.news < kArrivalTtl) {
            ++it;
            continue;
        }
        NIXL_ERROR << "XFERK: dropped a notification that had no news for "
                   << std::chrono::duration_cast<std::chrono::minutes>(kArrivalTtl).count()
                   << " min, waiting for " << (it->second.have_msg ? "its data" : "its message");
        pending_bytes_ -= it->second.cost();
        it = arrivals_.erase(it);
    }
}

nixl_status_t
XferkEngine::getNotifs(notif_list_t &notif_list) {
    if (!notif_list.empty()) return NIXL_ERR_INVALID_PARAM;
    take_events();
    std::lock_guard<std::mutex> guard(lock_);
    expire_arrivals();
    for (const auto &n : ready_)
        pending_bytes_ -= n.first.size() + n.second.size();
    notif_list.swap(ready_);
    return NIXL_SUCCESS;
}

std::shared_ptr<XferkEngine::Peer>
XferkEngine::find_peer(const std::string &agent) const {
    std::lock_guard<std::mutex> guard(lock_);
    auto it = peers_.find(agent);
    return it == peers_.end() ? nullptr : it->second;
}

// Sends notification @msg with @tag (0: no data to wait for), carried by
// @ops ops, to @agent's control listener, or hands it to this engine when
// @agent is itself. Frame: 'M', tag (8 bytes), ops (4), name length (2),
// the sender's name, the message.
nixl_status_t
XferkEngine::send_notif(const std::string &agent,
                        uint64_t tag,
                        uint32_t ops,
                        const std::string &msg) const {
    uint16_t namelen = localAgent.size();

    if (agent == localAgent)
        return arrive_msg(tag, localAgent, msg, ops) ? NIXL_SUCCESS : NIXL_ERR_BACKEND;
    std::shared_ptr<Peer> peer = find_peer(agent);
    if (!peer) return NIXL_ERR_NOT_FOUND;
    if (localAgent.size() > UINT16_MAX) return NIXL_ERR_INVALID_PARAM;
    std::string frame = "M" + std::string((const char *)&tag, sizeof(tag)) +
        std::string((const char *)&ops, sizeof(ops)) +
        std::string((const char *)&namelen, sizeof(namelen)) + localAgent + msg;
    std::string reply;
    // Sent once: a copy could be delivered twice.
    if (!peer->ctrl.call(frame, reply, false)) return NIXL_ERR_REMOTE_DISCONNECT;
    return reply == "A" ? NIXL_SUCCESS : NIXL_ERR_BACKEND;
}

nixl_status_t
XferkEngine::genNotif(const std::string &remote_agent, const std::string &msg) const {
    return send_notif(remote_agent, 0, 0, msg);
}
