// SPDX-License-Identifier: GPL-2.0
/* The tracepoints' definitions (kmod/trace.h declares them). */
#define CREATE_TRACE_POINTS
#include "trace.h"
