/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NIXL's backend interface as a fingerprint of its headers. NIXL's plugin
 * API version stays 1 when the interface changes, so the plugin checks it
 * itself: meson.build fingerprints the headers it is built with
 * (xferk_interface_tool), nixl_plugin_init() those of the NIXL that loads
 * it, install.sh (through the tool) those of the NIXL it installs into.
 * Nothing here depends on NIXL.
 */
#ifndef XFERK_INTERFACE_H
#define XFERK_INTERFACE_H

#include <cstdint>
#include <filesystem>
#include <vector>

// The fingerprint of the interface the plugin is built with (a source
// meson.build generates with xferk_interface_tool).
extern const uint64_t xferk_interface_built;

// 64-bit FNV-1a over the bytes of the interface's headers in a fixed
// order, each from the first of @dirs that has it (NIXL's tree keeps them
// in two directories, an install in include/); false if one is missing
// or cannot be read.
bool
xferk_interface_fingerprint(const std::vector<std::filesystem::path> &dirs, uint64_t &fp);

// The include directory of the NIXL install whose library is @libnixl:
// <prefix>/include for <prefix>/lib/libnixl.so (or lib64) and for
// <prefix>/lib/<triplet>/libnixl.so (a directory named like
// x86_64-linux-gnu), if it holds the interface; empty if there is none.
std::filesystem::path
xferk_interface_include_dir(const std::filesystem::path &libnixl);

#endif
