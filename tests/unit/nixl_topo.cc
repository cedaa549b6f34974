// SPDX-License-Identifier: GPL-2.0
// The NIXL backend's choice of RDMA devices (libxferk/nixl/plugin/xferk_topo.h) on
// a made-up sysfs tree: two PCI root complexes, a GPU and a NIC under one
// PCIe switch (NUMA node 0), a NIC on the other root complex (node 1), a
// NIC without an address, an InfiniBand NIC (its IPoIB device) and a
// soft-RoCE device on a virtual network device. Exit 0 pass, 1 fail.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include "expect.h"
#include "xferk_topo.h"

namespace fs = std::filesystem;

static void
write_file(const fs::path &p, const std::string &text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
}

static const char *kSwitch = "pci0000:00/0000:00:01.0/0000:01:00.0";
static const std::string kGpu = std::string(kSwitch) + "/0000:02:08.0/0000:65:00.0";
static const std::string kNic0 = std::string(kSwitch) + "/0000:02:10.0/0000:66:00.0";
static const std::string kNic1 = "pci0000:80/0000:80:01.0/0000:81:00.0";
static const std::string kNic2 = "pci0000:80/0000:80:02.0/0000:82:00.0";
static const std::string kNic3 = "pci0000:80/0000:80:03.0/0000:83:00.0";

// An RDMA device @name on the device at @dev (under devices/), with port 1
// on network device @netdev.
// (@roce false: an InfiniBand port, which has no ndevs; its IPoIB network
// device is its PCI device's.)
static void
add_nic(const fs::path &root, const std::string &name, const std::string &dev, int node,
        const std::string &netdev, bool roce = true) {
    fs::path d = root / "devices" / dev;
    fs::create_directories(d);
    if (node != -2) write_file(d / "numa_node", std::to_string(node));
    fs::path ib = root / "class" / "infiniband" / name;
    fs::create_directories(ib);
    fs::create_symlink(fs::path("../../../devices") / dev, ib / "device");
    if (roce)
        write_file(ib / "ports" / "1" / "gid_attrs" / "ndevs" / "0", netdev);
    else
        fs::create_directories(d / "net" / netdev);
}

static XferkAddr
addr(const char *ifname, const char *ip, unsigned int prefix) {
    XferkAddr x;
    if (!xferk_parse_ip(ip, x)) std::abort();
    x.ifname = ifname;
    x.prefix = prefix;
    return x;
}

static std::string
names(const std::vector<XferkNic> &nics) {
    std::string s;
    for (const XferkNic &n : nics)
        s += (s.empty() ? "" : ",") + n.name;
    return s;
}

