/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin's control channel: a TCP connection from each agent to each
 * remote agent it loaded, next to the RDMA session. xferk tokens are bound to
 * the session with one peer host, so a token cannot be put into an agent's
 * metadata before the peer is known: the peer asks for it here, presenting
 * the region's key from the metadata and its agent's name (the owner
 * revokes what an agent asked for when it disconnects that agent).
 * Notification messages (NIXL's strings) travel here too; their ordering
 * against the data comes from xferk's data-landed notifications (see
 * xferk_backend.cpp).
 *
 * Frames: a 4-byte big-endian length (1 MiB at most), then that many bytes,
 * the first a type (integers in the sender's byte order: both ends are x86):
 *   'H' secret[16]                  hello: the first frame of a connection
 *   'E' key[16] agent               export the region with this key to the
 *                                   host the connection comes from, for
 *                                   the agent of that name (the rest of
 *                                   the frame: 1 to 256 bytes)
 *   'R' key[16] ip [NUL agent]      the same to address @ip (IPv4 or IPv6),
 *                                   which must be on the subnet of one of
 *                                   the listener's rails
 *   'T' token | 'X' errno (4 bytes) the reply to 'E' and 'R'
 *   'P' page[4]                     the reply to 'E' of a fence=request
 *                                   owner: no token, its page size
 *   'W' namelen[2] name nonce[8] index[4] access[4] n[4]
 *       {key[16] blocks[4] {offset[8] len[8]}...}...
 *                                   windows over a request's blocks
 *                                   (fence=request), at most 200, for
 *                                   remote reads or writes; the nonce
 *                                   names the request, the index the
 *                                   frame among its (sent again: the
 *                                   same reply)
 *   'V' {token}... | 'X' errno      the reply to 'W'
 *   'C' namelen[2] name nonce[8] ntags[4] tag[8]...
 *                                   close the request's windows, once
 *                                   the notifications' data is in
 *                                   (reply 'A' at once)
 *   'M' tag[8] ops[4] namelen[2] name msg
 *                                   a notification, carried by @ops ops
 *                                   with @tag (tag 0, ops 0: no data); at
 *                                   most 2^24 ops
 *   'A' | 'X' errno                 the reply to 'M': taken, or not (the
 *                                   listener holds too many)
 * The listener closes a connection whose first frame is not a hello with
 * its secret, that sends no hello within 5 s, or whose frame length is out
 * of range; an unknown frame after the hello is ignored, a short 'E', 'R',
 * 'M', 'W' or 'C' answered with 'X'. Both ends turn on TCP keepalive (a peer host
 * that is gone is noticed within 25 s), and a client whose connection
 * failed connects again at its next call.
 */
#ifndef XFERK_CTRL_H
#define XFERK_CTRL_H

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using xferk_key_t = std::array<uint8_t, 16>;

/* Reads a frame from @fd into @out; false on EOF, error or bad length. */
bool xferk_ctrl_recv(int fd, std::string &out);
/* Writes one frame; false on error. */
bool xferk_ctrl_send(int fd, const std::string &frame);
/* 16 random bytes. */
xferk_key_t xferk_random_key();
std::string xferk_hex(const uint8_t *p, size_t n);
bool xferk_unhex(const std::string &hex, uint8_t *p, size_t n);

/*
 * The listener: a thread serving every connection to it with poll(). The
 * handler gets each frame after the hello, with the address the connection
 * came from (canonical IPv4 or IPv6 text), and returns the reply frame, or
 * an empty string for none. It runs on the listener's thread.
 */
class XferkCtrlServer {
public:
    using handler_t =
        std::function<std::string(const std::string &frame, const std::string &peer_ip)>;

    /*
     * Listens on @ip (IPv4 or IPv6 text) and @port (0: an ephemeral one);
     * on failure port() is 0 and error() the errno.
     */
    XferkCtrlServer(const std::string &ip,
                    uint16_t port,
                    const xferk_key_t &secret,
                    handler_t handler);
    ~XferkCtrlServer();

    uint16_t
    port() const {
        return port_;
    }

    int
    error() const {
        return error_;
    }

private:
    void
    serve();

    int listen_fd_ = -1;
    int wake_fd_[2] = {-1, -1};
    uint16_t port_ = 0;
    int error_ = 0;
    xferk_key_t secret_;
    handler_t handler_;
    std::thread thread_;
};

/* A client connection to one remote agent's listener. */
class XferkCtrlClient {
public:
    ~XferkCtrlClient();

    /* Connects and sends the hello (@now), or leaves that to the first
     * call; false on failure. */
    bool
    open(const std::string &ip, uint16_t port, const xferk_key_t &secret, bool now = true);
    /*
     * Sends @frame and returns the reply in @reply; false on failure. A
     * connection that failed before is made again first; with @again, a
     * call that fails is made once more on a new connection (for frames
     * that may arrive twice).
     */
    bool
    call(const std::string &frame, std::string &reply, bool again);

private:
    bool
    connect_locked();
    void
    shut();

    std::mutex lock_; /* one request at a time on the socket; guards fd_ */
    int fd_ = -1;
    std::string ip_;
    uint16_t port_ = 0;
    xferk_key_t secret_;
};

#endif
