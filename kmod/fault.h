/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bottom layer (models and resources): the fault injection knobs
 * (Documentation/fault-injection.md). Plain data: each is defined in the
 * file whose fault it injects (xferk_fault_connect_version in debugfs.c),
 * and debugfs.c lets tests set them.
 */
#ifndef XFERK_FAULT_H
#define XFERK_FAULT_H

#include <linux/atomic.h>
#include <linux/types.h>

extern u16 xferk_fault_connect_version;
extern atomic_t xferk_fault_swallow;
extern atomic_t xferk_fault_delay;
extern u32 xferk_fault_delay_ms;
extern atomic_t xferk_fault_fail_post;
extern atomic_t xferk_fault_fail_qp;
extern atomic_t xferk_fault_qp_error;
extern atomic_t xferk_fault_refuse_chain;
extern bool xferk_fault_no_caps;
extern atomic_t xferk_fault_ignore_revokes;
extern atomic_t xferk_fault_fail_destroy;
extern atomic_t xferk_fault_ignore_disconnects;
extern atomic_t xferk_fault_drop_published;
extern atomic_t xferk_fault_delay_registrations;

#endif /* XFERK_FAULT_H */
