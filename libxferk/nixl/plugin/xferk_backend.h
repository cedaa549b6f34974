/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libplugin_XFERK: a NIXL backend over libxferk (Documentation/nixl.md).
 *
 * What it adds to NIXL is the guarantee xferk gives: a transfer's memory is
 * never reported reusable while a work request may still touch it.
 * A request is one or more xferk ops. checkXfer() reports an error only
 * once every op's memory is reusable, or when one is QUARANTINED;
 * releaseReqH() cancels and drains them, and succeeds only once their
 * memory is reusable; deregisterMem() waits for the ops on the region.
 * With fence=request, a peer reaches this engine's regions only through
 * windows over the blocks of a request of its own, open from its
 * prepXfer() to its releaseReqH().
 *
 * Locking: lock_ guards every map of the engine; libxferk calls are made
 * outside it except the short ones. A request handle is used by one NIXL
 * thread at a time (NIXL's rule for transfer handles).
 */
#ifndef XFERK_BACKEND_H
#define XFERK_BACKEND_H

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend_engine.h"
#include "libxferk.h"
#include "xferk_ctrl.h"
#include "xferk_cuda.h"
#include "xferk_topo.h"
#include "xferk_windows.h"

struct XferkLocalMD;
struct XferkReqH;

class XferkEngine : public nixlBackendEngine {
public:
    explicit XferkEngine(const nixlBackendInitParams *init_params);
    ~XferkEngine() override;

    bool
    supportsRemote() const override {
        return true;
    }

    bool
    supportsLocal() const override {
        return true;
    }

    bool
    supportsNotif() const override {
        return true;
    }

    /* VRAM_SEG only where the CUDA driver exports dma-bufs (xferk_cuda.h). */
    nixl_mem_list_t
    getSupportedMems() const override {
        if (cuda_.usable()) return {DRAM_SEG, VRAM_SEG};
        return {DRAM_SEG};
    }

    nixl_status_t
    registerMem(const nixlBlobDesc &mem, const nixl_mem_t &nixl_mem, nixlBackendMD *&out) override;
    nixl_status_t
    deregisterMem(nixlBackendMD *meta) override;
    nixl_status_t
    connect(const std::string &remote_agent) override;
    nixl_status_t
    disconnect(const std::string &remote_agent) override;
    nixl_status_t
    unloadMD(nixlBackendMD *input) override;
    nixl_status_t
    prepXfer(const nixl_xfer_op_t &operation,
             const nixl_meta_dlist_t &local,
             const nixl_meta_dlist_t &remote,
             const std::string &remote_agent,
             nixlBackendReqH *&handle,
             const nixl_opt_b_args_t *opt_args = nullptr) const override;
    nixl_status_t
    postXfer(const nixl_xfer_op_t &operation,
             const nixl_meta_dlist_t &local,
             const nixl_meta_dlist_t &remote,
             const std::string &remote_agent,
             nixlBackendReqH *&handle,
             const nixl_opt_b_args_t *opt_args = nullptr) const override;
    nixl_status_t
    checkXfer(nixlBackendReqH *handle) const override;
    nixl_status_t
    releaseReqH(nixlBackendReqH *handle) const override;
    nixl_status_t
    getPublicData(const nixlBackendMD *meta, std::string &str) const override;
    nixl_status_t
    getConnInfo(std::string &str) const override;
    nixl_status_t
    loadRemoteConnInfo(const std::string &remote_agent,
                       const std::string &remote_conn_info) override;
    nixl_status_t
    loadRemoteMD(const nixlBlobDesc &input,
                 const nixl_mem_t &nixl_mem,
                 const std::string &remote_agent,
                 nixlBackendMD *&output) override;
    nixl_status_t
    loadLocalMD(nixlBackendMD *input, nixlBackendMD *&output) override;
    nixl_status_t
    getNotifs(notif_list_t &notif_list) override;
    nixl_status_t
    genNotif(const std::string &remote_agent, const std::string &msg) const override;

private:
    /* A remote agent this engine loaded the connection info of: its
     * first device's address and its other devices' (rails). */
    struct Peer {
        std::string ip;
        std::vector<std::string> rails;
        XferkCtrlClient ctrl;
        XferkCtrlClient closes; /* the worker's, connected at its first 'C' */
    };

    /* A notification on its way in: the message (control channel) and, for
     * one sent with a transfer, xferk's DATA event of each op that carries
     * its tag. Held until both are complete, or until it had no news
     * (its message, an event) for kArrivalTtl. */
    struct Arrival {
        uint32_t ops = 0;    /* ops that carry it (known with the message) */
        uint32_t ended = 0;  /* of them, whose DATA event came */
        bool failed = false; /* one's data did not all land: not delivered */
        bool have_msg = false;
        std::string agent, msg;
        std::chrono::steady_clock::time_point news; /* the last */

        size_t
        cost() const; /* against kMaxPendingBytes */
    };

    /* A 'W' frame (or, before window_frame(), its access and windows) and
     * how many windows it asks for. */
    struct WindowFrame {
        size_t windows;
        std::string body;
    };

    /* The windows this engine opened for a peer's request (fence=request),
     * by the nonce the peer gave the request: the host and agent it came
     * from, each window's export handle and region, the reply to each
     * 'W' frame by its index (a frame sent again is answered the same),
     * and the addresses its rails' windows were made to. */
    struct WindowReq {
        std::pair<std::string, std::string> grantee; /* ip, agent */
        std::vector<std::pair<uint64_t, xferk_key_t>> windows;
        std::map<uint32_t, std::string> replies;
        std::set<std::string> rails; /* addresses windows were made to for rails */
    };

    /* A task of the worker thread: a 'C' frame to send to @agent
     * (@frame), or, with @frame empty, the windows of request @nonce of
     * @agent's to close once its notifications @tags are in. */
    struct Task {
        std::string agent, frame;
        uint64_t nonce = 0;
        std::vector<uint64_t> tags;
    };

    bool
    choose_devices(const nixl_b_params_t &params, std::string &why);
    void
    import_rails(Peer &peer, const xferk_key_t &key, uint64_t remote);
    std::vector<std::pair<std::string, std::string>>
    rail_pairs(const Peer &peer) const;
    int
    rail_addr_ok(const std::string &ip) const;
    bool
    rail_windows(XferkReqH *req, Peer &peer, const std::string &mine, const std::string &theirs,
                 const std::vector<WindowFrame> &frames, uint32_t rail) const;
    WindowFrame
    window_frame(uint64_t nonce, uint32_t index, const WindowFrame &windows,
                 const std::string &addr) const;
    int
    ask_windows(Peer &peer, const WindowFrame &frame, std::vector<xferk_token> &toks) const;
    int
    ask_token(Peer &peer, const std::string &frame, bool again, xferk_token &tok, int32_t &why,
              uint32_t *page = nullptr) const;
    int
    on_conn(const std::string &ip, const std::function<int(uint64_t conn)> &fn) const;
    uint64_t
    begin_export(const std::string &agent);
    bool
    end_export(const std::string &agent, uint64_t disconnects);
    std::string
    open_windows(const std::string &frame, const std::string &peer_ip);
    std::string
    close_windows(const std::string &frame, const std::string &peer_ip);
    void
    close_handles(const std::vector<uint64_t> &handles, const std::string &agent) const;
    nixl_status_t
    prep_windows(XferkReqH *req,
                 const nixl_meta_dlist_t &local,
                 const nixl_meta_dlist_t &remote,
                 const std::vector<int> &descs,
                 uint32_t opcode) const;
    void
    drop_windows(XferkReqH *req) const;
    void
    work();
    void
    queue_task(Task task) const;
    void
    finish_close(const Task &task);
    bool
    was_closed(const std::string &peer_ip, uint64_t nonce) const;
    bool
    note_closed(const std::string &peer_ip, uint64_t nonce);
    bool
    windows_fit(const std::string &peer_ip, size_t more) const;
    bool
    rail_fits(const std::string &peer_ip, const std::string &to) const;
    void
    take_events() const;
    bool
    notes_in(const std::string &agent, const std::vector<uint64_t> &tags) const;
    int
    rail_export(const xferk_key_t &key, const std::string &ip, const std::string &agent,
                const std::string &peer_ip, xferk_token &tok);
    bool
    conn_to(const std::string &ip, uint64_t &conn) const;
    bool
    rail_conn(const std::string &ip, uint64_t &conn) const;
    int
    register_vram(const nixlBlobDesc &mem, uint64_t &mr) const;
    std::shared_ptr<Peer>
    find_peer(const std::string &agent) const;
    nixl_status_t
    send_notif(const std::string &agent, uint64_t tag, uint32_t ops, const std::string &msg) const;
    int
    submit_ops(XferkReqH *req, const xferk_submit_opts &opts, uint64_t tag) const;
    bool
    reusable(XferkReqH *req) const;
    std::string
    handle_ctrl(const std::string &frame, const std::string &peer_ip);
    nixl_status_t
    import_region(const std::string &ip, const xferk_token &token, uintptr_t base,
                  size_t len, nixlBackendMD *&output);
    bool
    arrive_msg(uint64_t tag, const std::string &agent, const std::string &msg,
               uint32_t ops) const;
    void
    arrive_data(uint64_t tag, bool failed) const;
    Arrival *
    arrival(uint64_t tag) const;
    void
    arrival_settle(uint64_t tag, Arrival &a) const;
    void
    expire_arrivals() const;
    void
    wait_reusable(uint64_t op) const;
    int
    export_region(const xferk_key_t &key, const std::string &ip, const std::string &agent,
                  xferk_token &tok);
    void
    forget_conn(const std::string &ip, uint64_t conn) const;
    void
    finish(XferkReqH *req) const;

    struct xferk *x_ = nullptr;
    XferkCuda cuda_;
    std::string ip_;                 /* the first device's address */
    std::vector<XferkAddr> rail_addrs_; /* the other devices' */
    unsigned int rails_ = 1;         /* rails per remote region, the first's too */
    xferk_key_t secret_;
    uint64_t drain_budget_ns_;
    unsigned int qps_ = 0; /* RC QPs per session path; 0: the module's */
    bool per_request_ = false; /* fence=request: peers get windows only */
    /* fence=request: windows one peer host may hold at once; 0: no cap
     * but the file's max_exports_per_file. */
    unsigned int max_windows_per_peer_ = 0;
    std::unique_ptr<XferkCtrlServer> server_;
    /* What the worker thread (work()) does off the callers' paths, so that
     * neither releaseReqH() nor the control listener waits for a close;
     * tasks left when the engine goes are not done (its file's close
     * revokes what it exported). */
    mutable std::mutex tasks_lock_;
    mutable std::condition_variable tasks_cv_;
    mutable std::deque<Task> tasks_;
    bool tasks_stop_ = false;
    std::thread worker_;

    mutable std::mutex lock_;
    mutable std::map<std::string, uint64_t> conns_;             /* peer ip -> xferk conn */
    /* Rail addresses a connect to failed: when to try each again. */
    mutable std::map<std::string, std::chrono::steady_clock::time_point> rail_down_;
    std::map<std::string, std::shared_ptr<Peer>> peers_;        /* by agent name */
    /* Agents whose exports or windows are being made (without the lock):
     * how many calls, and how often disconnect() came meanwhile. */
    struct Exporting {
        unsigned int calls = 0;
        uint64_t disconnects = 0;
    };
    std::map<std::string, Exporting> exporting_;
    std::map<xferk_key_t, XferkLocalMD *> regions_;             /* by key */
    std::map<uint64_t, WindowReq> window_reqs_;                 /* by nonce */
    /* Nonces the 'C' frames of each peer host named, kept kClosedKeep (at
     * most kClosedNonces in all, the most a host holds going first, so
     * that one host's frames do not push out another's): a 'W' that
     * arrives after its request's 'C' (sent again, overtaken) opens
     * nothing. Oldest first. */
    struct ClosedNonces {
        std::deque<std::pair<uint64_t, std::chrono::steady_clock::time_point>> order;
        std::set<uint64_t> nonces;
    };
    std::map<std::string, ClosedNonces> closed_; /* by peer host's ip */
    mutable std::map<uint64_t, Arrival> arrivals_;              /* by tag */
    mutable notif_list_t ready_;
    mutable size_t pending_bytes_ = 0; /* arrivals_' and ready_'s cost */
    mutable std::chrono::steady_clock::time_point expired_;     /* last scan */
};

#endif
