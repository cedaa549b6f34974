// SPDX-License-Identifier: GPL-2.0
/*
 * The session and path state machines' tables (kmod/conn_state.h has the
 * diagrams). Verbs-free.
 */
#include <linux/bits.h>
#include <linux/kernel.h>
#include <kunit/visibility.h>

#include "conn_state.h"

#define S(x)	BIT(XFERK_CONN_##x)

static const u32 xferk_conn_transitions[XFERK_CONN_NR_STATES] = {
	[XFERK_CONN_CONNECTING] = S(UP) | S(DOWN),
	[XFERK_CONN_UP] = S(RECONNECTING) | S(DOWN),
	[XFERK_CONN_RECONNECTING] = S(UP) | S(DOWN),
	[XFERK_CONN_DOWN] = S(CLOSED),
	[XFERK_CONN_CLOSED] = 0,
};

static const char *const xferk_conn_state_names[XFERK_CONN_NR_STATES] = {
	[XFERK_CONN_CONNECTING] = "connecting",
	[XFERK_CONN_UP] = "up",
	[XFERK_CONN_RECONNECTING] = "reconnecting",
	[XFERK_CONN_DOWN] = "down",
	[XFERK_CONN_CLOSED] = "closed",
};

/* Does @table (of @nr states, a bit per allowed target) allow @from -> @to? */
static bool table_allows(const u32 *table, int nr, int from, int to)
{
	return from >= 0 && from < nr && to >= 0 && to < nr &&
	       (table[from] & BIT(to));
}

/* @state's name in @names (of @nr states), "?" out of range. */
static const char *table_name(const char *const *names, int nr, int state)
{
	return state >= 0 && state < nr ? names[state] : "?";
}

/* May a session in state @from go to state @to? */
bool xferk_conn_state_allowed(int from, int to)
{
	return table_allows(xferk_conn_transitions, XFERK_CONN_NR_STATES,
			    from, to);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_conn_state_allowed);

const char *xferk_conn_state_name(int state)
{
	return table_name(xferk_conn_state_names, XFERK_CONN_NR_STATES, state);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_conn_state_name);

/* The XFERK_CONN_STATE_* that CONN_QUERY reports for @state. */
int xferk_conn_state_uapi(int state)
{
	return state == XFERK_CONN_CLOSED ? XFERK_CONN_STATE_DOWN : state;
}
EXPORT_SYMBOL_IF_KUNIT(xferk_conn_state_uapi);

static const u32 xferk_path_transitions[XFERK_PATH_NR_STATES] = {
	[XFERK_PATH_NONE] = BIT(XFERK_PATH_LIVE),
	[XFERK_PATH_LIVE] = BIT(XFERK_PATH_DEAD),
	[XFERK_PATH_DEAD] = BIT(XFERK_PATH_NONE),
};

static const char *const xferk_path_state_names[XFERK_PATH_NR_STATES] = {
	[XFERK_PATH_NONE] = "none",
	[XFERK_PATH_LIVE] = "live",
	[XFERK_PATH_DEAD] = "dead",
};

/* May a path in state @from go to state @to? */
bool xferk_path_state_allowed(int from, int to)
{
	return table_allows(xferk_path_transitions, XFERK_PATH_NR_STATES,
			    from, to);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_path_state_allowed);

const char *xferk_path_state_name(int state)
{
	return table_name(xferk_path_state_names, XFERK_PATH_NR_STATES, state);
}
EXPORT_SYMBOL_IF_KUNIT(xferk_path_state_name);
