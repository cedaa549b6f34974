// SPDX-License-Identifier: GPL-2.0
/*
 * Remote handles: what IMPORT makes of an export token.
 *
 * A token is a bearer capability, and every export to one peer shares that
 * connection's protection domain: a token whose key or range a tenant
 * could change would reach another tenant's memory. So a token is
 * authenticated: it carries a SipHash-2-4 MAC under the connection's token
 * key, which the two kernels derive in the handshake and never show to
 * userspace (the exporting end makes it with xferk_token_mac()). IMPORT
 * finds the local end the token names (by the id this host gave it) and
 * checks the MAC with that end's key before anything is published or
 * posted: a forged, altered or foreign token fails with EACCES. On two
 * hosts that end is the importing host's, whichever side initiated; on
 * one host (loopback) it is the end opposite the exporter's.
 *
 * A remote handle holds its session end (a reference and a use) until
 * its last chunk is done; one with an export id is on that end's list of
 * remotes, for the revokes its peer sends (revoke.c).
 */
#include <linux/nsproxy.h>
#include <linux/slab.h>
#include "conn.h"
#include "rail.h"
#include "remote.h"
#include "stats.h"
#include "wire.h"
#include "xferk.h"

/* The MAC of token @tok under session key @key: over every byte before it. */
u64 xferk_token_mac(const struct xferk_token *tok, const siphash_key_t *key)
{
	return siphash(tok, offsetof(struct xferk_token, mac), key);
}

void xferk_remote_get(struct xferk_remote *rm)
{
	kref_get(&rm->ref);
}

static void remote_release(struct kref *ref)
{
	struct xferk_remote *rm = container_of(ref, struct xferk_remote, ref);

	if (rm->id) {
		mutex_lock(&rm->conn->lock);
		list_del(&rm->conn_node);
		mutex_unlock(&rm->conn->lock);
	}
	xferk_remote_free_rails(rm);
	xferk_conn_unuse(rm->conn);
	xferk_conn_put(rm->conn);
	kfree(rm);
}

void xferk_remote_put(struct xferk_remote *rm)
{
	kref_put(&rm->ref, remote_release);
}

/*
 * The end a token names, if the token is authentic for it; with a
 * reference and a use. NULL for a forged, altered or foreign token.
 */
static struct xferk_conn *token_conn(struct xferk_conn *via,
				     const struct xferk_token *tok)
{
	struct xferk_conn *c;

	c = xferk_conn_find_importer(via, le64_to_cpu(tok->conn_id),
				     current->nsproxy->net_ns);
	if (c && le64_to_cpu(tok->mac) != xferk_token_mac(tok, &c->token_key)) {
		xferk_conn_unuse(c);
		xferk_conn_put(c);
		c = NULL;
	}
	if (!c)
		atomic64_inc(&xferk_stats.tokens_rejected);
	return c;
}

/**
 * xferk_token_well_formed() - could @tok be a token at all?
 * @tok: a token from userspace (a kernel copy)
 *
 * Return: true if its magic, version, length and access are those of a
 * token; nothing is authenticated yet (xferk_remote_create()).
 */
bool xferk_token_well_formed(const struct xferk_token *tok)
{
	return le32_to_cpu(tok->magic) == XFERK_TOKEN_MAGIC &&
	       le16_to_cpu(tok->version) == XFERK_TOKEN_VERSION &&
	       !tok->reserved0 && tok->len && le32_to_cpu(tok->access) &&
	       !(le32_to_cpu(tok->access) & ~(XFERK_ACCESS_REMOTE_READ |
					      XFERK_ACCESS_REMOTE_WRITE)) &&
	       (tok->export_id || !tok->generation);
}

/**
 * xferk_remote_create() - a remote handle for an export token
 * @tok: the token (a kernel copy), well formed (xferk_token_well_formed())
 * @via: the session the importer named (its handle held by the caller)
 *
 * The token must be authentic for the local end it names (on loopback,
 * the end opposite @via). One with an export id must be listed on that
 * end (xferk_remote_listen()) before it can be used, so a revoke finds
 * it; the caller does that.
 *
 * Return: the remote handle, with one reference, or ERR_PTR: -EACCES
 * (forged, altered or foreign: counted in stats/tokens_rejected) or
 * -ENOMEM.
 */
struct xferk_remote *xferk_remote_create(const struct xferk_token *tok,
					 struct xferk_conn *via)
{
	struct xferk_remote *rm;

	rm = kzalloc(sizeof(*rm), XFERK_GFP_USER);
	if (!rm)
		return ERR_PTR(-ENOMEM);
	kref_init(&rm->ref);
	/* Unlisted until xferk_remote_listen(); its release unlinks it. */
	INIT_LIST_HEAD(&rm->conn_node);
	rm->iova = le64_to_cpu(tok->iova);
	rm->len = le64_to_cpu(tok->len);
	rm->rkey = le32_to_cpu(tok->rkey);
	rm->access = le32_to_cpu(tok->access);
	rm->id = le64_to_cpu(tok->export_id);
	rm->gen = le64_to_cpu(tok->generation);
	rm->conn = token_conn(via, tok);
	if (!rm->conn) {
		kfree(rm);
		return ERR_PTR(-EACCES);
	}
	return rm;
}
