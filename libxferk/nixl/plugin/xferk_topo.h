/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which RDMA devices an engine uses (Documentation/nixl.md, "Devices and
 * rails"): the devices of the host as sysfs shows them, the ones nearest a
 * GPU (by PCI path) or a NUMA node, and the IPv4 or IPv6 address xferk
 * reaches a device by (its port's network device's). Pure functions of a sysfs tree
 * and an address list, so that a host test runs them on a made-up tree;
 * nothing here depends on NIXL.
 */
#ifndef XFERK_TOPO_H
#define XFERK_TOPO_H

#include <cstdint>
#include <set>
#include <sys/socket.h>
#include <string>
#include <vector>

/* An RDMA device. */
struct XferkNic {
    std::string name;   /* class/infiniband/<name> */
    std::string pci;    /* its device's path under devices/ ("" if none) */
    int numa_node = -1; /* its device's NUMA node (-1: unknown) */
    std::string netdev; /* port 1's network device (RoCE), else the
                         * first of its PCI device's (IPoIB); "" if none */
};

/* An IPv4 or IPv6 address of a network device, and its subnet. */
struct XferkAddr {
    std::string ifname;
    std::string ip;            /* in its canonical spelling (inet_ntop) */
    int family = 0;            /* AF_INET or AF_INET6 */
    uint8_t addr[16] = {};     /* network byte order: 4 or 16 bytes used */
    unsigned int prefix = 0;   /* the subnet's prefix length, in bits */
};

/*
 * @ip (IPv4 or IPv6 text) in @out: no interface, the whole address as its
 * subnet, @out.ip its canonical spelling. False if @ip is not an address.
 */
bool
xferk_parse_ip(const std::string &ip, XferkAddr &out);

/*
 * @a is an address a peer can connect to: not unspecified (0.0.0.0, ::),
 * loopback (127.0.0.0/8, ::1), broadcast, multicast, or IPv6 link-local
 * (which needs a scope).
 */
bool
xferk_unicast_ip(const XferkAddr &a);

/*
 * @ip is an address in its canonical spelling: no other string names the
 * same address, so it can key a map.
 */
bool
xferk_canonical_ip(const std::string &ip);

/* The RDMA devices under @sysfs (normally "/sys"), by name. */
std::vector<XferkNic>
xferk_scan_nics(const std::string &sysfs);

/*
 * The addresses of the network devices that are up, not loopback: IPv4
 * before IPv6, no IPv6 link-local ones (they need a scope to be reached)
 * nor those xferk_unstable_ipv6() names.
 */
std::vector<XferkAddr>
xferk_host_addrs();

/*
 * The IPv6 addresses of @if_inet6 (the text of /proc/net/if_inet6) that are
 * not to be advertised, in canonical spelling: tentative (duplicate
 * detection not done), whose detection failed, deprecated, or temporary
 * (privacy addresses, which change).
 */
std::set<std::string>
xferk_unstable_ipv6(const std::string &if_inet6);

/*
 * The NUMA node all CPUs of @cpus (CPU numbers) belong to under @sysfs,
 * or -1 (they span nodes, or sysfs has no node directory).
 */
int
xferk_cpus_node(const std::string &sysfs, const std::vector<int> &cpus);

/* The path under devices/ of PCI device @bus_id ("0000:65:00.0"), or "". */
std::string
xferk_pci_path(const std::string &sysfs, const std::string &bus_id);

/*
 * Of @nics that have an address in @addrs, those nearest to: the PCI
 * device at @near_pci (a GPU; "" for none), by the number of PCI path
 * components they share with it (the same switch beats the same root
 * port beats the same root complex); among equals, on NUMA node
 * @near_node (-1: any). All the nearest, by name; empty if no device has
 * an address.
 */
std::vector<XferkNic>
xferk_nearest_nics(const std::vector<XferkNic> &nics,
                   const std::vector<XferkAddr> &addrs,
                   const std::string &near_pci,
                   int near_node);

/* The first address of @nic's network device in @addrs, or nullptr. */
const XferkAddr *
xferk_nic_addr(const XferkNic &nic, const std::vector<XferkAddr> &addrs);

/* The address of @addrs on the subnet of @ip (IPv4 or IPv6), or nullptr. */
const XferkAddr *
xferk_addr_on_subnet(const std::vector<XferkAddr> &addrs, const std::string &ip);

/* @s split at @sep, empty parts dropped. */
std::vector<std::string>
xferk_split(const std::string &s, char sep);

#endif
