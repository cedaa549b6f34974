// SPDX-License-Identifier: GPL-2.0
/* Per-file handle tables; the encoding is described in handle.h. */
#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/err.h>
#include <linux/gfp.h>
#include <linux/random.h>
#include <kunit/visibility.h>

#include "handle.h"

#define H_SLOT_BITS	16
#define H_GEN_BITS	28
#define H_KIND_SHIFT	44
#define H_TAG_SHIFT	48
#define H_SLOT(h)	((u32)((h) & GENMASK_ULL(H_SLOT_BITS - 1, 0)))
#define H_KIND(h)	((u8)(((h) >> H_KIND_SHIFT) & 0xf))
#define H_TAG(h)	((u16)((h) >> H_TAG_SHIFT))

static_assert(BIT(H_SLOT_BITS) - 1 == XFERK_HANDLES_MAX);
static_assert(H_SLOT_BITS + H_GEN_BITS == H_KIND_SHIFT);

static atomic_t xferk_next_tag = ATOMIC_INIT(0);

void xferk_handles_init(struct xferk_handles *t)
{
	u16 tag;

	xa_init_flags(&t->xa, XA_FLAGS_ALLOC1);
	do {
		tag = (u16)atomic_inc_return(&xferk_next_tag);
	} while (!tag);
	t->tag = tag;
	/* Files that reuse a tag do not reuse each other's handles. */
	t->next_gen = get_random_u32();
	memset(t->count, 0, sizeof(t->count));
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handles_init);

/* The table must be empty (see xferk_handle_pop()). */
void xferk_handles_destroy(struct xferk_handles *t)
{
	WARN_ON(!xa_empty(&t->xa));
	xa_destroy(&t->xa);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handles_destroy);

static bool kind_valid(u8 kind)
{
	return kind && kind < XFERK_H_KINDS;
}

/**
 * xferk_handle_room() - may the table take one more handle of a kind?
 * @t: the table
 * @kind: enum xferk_handle_kind
 * @limit: most handles of @kind
 *
 * A cheap check before expensive work; xferk_handle_add() checks again.
 *
 * Return: true if there is room.
 */
bool xferk_handle_room(struct xferk_handles *t, u8 kind, u32 limit)
{
	bool room;

	if (WARN_ON_ONCE(!kind_valid(kind)))
		return false;
	xa_lock(&t->xa);
	room = t->count[kind] < limit;
	xa_unlock(&t->xa);
	return room;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handle_room);

/**
 * xferk_handle_add() - give an object a handle in a table
 * @t: the table
 * @obj: the object; obj->handle is set on success
 * @kind: enum xferk_handle_kind
 * @limit: most handles of @kind the table may hold
 *
 * The slot's memory is charged to the caller's memory cgroup (at its
 * limit: -ENOMEM, not the OOM killer).
 *
 * Return: 0, -EMFILE when the table holds @limit handles of @kind or
 * XFERK_HANDLES_MAX in all, or -ENOMEM.
 */
int xferk_handle_add(struct xferk_handles *t, struct xferk_hobj *obj, u8 kind,
		     u32 limit)
{
	u32 slot;
	int ret;

	if (WARN_ON_ONCE(!kind_valid(kind)))
		return -EINVAL;
	obj->kind = kind;
	obj->handle = 0;
	xa_lock(&t->xa);
	if (t->count[kind] >= limit) {
		xa_unlock(&t->xa);
		return -EMFILE;
	}
	ret = __xa_alloc(&t->xa, &slot, obj, XA_LIMIT(1, XFERK_HANDLES_MAX),
			 GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL);
	if (ret) {
		xa_unlock(&t->xa);
		return ret == -EBUSY ? -EMFILE : ret;
	}
	t->count[kind]++;
	/* Lookups compare the whole handle: published under the xa lock. */
	obj->handle = (u64)t->tag << H_TAG_SHIFT | (u64)kind << H_KIND_SHIFT |
		      (u64)(t->next_gen++ & (BIT(H_GEN_BITS) - 1)) << H_SLOT_BITS |
		      slot;
	xa_unlock(&t->xa);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handle_add);

static struct xferk_hobj *handle_find(struct xferk_handles *t, u64 handle,
				      u8 kind)
{
	struct xferk_hobj *obj;

	/* No file has tag 0. */
	if (!H_TAG(handle))
		return ERR_PTR(-EINVAL);
	if (H_TAG(handle) != t->tag)
		return ERR_PTR(-EBADF);
	if (H_KIND(handle) != kind || !H_SLOT(handle))
		return ERR_PTR(-EINVAL);
	obj = xa_load(&t->xa, H_SLOT(handle));
	if (!obj || obj->handle != handle)
		return ERR_PTR(-ESTALE);
	return obj;
}

/* Takes @obj out of its slot; with the xa lock. */
static void handle_erase(struct xferk_handles *t, struct xferk_hobj *obj)
{
	__xa_erase(&t->xa, H_SLOT(obj->handle));
	t->count[obj->kind]--;
	obj->handle = 0;
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
	if (!IS_ERR(obj))
		handle_erase(t, obj);
	xa_unlock(&t->xa);
	return obj;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handle_remove);

/**
 * xferk_handle_remove_obj() - take a handle out only if it names @obj
 * @t: the table
 * @handle: the handle the caller remembers for @obj
 * @obj: the object (the caller holds a reference, so no other object can
 *	live at its address)
 *
 * For a kernel-initiated release of a handle the caller may have released
 * and reused already: the handle value alone could name a newer object.
 *
 * Return: 0, or -ESTALE if @handle does not name @obj (any more).
 */
int xferk_handle_remove_obj(struct xferk_handles *t, u64 handle,
			    struct xferk_hobj *obj)
{
	int ret = -ESTALE;

	xa_lock(&t->xa);
	if (handle_find(t, handle, obj->kind) == obj) {
		handle_erase(t, obj);
		ret = 0;
	}
	xa_unlock(&t->xa);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handle_remove_obj);

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
	if (obj)
		handle_erase(t, obj);
	xa_unlock(&t->xa);
	return obj;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_handle_pop);