int
main() {
    char tmpl[] = "/tmp/nixl_topo.XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    fs::path root = tmpl;

    add_nic(root, "mlx5_1", kNic1, 1, "ens2");
    add_nic(root, "mlx5_0", kNic0, 0, "ens1");
    add_nic(root, "mlx5_2", kNic2, 1, "ens3"); /* no address */
    add_nic(root, "rxe0", "virtual/net/dummy0", -2, "dummy0");
    add_nic(root, "mlx5_3", kNic3, 1, "ib0", false); /* InfiniBand */
    fs::create_directories(root / "devices" / kGpu);
    fs::create_directories(root / "bus" / "pci" / "devices");
    fs::create_symlink(fs::path("../../../devices") / kGpu,
                       root / "bus" / "pci" / "devices" / "0000:65:00.0");
    write_file(root / "devices/system/node/node0/cpulist", "0-3,8");
    write_file(root / "devices/system/node/node1/cpulist", "4-7");
    write_file(root / "devices/system/node/possible", "0-1");

    std::vector<XferkAddr> addrs = {
        addr("ens1", "10.1.0.1", 16),
        addr("ens2", "10.2.0.1", 16),
        addr("dummy0", "10.3.0.1", 24),
        addr("ib0", "10.4.0.1", 16),
        addr("ens2", "fd00:2::1", 64),
        addr("ens9", "fd00:3::1", 60),
    };

    // What sysfs says of each device.
    std::vector<XferkNic> nics = xferk_scan_nics(root.string());
    EXPECT(names(nics) == "mlx5_0,mlx5_1,mlx5_2,mlx5_3,rxe0", "scanned %s",
           names(nics).c_str());
    if (nics.size() == 5) {
        EXPECT(nics[0].pci == kNic0 && nics[0].numa_node == 0 && nics[0].netdev == "ens1",
               "mlx5_0: %s node %d netdev %s", nics[0].pci.c_str(), nics[0].numa_node,
               nics[0].netdev.c_str());
        EXPECT(nics[1].pci == kNic1 && nics[1].numa_node == 1, "mlx5_1: %s node %d",
               nics[1].pci.c_str(), nics[1].numa_node);
        EXPECT(nics[3].netdev == "ib0", "mlx5_3 (InfiniBand): netdev %s",
               nics[3].netdev.c_str());
        EXPECT(nics[4].pci == "virtual/net/dummy0" && nics[4].numa_node == -1 &&
                   nics[4].netdev == "dummy0",
               "rxe0: %s node %d netdev %s", nics[4].pci.c_str(), nics[4].numa_node,
               nics[4].netdev.c_str());
    }
    EXPECT(xferk_scan_nics((root / "none").string()).empty(), "a tree without devices");

    // The NUMA node of a set of CPUs.
    EXPECT(xferk_cpus_node(root.string(), {0, 1, 8}) == 0, "CPUs 0,1,8");
    EXPECT(xferk_cpus_node(root.string(), {5}) == 1, "CPU 5");
    EXPECT(xferk_cpus_node(root.string(), {3, 4}) == -1, "CPUs of two nodes");
    EXPECT(xferk_cpus_node(root.string(), {}) == -1, "no CPUs");
    EXPECT(xferk_cpus_node(root.string(), {64}) == -1, "a CPU of no node");

    // A GPU's PCI path; a name that is not a device, or escapes.
    std::string gpu = xferk_pci_path(root.string(), "0000:65:00.0");
    EXPECT(gpu == kGpu, "GPU at %s", gpu.c_str());
    EXPECT(xferk_pci_path(root.string(), "0000:99:00.0").empty(), "no such device");
    EXPECT(xferk_pci_path(root.string(), "../../devices").empty(), "a path");
    EXPECT(xferk_pci_path(root.string(), "").empty(), "no bus id");

    // Nearest: the GPU's switch beats the NUMA node; then the node; then
    // all with an address (mlx5_2 has none).
    EXPECT(names(xferk_nearest_nics(nics, addrs, gpu, 1)) == "mlx5_0", "near the GPU: %s",
           names(xferk_nearest_nics(nics, addrs, gpu, 1)).c_str());
    EXPECT(names(xferk_nearest_nics(nics, addrs, "", 1)) == "mlx5_1,mlx5_3", "node 1: %s",
           names(xferk_nearest_nics(nics, addrs, "", 1)).c_str());
    EXPECT(names(xferk_nearest_nics(nics, addrs, "", 0)) == "mlx5_0", "node 0: %s",
           names(xferk_nearest_nics(nics, addrs, "", 0)).c_str());
    EXPECT(names(xferk_nearest_nics(nics, addrs, "", -1)) == "mlx5_0,mlx5_1,mlx5_3,rxe0",
           "anywhere: %s", names(xferk_nearest_nics(nics, addrs, "", -1)).c_str());
    EXPECT(names(xferk_nearest_nics(nics, addrs, "", 3)) == "mlx5_0,mlx5_1,mlx5_3,rxe0",
           "a node without devices: %s", names(xferk_nearest_nics(nics, addrs, "", 3)).c_str());
    EXPECT(xferk_nearest_nics(nics, {}, gpu, 0).empty(), "no addresses");

    // Addresses: a device's, the one on a peer's subnet.
    const XferkAddr *a = nics.empty() ? nullptr : xferk_nic_addr(nics[0], addrs);
    EXPECT(a && a->ip == "10.1.0.1", "mlx5_0's address");
    a = xferk_addr_on_subnet(addrs, "10.2.77.9");
    EXPECT(a && a->ip == "10.2.0.1", "10.2.77.9's subnet");
    EXPECT(!xferk_addr_on_subnet(addrs, "10.3.1.1"), "10.3.1.1 is on none");
    EXPECT(!xferk_addr_on_subnet(addrs, "not an address"), "not an address");
    a = xferk_addr_on_subnet(addrs, "fd00:2::77:9");
    EXPECT(a && a->ip == "fd00:2::1", "fd00:2::77:9's subnet");
    a = xferk_addr_on_subnet(addrs, "fd00:3:0:f::9");
    EXPECT(a && a->ip == "fd00:3::1", "fd00:3:0:f::9 is in fd00:3::/60");
    EXPECT(!xferk_addr_on_subnet(addrs, "fd00:3:0:10::1"), "fd00:3:0:10::1 is on none");
    EXPECT(!xferk_addr_on_subnet(addrs, "::ffff:10.1.0.9"), "an IPv4-mapped address is IPv6");

    // Spellings: the canonical one keys maps.
    XferkAddr p;
    EXPECT(xferk_parse_ip("FD00:0002:0::1", p) && p.ip == "fd00:2::1" && p.family == AF_INET6 &&
               p.prefix == 128,
           "FD00:0002:0::1 is %s", p.ip.c_str());
    EXPECT(xferk_parse_ip("10.1.0.1", p) && p.family == AF_INET && p.prefix == 32, "10.1.0.1");
    EXPECT(!xferk_parse_ip("fe80::1%eth0", p) && !xferk_parse_ip("10.1.0", p) &&
               !xferk_parse_ip("", p),
           "not addresses");
    const char *unreachable[] = {"0.0.0.0", "255.255.255.255", "224.0.0.1", "::", "ff02::1",
                                 "fe80::1", "127.0.0.1", "127.1.2.3", "::1"};
    for (const char *ip : unreachable)
        EXPECT(xferk_parse_ip(ip, p) && !xferk_unicast_ip(p), "%s is not unicast", ip);
    EXPECT(xferk_parse_ip("fd00:2::1", p) && xferk_unicast_ip(p) &&
               xferk_parse_ip("10.1.0.1", p) && xferk_unicast_ip(p),
           "unicast addresses");
    // /proc/net/if_inet6: flags 0x40 tentative, 0x20 deprecated, 0x01
    // temporary, 0x08 duplicate detection failed; 0x80 permanent, 0x02 nodad.
    std::set<std::string> unstable = xferk_unstable_ipv6(
        "fd000000000000000000000000000002 04 40 00 80     eth0\n"
        "fd000000000000000000000000000003 04 40 00 40     eth0\n"
        "fd000000000000000000000000000004 04 40 00 20     eth0\n"
        "fd000000000000000000000000000005 04 40 00 01     eth0\n"
        "fd000000000000000000000000000006 04 40 00 08     eth0\n"
        "fd990000000000000000000000000001 02 40 00 82   dummy0\n"
        "short line\n");
    EXPECT(unstable == std::set<std::string>({"fd00::3", "fd00::4", "fd00::5", "fd00::6"}),
           "unstable IPv6 addresses: %zu", unstable.size());
    EXPECT(xferk_canonical_ip("fd00:2::1") && !xferk_canonical_ip("fd00:2:0::1") &&
               xferk_canonical_ip("10.1.0.1") && !xferk_canonical_ip("010.1.0.1"),
           "canonical spellings");

    EXPECT(xferk_split(",a,,b,", ',') == std::vector<std::string>({"a", "b"}), "split");
    EXPECT(xferk_split("", ',').empty(), "split nothing");

    fs::remove_all(root);
    if (!failures) std::printf("device choice: all checks passed\n");
    return failures ? 1 : 0;
}
