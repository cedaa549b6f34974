/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * xferk user API: the one header shared by xferk.ko and libxferk.
 *
 * Extensibility rules (Documentation/uapi.md has the full text):
 *  - Every command is _IOWR(XFERK_IOC_MAGIC, nr, struct). The kernel
 *    dispatches on the magic and the number; the size encoded in the
 *    command is that of the first version of the struct and is not used
 *    for anything else.
 *  - Every argument struct starts with __u32 size (bytes the caller passes,
 *    normally sizeof) and __u32 flags. All fields are naturally aligned with
 *    explicit padding, pointers travel as __u64, and the struct size is a
 *    multiple of 8.
 *  - A caller built against an older header passes a smaller size: the
 *    kernel treats the missing tail as zero. A caller built against a newer
 *    header passes a larger size: the kernel accepts it only if every byte
 *    it does not know is zero (-E2BIG otherwise). A size below the first
 *    version's size, or above XFERK_ARG_MAX_SIZE, is -EINVAL / -E2BIG.
 *  - Unknown flag bits and non-zero reserved fields are -EINVAL.
 *  - Output goes back into the first min(size, kernel size) bytes.
 *  - New fields are only ever appended; a feature bit in
 *    xferk_ioc_info.features announces each new command or field.
 */
#ifndef _UAPI_XFERK_H
#define _UAPI_XFERK_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define XFERK_DEVICE_PATH	"/dev/xferk"

/*
 * Incremented on every change of the uAPI. Additions keep old callers
 * working (see the rules above); a caller checks features, not this number,
 * before using a newer command.
 */
#define XFERK_ABI_VERSION	1

/* Largest argument struct the kernel accepts from a (future) caller. */
#define XFERK_ARG_MAX_SIZE	4096

#define XFERK_IOC_MAGIC		0xE7	/* unused in ioctl-number.rst as of 6.1 */

/* Feature bits reported in xferk_ioc_info.features. */
#define XFERK_FEAT_INFO		(1ULL << 0)	/* XFERK_IOC_INFO and these rules */

/**
 * struct xferk_ioc_info - XFERK_IOC_INFO: version and features
 * @size: in: sizeof(struct xferk_ioc_info) as the caller knows it
 * @flags: in: must be 0
 * @abi_version: out: XFERK_ABI_VERSION of the running module
 * @reserved0: must be 0
 * @features: out: XFERK_FEAT_* supported by the running module
 * @reserved: must be 0
 */
struct xferk_ioc_info {
	__u32 size;
	__u32 flags;
	__u32 abi_version;
	__u32 reserved0;
	__u64 features;
	__u64 reserved[4];
};

#define XFERK_IOC_INFO		_IOWR(XFERK_IOC_MAGIC, 0x00, struct xferk_ioc_info)

#endif /* _UAPI_XFERK_H */
