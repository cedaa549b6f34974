// SPDX-License-Identifier: Apache-2.0
// Which RDMA devices an engine uses (xferk_topo.h).
#include "xferk_topo.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <ifaddrs.h>
#include <linux/if_addr.h>
#include <net/if.h>

namespace fs = std::filesystem;

namespace {
// The first line of @path, or "".
std::string
read_line(const fs::path &path) {
    std::ifstream f(path);
    std::string line;
    std::getline(f, line);
    return line;
}

// @path with symbolic links resolved, relative to @sysfs's devices/ ("" if
// it does not resolve there).
std::string
devices_path(const std::string &sysfs, const fs::path &path) {
    std::error_code ec;
    fs::path real = fs::canonical(path, ec);
    fs::path devices = fs::canonical(fs::path(sysfs) / "devices", ec);
    if (ec || real.empty()) return "";
    fs::path rel = real.lexically_relative(devices);
    if (rel.empty() || *rel.begin() == "..") return "";
    return rel.string();
}

// The first name in directory @dir by order, or "".
std::string
first_entry(const fs::path &dir) {
    std::error_code ec;
    std::string first;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (first.empty() || name < first) first = name;
    }
    return first;
}

// The number of leading path components @a and @b share.
size_t
common_components(const std::string &a, const std::string &b) {
    fs::path pa(a), pb(b);
    size_t n = 0;
    for (auto ia = pa.begin(), ib = pb.begin(); ia != pa.end() && ib != pb.end() && *ia == *ib;
         ++ia, ++ib)
        n++;
    return n;
}

// The CPUs of a cpulist ("0-3,8,10-11"), in @out. False if malformed.
bool
parse_cpulist(const std::string &list, std::vector<int> &out) {
    for (const std::string &part : xferk_split(list, ',')) {
        char *end;
        long lo = strtol(part.c_str(), &end, 10), hi = lo;
        if (end == part.c_str()) return false;
        if (*end == '-') {
            const char *p = end + 1;
            hi = strtol(p, &end, 10);
            if (end == p) return false;
        }
        if (*end || lo < 0 || hi < lo || hi - lo > 65536) return false;
        for (long c = lo; c <= hi; c++)
            out.push_back((int)c);
    }
    return true;
}
// The number of leading one bits of a netmask of @n bytes.
unsigned int
mask_prefix(const uint8_t *mask, size_t n) {
    unsigned int bits = 0;
    for (size_t i = 0; i < n && mask[i] == 0xff; i++)
        bits += 8;
    if (bits < 8 * n)
        for (uint8_t b = mask[bits / 8]; b & 0x80; b <<= 1)
            bits++;
    return bits;
}

// @a and @b share their first @bits bits.
bool
same_prefix(const uint8_t *a, const uint8_t *b, unsigned int bits) {
    size_t whole = bits / 8;
    if (memcmp(a, b, whole)) return false;
    if (bits % 8 == 0) return true;
    uint8_t mask = (uint8_t)(0xff << (8 - bits % 8));
    return ((a[whole] ^ b[whole]) & mask) == 0;
}

// @sa (AF_INET or AF_INET6) and its netmask @mask in @out; false for
// another family or an address inet_ntop cannot spell.
bool
addr_of(const struct sockaddr *sa, const struct sockaddr *mask, XferkAddr &out) {
    char buf[INET6_ADDRSTRLEN];
    const void *a, *m;
    size_t n;

    if (sa->sa_family == AF_INET) {
        a = &((const struct sockaddr_in *)sa)->sin_addr;
        m = &((const struct sockaddr_in *)mask)->sin_addr;
        n = 4;
    } else if (sa->sa_family == AF_INET6) {
        a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        m = &((const struct sockaddr_in6 *)mask)->sin6_addr;
        n = 16;
    } else {
        return false;
    }
    if (!inet_ntop(sa->sa_family, a, buf, sizeof(buf))) return false;
    out.ip = buf;
    out.family = sa->sa_family;
    memcpy(out.addr, a, n);
    out.prefix = mask_prefix((const uint8_t *)m, n);
    return true;
}
} // namespace

