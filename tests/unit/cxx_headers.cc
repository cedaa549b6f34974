// SPDX-License-Identifier: GPL-2.0
// The public headers compile as C++ (the NIXL plugin includes them), and
// their layouts there are what C sees (uapi_layout checks C). Exit 0.
#include <cstddef>
#include <cstdio>
#include "libxferk.h"
#include "xferk_uring.h"

int main()
{
	static_assert(sizeof(struct xferk_event) == 32, "xferk_event");
	static_assert(offsetof(struct xferk_event, export_handle) == 0, "export_handle");
	static_assert(sizeof(struct xferk_frag) == 48, "xferk_frag");
	std::printf("libxferk.h, xferk_uring.h, xferk.h compile as C++\n");
	return 0;
}
