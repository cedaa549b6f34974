// SPDX-License-Identifier: Apache-2.0
// The plugin's control channel (see xferk_ctrl.h).
#include "xferk_ctrl.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <ctime>
#include <unistd.h>

namespace {
constexpr uint32_t kMaxFrame = 1 << 20;

// TCP keepalive: a peer host that is gone is noticed after 10 s idle and
// three probes 5 s apart.
void
keepalive(int fd) {
    int one = 1, idle = 10, intvl = 5, cnt = 3;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

// @ip (IPv4 or IPv6 text) and @port in @ss; false if @ip is not an address.
bool
sockaddr_of(const std::string &ip, uint16_t port, struct sockaddr_storage &ss, socklen_t &len) {
    auto *sin = (struct sockaddr_in *)&ss;
    auto *sin6 = (struct sockaddr_in6 *)&ss;

    memset(&ss, 0, sizeof(ss));
    if (inet_pton(AF_INET, ip.c_str(), &sin->sin_addr) == 1) {
        sin->sin_family = AF_INET;
        sin->sin_port = htons(port);
        len = sizeof(*sin);
        return true;
    }
    if (inet_pton(AF_INET6, ip.c_str(), &sin6->sin6_addr) == 1) {
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(port);
        len = sizeof(*sin6);
        return true;
    }
    return false;
}

// The address of @ss in its canonical spelling, or "".
std::string
ip_of(const struct sockaddr_storage &ss) {
    char buf[INET6_ADDRSTRLEN] = "";
    const void *a = ss.ss_family == AF_INET6 ?
        (const void *)&((const struct sockaddr_in6 *)&ss)->sin6_addr :
        (const void *)&((const struct sockaddr_in *)&ss)->sin_addr;

    if ((ss.ss_family != AF_INET && ss.ss_family != AF_INET6) ||
        !inet_ntop(ss.ss_family, a, buf, sizeof(buf)))
        return "";
    return buf;
}

// All of @len bytes, or false. The listener's sockets do not block: a
// write waits for room (POLLOUT) for at most 10 s at a time.
bool
io_all(int fd, void *buf, size_t len, bool write_side) {
    auto *p = static_cast<uint8_t *>(buf);

    while (len) {
        ssize_t n = write_side ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && write_side && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {fd, POLLOUT, 0};
            if (poll(&pfd, 1, 10000) > 0) continue;
            return false;
        }
        if (n <= 0) return false;
        p += n;
        len -= n;
    }
    return true;
}
} // namespace

bool
xferk_ctrl_recv(int fd, std::string &out) {
    uint32_t be;

    if (!io_all(fd, &be, sizeof(be), false)) return false;
    uint32_t len = ntohl(be);
    if (len == 0 || len > kMaxFrame) return false;
    out.resize(len);
    return io_all(fd, out.data(), len, false);
}

bool
xferk_ctrl_send(int fd, const std::string &frame) {
    if (frame.empty() || frame.size() > kMaxFrame) return false;
    uint32_t be = htonl(frame.size());
    return io_all(fd, &be, sizeof(be), true) &&
        io_all(fd, const_cast<char *>(frame.data()), frame.size(), true);
}

xferk_key_t
xferk_random_key() {
    xferk_key_t k;
    size_t got = 0;

    while (got < k.size()) {
        ssize_t n = getrandom(k.data() + got, k.size() - got, 0);
        if (n > 0) got += n;
    }
    return k;
}

std::string
xferk_hex(const uint8_t *p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    std::string s;

    for (size_t i = 0; i < n; i++) {
        s += digits[p[i] >> 4];
        s += digits[p[i] & 15];
    }
    return s;
}

bool
xferk_unhex(const std::string &hex, uint8_t *p, size_t n) {
    if (hex.size() != 2 * n) return false;
    for (size_t i = 0; i < n; i++) {
        unsigned int v;
        if (sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return false;
        p[i] = v;
    }
    return true;
}

XferkCtrlServer::XferkCtrlServer(const std::string &ip,
                                 uint16_t port,
                                 const xferk_key_t &secret,
                                 handler_t handler)
    : secret_(secret),
      handler_(std::move(handler)) {
    struct sockaddr_storage ss;
    socklen_t slen;
    int one = 1;

    if (!sockaddr_of(ip, port, ss, slen)) {
        error_ = EINVAL;
        return;
    }
    listen_fd_ = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    // A fixed port can be bound again while connections of an engine
    // before are in TIME_WAIT.
    if (listen_fd_ < 0 || setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
        bind(listen_fd_, (struct sockaddr *)&ss, slen) || listen(listen_fd_, 64) ||
        getsockname(listen_fd_, (struct sockaddr *)&ss, &slen) || pipe2(wake_fd_, O_CLOEXEC)) {
        error_ = errno;
        return;
    }
    port_ = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
                                              ((struct sockaddr_in *)&ss)->sin_port);
    thread_ = std::thread([this] { serve(); });
}

XferkCtrlServer::~XferkCtrlServer() {
    if (thread_.joinable()) {
        char c = 0;
        (void)!write(wake_fd_[1], &c, 1);
        thread_.join();
    }
    for (int fd : {listen_fd_, wake_fd_[0], wake_fd_[1]})
        if (fd >= 0) close(fd);
}

