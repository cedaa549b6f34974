// SPDX-License-Identifier: Apache-2.0
// Which RDMA devices an engine uses (xferk_topo.h).
#include "xferk_topo.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ifaddrs.h>
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
} // namespace

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

std::vector<XferkAddr>
xferk_host_addrs() {
    std::vector<XferkAddr> addrs;
    struct ifaddrs *ifaddr;

    if (getifaddrs(&ifaddr)) return addrs;
    for (struct ifaddrs *ifa = ifaddr; ifa; ifa = ifa->ifa_next) {
        char buf[INET_ADDRSTRLEN];
        if (!ifa->ifa_addr || !ifa->ifa_netmask || ifa->ifa_addr->sa_family != AF_INET ||
            (ifa->ifa_flags & IFF_LOOPBACK) || !(ifa->ifa_flags & IFF_UP))
            continue;
        const auto *sin = (const struct sockaddr_in *)ifa->ifa_addr;
        const auto *mask = (const struct sockaddr_in *)ifa->ifa_netmask;
        if (!inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf))) continue;
        XferkAddr a;
        a.ifname = ifa->ifa_name;
        a.ip = buf;
        a.addr = ntohl(sin->sin_addr.s_addr);
        a.mask = ntohl(mask->sin_addr.s_addr);
        addrs.push_back(a);
    }
    freeifaddrs(ifaddr);
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
    struct in_addr in;
    if (inet_pton(AF_INET, ip.c_str(), &in) != 1) return nullptr;
    uint32_t peer = ntohl(in.s_addr);
    for (const XferkAddr &a : addrs)
        if ((a.addr & a.mask) == (peer & a.mask)) return &a;
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
