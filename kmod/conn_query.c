// SPDX-License-Identifier: GPL-2.0
/*
 * Front: XFERK_IOC_CONN_QUERY, the state of one of the file's connections
 * (struct xferk_conn_info, a snapshot).
 *
 * Locking: the file's lock keeps the handle, and with it the reference to
 * the connection, while the connection's lock gives one consistent
 * snapshot; file, then connection.
 */
#include "conn.h"
#include "conn_state.h"
#include "front.h"
#include "handle.h"

/* XFERK_IOC_CONN_QUERY: the state of one of the file's connections. */
int xferk_ioctl_conn_query(struct xferk_file *xf, union xferk_ioc_arg *arg)
{
	struct xferk_ioc_conn_query *a = &arg->conn_query;
	struct xferk_conn_info *info = &a->info;
	struct xferk_hobj *ho;
	struct xferk_conn *c;

	if (a->flags)
		return -EINVAL;
	mutex_lock(&xf->lock);
	ho = xferk_handle_lookup(&xf->handles, a->conn, XFERK_H_CONN);
	if (IS_ERR(ho)) {
		mutex_unlock(&xf->lock);
		return PTR_ERR(ho);
	}
	c = container_of(ho, struct xferk_conn_ref, hobj)->conn;
	mutex_lock(&c->lock);
	*info = (struct xferk_conn_info) {
		.state = xferk_conn_state_uapi(c->state),
		.error = c->error,
		.path_gen = c->path_gen,
		.outstanding = c->outstanding,
		.path_deaths = c->path_deaths,
		.reconnects = c->reconnects,
		.reposted = c->reposted,
		.initiator = c->active,
		.nr_qps = c->path.nr_qps,
	};
	mutex_unlock(&c->lock);
	mutex_unlock(&xf->lock);
	return 0;
}