namespace {
constexpr size_t kMaxConns = 512; /* two per peer agent: calls and closes */
constexpr size_t kHelloBytes = 4 + 1 + sizeof(xferk_key_t);
constexpr int kHelloSeconds = 5;
constexpr struct timeval kIoTimeout = {10, 0};

// Constant-time comparison of the secret.
bool
same_secret(const char *p, const xferk_key_t &secret) {
    uint8_t diff = 0;
    for (size_t i = 0; i < secret.size(); i++)
        diff |= (uint8_t)p[i] ^ secret[i];
    return !diff;
}
} // namespace

// Serves until woken through wake_fd_. Connections are read without
// blocking into a buffer each, so no peer can hold the thread: before its
// hello (with the secret) a connection may send kHelloBytes, within
// kHelloSeconds; a bad hello, a frame length out of range or more than
// kMaxConns connections close it. A reply (up to about 14 KB) waits at
// most 10 s for room in the socket; a peer that does not read it is
// dropped.
void
XferkCtrlServer::serve() {
    struct Conn {
        bool authenticated = false;
        std::string ip;
        std::string in;
        time_t since;
    };
    std::map<int, Conn> conns;

    for (;;) {
        std::vector<struct pollfd> fds = {{wake_fd_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
        for (auto &c : conns)
            fds.push_back({c.first, POLLIN, 0});
        if (poll(fds.data(), fds.size(), 1000) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (fds[0].revents) break;
        if (fds[1].revents & POLLIN) {
            struct sockaddr_storage ss = {};
            socklen_t slen = sizeof(ss);
            int fd = accept4(
                listen_fd_, (struct sockaddr *)&ss, &slen, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd >= 0 && conns.size() >= kMaxConns) {
                close(fd);
            } else if (fd >= 0) {
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &kIoTimeout, sizeof(kIoTimeout));
                keepalive(fd);
                conns[fd] = Conn{false, ip_of(ss), "", time(nullptr)};
            }
        }
        std::vector<int> gone;
        for (size_t i = 2; i < fds.size(); i++) {
            int fd = fds[i].fd;
            Conn &conn = conns[fd];
            bool keep = conn.authenticated || time(nullptr) - conn.since < kHelloSeconds;
            if (keep && fds[i].revents) {
                char buf[65536];
                ssize_t n = recv(fd, buf, sizeof(buf), 0);
                keep = n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
                if (n > 0) conn.in.append(buf, n);
            }
            // Every complete frame in the buffer.
            while (keep && conn.in.size() >= 4) {
                uint32_t be;
                memcpy(&be, conn.in.data(), 4);
                uint32_t len = ntohl(be);
                if (len == 0 || len > kMaxFrame ||
                    (!conn.authenticated && len != kHelloBytes - 4)) {
                    keep = false;
                    break;
                }
                if (conn.in.size() < 4 + len) break;
                std::string frame = conn.in.substr(4, len);
                conn.in.erase(0, 4 + len);
                if (!conn.authenticated) {
                    keep = frame[0] == 'H' && same_secret(frame.data() + 1, secret_);
                    conn.authenticated = keep;
                } else {
                    std::string reply = handler_(frame, conn.ip);
                    keep = reply.empty() || xferk_ctrl_send(fd, reply);
                }
            }
            if (!conn.authenticated && conn.in.size() > kHelloBytes) keep = false;
            if (!keep) gone.push_back(fd);
        }
        for (int fd : gone) {
            close(fd);
            conns.erase(fd);
        }
    }
    for (auto &c : conns)
        close(c.first);
}

XferkCtrlClient::~XferkCtrlClient() {
    shut();
}

bool
XferkCtrlClient::open(const std::string &ip, uint16_t port, const xferk_key_t &secret, bool now) {
    std::lock_guard<std::mutex> guard(lock_);
    ip_ = ip;
    port_ = port;
    secret_ = secret;
    return !now || connect_locked();
}

bool
XferkCtrlClient::connect_locked() {
    struct sockaddr_storage ss;
    socklen_t slen;
    int one = 1;

    shut();
    if (!sockaddr_of(ip_, port_, ss, slen)) return false;
    fd_ = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    // Bounds connect() too (Linux applies SO_SNDTIMEO to it).
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &kIoTimeout, sizeof(kIoTimeout));
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &kIoTimeout, sizeof(kIoTimeout));
    keepalive(fd_);
    std::string hello("H");
    hello.append(secret_.begin(), secret_.end());
    if (connect(fd_, (struct sockaddr *)&ss, slen) || !xferk_ctrl_send(fd_, hello)) {
        shut();
        return false;
    }
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return true;
}

// A call that fails leaves the stream out of step: the connection is
// closed, and the next call makes a new one.
bool
XferkCtrlClient::call(const std::string &frame, std::string &reply, bool again) {
    std::lock_guard<std::mutex> guard(lock_);
    for (int attempt = 0; attempt < (again ? 2 : 1); attempt++) {
        if ((fd_ >= 0 || connect_locked()) && xferk_ctrl_send(fd_, frame) &&
            xferk_ctrl_recv(fd_, reply))
            return true;
        shut();
    }
    return false;
}

void
XferkCtrlClient::shut() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
}
