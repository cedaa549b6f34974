/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NIXL's backend interface as a fingerprint of its headers. NIXL's plugin
 * API version stays 1 when the interface changes, so the plugin checks it
 * itself: meson.build fingerprints the headers it is built with
 * (xferk_interface_tool), and nixl_plugin_init() those of the NIXL that
 * loads it; install.sh those of the NIXL it installs into. Nothing here
 * depends on NIXL.
 */
#ifndef XFERK_INTERFACE_H
#define XFERK_INTERFACE_H

#include <cstdint>
#include <filesystem>

// The fingerprint of the interface the plugin is built with (a source
// meson.build generates with xferk_interface_tool).
extern const uint64_t xferk_interface_built;

// The first of the interface's headers, relative to an include directory
// (NIXL's src/api/cpp, or include/ of an install): finds that directory.
extern const char *const xferk_interface_marker;

// 64-bit FNV-1a over the bytes of the interface's headers in include_dir,
// in a fixed order; false if one cannot be read.
bool
xferk_interface_fingerprint(const std::filesystem::path &include_dir, uint64_t &fp);

#endif
