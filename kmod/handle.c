// SPDX-License-Identifier: GPL-2.0
/* Per-file handle tables; the encoding is described in handle.h. */
#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/err.h>
#include <linux/random.h>
#include <kunit/visibility.h>

#include "handle.h"

#define H_SLOT_BITS	20
#define H_GEN_BITS	24
#define H_KIND_SHIFT	44
#define H_TAG_SHIFT	48
#define H_SLOT(h)	((u32)((h) & GENMASK_ULL(H_SLOT_BITS - 1, 0)))
#define H_KIND(h)	((u8)(((h) >> H_KIND_SHIFT) & 0xf))
#define H_TAG(h)	((u16)((h) >> H_TAG_SHIFT))

static atomic_t xferk_next_tag = ATOMIC_INIT(0);
static atomic_t xferk_next_gen = ATOMIC_INIT(0);

void xferk_handles_init(struct xferk_handles *t)
{
	u16 tag;

	xa_init_flags(&t->xa, XA_FLAGS_ALLOC1);
	do {
		tag = (u16)atomic_inc_return(&xferk_next_tag);
	} while (!tag);
	t->tag = tag;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handles_init);

/* The table must be empty (see xferk_handle_pop()). */
void xferk_handles_destroy(struct xferk_handles *t)
{
	WARN_ON(!xa_empty(&t->xa));
	xa_destroy(&t->xa);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handles_destroy);

/**
 * xferk_handle_add() - give an object a handle in a table
 * @t: the table
 * @obj: the object; obj->handle is set on success
 * @kind: enum xferk_handle_kind
 *
 * Return: 0, -ENOMEM, or -ENOSPC when the table has 2^20 - 1 handles.
 */
int xferk_handle_add(struct xferk_handles *t, struct xferk_hobj *obj, u8 kind)
{
	u32 slot, gen;
	int ret;

	obj->kind = kind;
	obj->handle = 0;
	ret = xa_alloc(&t->xa, &slot, obj, XA_LIMIT(1, BIT(H_SLOT_BITS) - 1),
		       GFP_KERNEL);
	if (ret)
		return ret == -EBUSY ? -ENOSPC : ret;
	gen = (u32)atomic_inc_return(&xferk_next_gen) & (BIT(H_GEN_BITS) - 1);
	/* Lookups compare the whole handle: publish it under the xa lock. */
	xa_lock(&t->xa);
	obj->handle = (u64)t->tag << H_TAG_SHIFT | (u64)kind << H_KIND_SHIFT |
		      (u64)gen << H_SLOT_BITS | slot;
	xa_unlock(&t->xa);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handle_add);

static struct xferk_hobj *handle_find(struct xferk_handles *t, u64 handle,
				      u8 kind)
{
	struct xferk_hobj *obj;

	if (!handle || H_KIND(handle) != kind || !H_SLOT(handle))
		return ERR_PTR(-EINVAL);
	if (H_TAG(handle) != t->tag)
		return ERR_PTR(-EBADF);
	obj = xa_load(&t->xa, H_SLOT(handle));
	if (!obj || obj->handle != handle)
		return ERR_PTR(-ESTALE);
	return obj;
}

/**
 * xferk_handle_lookup() - the object a handle names
 * @t: the table
 * @handle: the caller's handle
 * @kind: the kind the caller expects
 *
 * Return: the object, or ERR_PTR(-EINVAL) for a malformed handle or one of
 * another kind, -EBADF for another file's handle, -ESTALE for a handle
 * whose object is gone.
 */
struct xferk_hobj *xferk_handle_lookup(struct xferk_handles *t, u64 handle,
				       u8 kind)
{
	struct xferk_hobj *obj;

	xa_lock(&t->xa);
	obj = handle_find(t, handle, kind);
	xa_unlock(&t->xa);
	return obj;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handle_lookup);

/**
 * xferk_handle_remove() - take a handle out of its table
 * @t: the table
 * @handle: the caller's handle
 * @kind: the kind the caller expects
 *
 * Return: the object, whose handle is now 0, or an error as for
 * xferk_handle_lookup().
 */
struct xferk_hobj *xferk_handle_remove(struct xferk_handles *t, u64 handle,
				       u8 kind)
{
	struct xferk_hobj *obj;

	xa_lock(&t->xa);
	obj = handle_find(t, handle, kind);
	if (!IS_ERR(obj)) {
		__xa_erase(&t->xa, H_SLOT(handle));
		obj->handle = 0;
	}
	xa_unlock(&t->xa);
	return obj;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handle_remove);

/**
 * xferk_handle_pop() - take any one object out of a table, for teardown
 * @t: the table
 *
 * Return: the object (its handle now 0), or NULL when the table is empty.
 */
struct xferk_hobj *xferk_handle_pop(struct xferk_handles *t)
{
	struct xferk_hobj *obj;
	unsigned long slot = 0;

	xa_lock(&t->xa);
	obj = xa_find(&t->xa, &slot, ULONG_MAX, XA_PRESENT);
	if (obj) {
		__xa_erase(&t->xa, slot);
		obj->handle = 0;
	}
	xa_unlock(&t->xa);
	return obj;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handle_pop);