bool
xferk_parse_ip(const std::string &ip, XferkAddr &out) {
    char buf[INET6_ADDRSTRLEN];
    XferkAddr a;

    if (inet_pton(AF_INET, ip.c_str(), a.addr) == 1) {
        a.family = AF_INET;
        a.prefix = 32;
    } else if (inet_pton(AF_INET6, ip.c_str(), a.addr) == 1) {
        a.family = AF_INET6;
        a.prefix = 128;
    } else {
        return false;
    }
    if (!inet_ntop(a.family, a.addr, buf, sizeof(buf))) return false;
    a.ip = buf;
    out = a;
    return true;
}

bool
xferk_unicast_ip(const XferkAddr &a) {
    static const uint8_t zero[16] = {};
    static const uint8_t ones[4] = {0xff, 0xff, 0xff, 0xff};

    if (a.family == AF_INET)
        return memcmp(a.addr, zero, 4) && memcmp(a.addr, ones, 4) && (a.addr[0] & 0xf0) != 0xe0 &&
            a.addr[0] != 127;
    if (a.family != AF_INET6) return false;
    const auto *in6 = (const struct in6_addr *)a.addr;
    return !IN6_IS_ADDR_UNSPECIFIED(in6) && !IN6_IS_ADDR_MULTICAST(in6) &&
        !IN6_IS_ADDR_LINKLOCAL(in6) && !IN6_IS_ADDR_LOOPBACK(in6);
}

bool
xferk_canonical_ip(const std::string &ip) {
    XferkAddr a;
    return xferk_parse_ip(ip, a) && a.ip == ip;
}

std::vector<std::string>
xferk_split(const std::string &s, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        size_t end = s.find(sep, start);
        if (end == std::string::npos) end = s.size();
        if (end > start) out.push_back(s.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

std::vector<XferkNic>
xferk_scan_nics(const std::string &sysfs) {
    std::vector<XferkNic> nics;
    std::error_code ec;
    fs::path cls = fs::path(sysfs) / "class" / "infiniband";

    for (fs::directory_iterator it(cls, ec), end; !ec && it != end; it.increment(ec)) {
        fs::path dev = it->path();
        XferkNic nic;
        nic.name = dev.filename().string();
        nic.pci = devices_path(sysfs, dev / "device");
        std::string node = read_line(dev / "device" / "numa_node");
        nic.numa_node = node.empty() ? -1 : atoi(node.c_str());
        if (nic.numa_node < 0) nic.numa_node = -1;
        nic.netdev = read_line(dev / "ports" / "1" / "gid_attrs" / "ndevs" / "0");
        if (nic.netdev.empty()) nic.netdev = first_entry(dev / "device" / "net");
        nics.push_back(nic);
    }
    std::sort(nics.begin(), nics.end(),
              [](const XferkNic &a, const XferkNic &b) { return a.name < b.name; });
    return nics;
}

std::set<std::string>
xferk_unstable_ipv6(const std::string &if_inet6) {
    const unsigned int unstable =
        IFA_F_TENTATIVE | IFA_F_DADFAILED | IFA_F_DEPRECATED | IFA_F_TEMPORARY;
    std::set<std::string> out;
    std::istringstream in(if_inet6);
    std::string line;

    // "<32 hex digits> <ifindex> <prefix length> <scope> <flags> <name>"
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string hex, ifindex, plen, scope, flags;
        uint8_t raw[16];
        char buf[INET6_ADDRSTRLEN];
        if (!(fields >> hex >> ifindex >> plen >> scope >> flags) || hex.size() != 32) continue;
        unsigned long bits = strtoul(flags.c_str(), nullptr, 16);
        bool ok = true;
        for (size_t i = 0; i < 16 && ok; i++) {
            unsigned int v;
            ok = sscanf(hex.c_str() + 2 * i, "%2x", &v) == 1;
            raw[i] = (uint8_t)v;
        }
        if (ok && (bits & unstable) && inet_ntop(AF_INET6, raw, buf, sizeof(buf)))
            out.insert(buf);
    }
    return out;
}

std::vector<XferkAddr>
xferk_host_addrs() {
    std::vector<XferkAddr> addrs;
    struct ifaddrs *ifaddr;
    std::ifstream if_inet6("/proc/net/if_inet6");
    std::stringstream text;

    text << if_inet6.rdbuf();
    std::set<std::string> unstable = xferk_unstable_ipv6(text.str());

    if (getifaddrs(&ifaddr)) return addrs;
    for (struct ifaddrs *ifa = ifaddr; ifa; ifa = ifa->ifa_next) {
        XferkAddr a;
        if (!ifa->ifa_addr || !ifa->ifa_netmask || (ifa->ifa_flags & IFF_LOOPBACK) ||
            !(ifa->ifa_flags & IFF_UP) || !addr_of(ifa->ifa_addr, ifa->ifa_netmask, a))
            continue;
        if (a.family == AF_INET6 &&
            (IN6_IS_ADDR_LINKLOCAL(&((const struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr) ||
             unstable.count(a.ip)))
            continue;
        a.ifname = ifa->ifa_name;
        addrs.push_back(a);
    }
    freeifaddrs(ifaddr);
    std::stable_partition(addrs.begin(), addrs.end(),
                          [](const XferkAddr &a) { return a.family == AF_INET; });
    return addrs;
}

int
xferk_cpus_node(const std::string &sysfs, const std::vector<int> &cpus) {
    std::error_code ec;
    fs::path nodes = fs::path(sysfs) / "devices" / "system" / "node";
    int found = -1;

    if (cpus.empty()) return -1;
    for (fs::directory_iterator it(nodes, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        std::vector<int> list;
        if (name.rfind("node", 0) || name.size() == 4 ||
            name.find_first_not_of("0123456789", 4) != std::string::npos ||
            !parse_cpulist(read_line(it->path() / "cpulist"), list))
            continue;
        size_t in = 0;
        for (int c : cpus)
            in += std::count(list.begin(), list.end(), c) != 0;
        if (in == cpus.size()) return atoi(name.c_str() + 4);
        if (in) found = -2; /* part of them only */
    }
    return found == -2 ? -1 : found;
}

std::string
xferk_pci_path(const std::string &sysfs, const std::string &bus_id) {
    if (bus_id.empty() || bus_id.find('/') != std::string::npos) return "";
    return devices_path(sysfs, fs::path(sysfs) / "bus" / "pci" / "devices" / bus_id);
}

const XferkAddr *
xferk_nic_addr(const XferkNic &nic, const std::vector<XferkAddr> &addrs) {
    for (const XferkAddr &a : addrs)
        if (!nic.netdev.empty() && a.ifname == nic.netdev) return &a;
    return nullptr;
}

const XferkAddr *
xferk_addr_on_subnet(const std::vector<XferkAddr> &addrs, const std::string &ip) {
    XferkAddr peer;
    if (!xferk_parse_ip(ip, peer)) return nullptr;
    for (const XferkAddr &a : addrs)
        if (a.family == peer.family && same_prefix(a.addr, peer.addr, a.prefix))
            return &a;
    return nullptr;
}

std::vector<XferkNic>
xferk_nearest_nics(const std::vector<XferkNic> &nics,
                   const std::vector<XferkAddr> &addrs,
                   const std::string &near_pci,
                   int near_node) {
    std::vector<XferkNic> best;
    size_t best_pci = 0;
    bool best_node = false;

    for (const XferkNic &nic : nics) {
        if (!xferk_nic_addr(nic, addrs)) continue;
        size_t pci = near_pci.empty() || nic.pci.empty() ? 0 : common_components(nic.pci, near_pci);
        bool node = near_node >= 0 && nic.numa_node == near_node;
        if (!best.empty() && (pci < best_pci || (pci == best_pci && node < best_node))) continue;
        if (best.empty() || pci > best_pci || node > best_node) best.clear();
        best_pci = pci;
        best_node = node;
        best.push_back(nic);
    }
    return best;
}
