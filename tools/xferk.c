// SPDX-License-Identifier: GPL-2.0
/*
 * xferk: the operator's view of the loaded module (man/xferk.8).
 *
 *   xferk [status|peers|ops|quarantine|queue|stats] [--json] [--watch N]
 *   xferk stats --format=prometheus
 *
 * status and stats read sysfs (/sys/module/xferk, /sys/class/misc/xferk)
 * and, for status, the device's XFERK_IOC_INFO; peers, ops, quarantine
 * and queue read the module's debugfs tables (/sys/kernel/debug/xferk).
 * The debugfs tables are for people, not an ABI: a table with a header
 * line is parsed by its header, so a new column is shown without a
 * change here. Output is an aligned table, or one JSON object (--json);
 * stats also in Prometheus's text format, with the per-peer numbers of
 * debugfs peers, for a textfile collector.
 *
 * Exit status: 0 ok, 1 something could not be read (module not loaded,
 * debugfs not mounted or not readable), 2 usage.
 *
 * XFERK_ROOT, when set, is prepended to every /sys path (a test reads a
 * tree it made); the device is always /dev/xferk.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include "libxferk.h"

#define MODULE_DIR	"/sys/module/xferk"
#define SYSFS_DIR	"/sys/class/misc/xferk"
#define DEBUGFS_MNT	"/sys/kernel/debug"
#define DEBUGFS_DIR	DEBUGFS_MNT "/xferk"

#define EXIT_OK		0
#define EXIT_ERROR	1
#define EXIT_USAGE	2

#define TABLE_MAX	(64 << 20)	/* bytes read of one debugfs table */
#define VALUE_MAX	8192		/* bytes read of one sysfs file */
#define MAX_COLS	64		/* columns of one table */
#define WIDTH_MAX	64		/* a text column's alignment width */
#define WATCH_MAX	86400		/* seconds between two --watch rounds */
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
/* A metric name: a sysfs file name with a prefix and a suffix. */
#define METRIC_MAX	(NAME_MAX + 64)

static const char *root = "";	/* XFERK_ROOT */
static bool json;
static bool prometheus;		/* stats --format=prometheus */
static int key_width;		/* text mode: width of put_*()'s key column */
static bool json_comma;		/* JSON: a value precedes, the next needs ',' */
static volatile sig_atomic_t interrupted;

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "xferk: out of memory\n");
		exit(EXIT_ERROR);
	}
	return p;
}

/* @rel under XFERK_ROOT into @buf; false if it does not fit. */
static bool path_of(char *buf, size_t size, const char *rel)
{
	int n = snprintf(buf, size, "%s%s", root, rel);

	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "xferk: path too long: %s%s\n", root, rel);
		return false;
	}
	return true;
}

static bool exists(const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	return path_of(path, sizeof(path), rel) && stat(path, &st) == 0;
}

/* A file's contents, NUL-terminated; at most max bytes of it. */
struct text {
	char *buf;
	size_t len;
	bool truncated;
};

/*
 * Reads @path into @t, up to @max bytes (sysfs and debugfs files report
 * no size). Control characters but newline and tab become '?': the text
 * is one C string and is safe to print on a terminal.
 * Returns 0 or a negative errno; @t holds nothing on error.
 */
static int read_text(const char *path, size_t max, struct text *t)
{
	size_t cap = 4096, i;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	*t = (struct text) {};
	if (fd < 0)
		return -errno;
	t->buf = xrealloc(NULL, cap + 1);
	for (;;) {
		if (t->len == cap) {
			if (cap >= max) {
				t->truncated = true;
				break;
			}
			cap = cap * 2 < max ? cap * 2 : max;
			t->buf = xrealloc(t->buf, cap + 1);
		}
		n = read(fd, t->buf + t->len, cap - t->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			free(t->buf);
			*t = (struct text) {};
			return n;
		}
		if (n == 0)
			break;
		t->len += n;
	}
	close(fd);
	for (i = 0; i < t->len; i++) {
		unsigned char c = t->buf[i];

		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			t->buf[i] = '?';
	}
	t->buf[t->len] = '\0';
	return 0;
}

/*
 * A sysfs file's value, its surrounding whitespace removed, into @buf.
 * Returns 0 or a negative errno.
 */
static int read_value(const char *rel, char *buf, size_t size)
{
	char path[PATH_MAX];
	struct text t;
	char *s, *e;
	int ret;

	if (!path_of(path, sizeof(path), rel))
		return -ENAMETOOLONG;
	ret = read_text(path, VALUE_MAX, &t);
	if (ret)
		return ret;
	for (s = t.buf; *s && strchr(" \t\n", *s); s++)
		;
	for (e = s + strlen(s); e > s && strchr(" \t\n", e[-1]); e--)
		;
	*e = '\0';
	snprintf(buf, size, "%s", s);
	free(t.buf);
	return 0;
}

/* A JSON number as written: -?(0|[1-9][0-9]*), at most 20 digits. */
static bool is_number(const char *s, size_t len)
{
	size_t i = 0;

	if (len && s[0] == '-')
		i++;
	if (i == len || len - i > 20 || (s[i] == '0' && len - i > 1))
		return false;
	for (; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/*
 * Length of the well-formed UTF-8 sequence at @s (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0.
 */
static unsigned int utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	unsigned int n, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/*
 * @s as a JSON string: quote, backslash and control characters escaped,
 * a byte that is not part of well-formed UTF-8 replaced by U+FFFD.
 */
static void json_string(const char *s)
{
	unsigned int n;

	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c >= 0x80) {
			n = utf8_len((const unsigned char *)s);
			if (n) {
				fwrite(s, 1, n, stdout);
				s += n - 1;
			} else {
				fputs("\\ufffd", stdout);
			}
		} else if (c == '"' || c == '\\') {
			printf("\\%c", c);
		} else if (c == '\n') {
			fputs("\\n", stdout);
		} else if (c == '\t') {
			fputs("\\t", stdout);
		} else if (c < 0x20 || c == 0x7f) {
			printf("\\u%04x", c);
		} else {
			putchar(c);
		}
	}
	putchar('"');
}

/* JSON: the separator and key of the next member (no key: an element). */
static void json_key(const char *key)
{
	if (json_comma)
		putchar(',');
	json_comma = true;
	if (key) {
		json_string(key);
		putchar(':');
	}
}

/* JSON: opens an object or array ('{' or '['), as member @key. */
static void json_open(const char *key, char c)
{
	json_key(key);
	putchar(c);
	json_comma = false;
}

static void json_close(char c)
{
	putchar(c);
	json_comma = true;
}

/* A token as a JSON number if it is one, else as a string. */
static void json_token(const char *key, const char *tok)
{
	json_key(key);
	if (is_number(tok, strlen(tok)))
		fputs(tok, stdout);
	else
		json_string(tok);
}

/*
 * A sysfs value: a number, several numbers separated by spaces (a
 * histogram: a JSON array), or a string.
 */
static void json_value(const char *key, const char *val)
{
	const char *p = val;
	size_t n, count = 0;

	for (;;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		n = strcspn(p, " ");
		if (!is_number(p, n)) {
			json_token(key, val);
			return;
		}
		count++;
		p += n;
	}
	if (count == 1) {
		json_token(key, val);
		return;
	}
	json_open(key, '[');
	for (p = val; *p; p += n) {
		while (*p == ' ')
			p++;
		n = strcspn(p, " ");
		if (n) {
			json_key(NULL);
			fwrite(p, 1, n, stdout);
		}
	}
	json_close(']');
}

/*
 * A named value, in text mode a "key value" line, in JSON a member; the
 * variants give the JSON type.
 */
static void put_value(const char *key, const char *val)
{
	if (json)
		json_value(key, val);
	else
		printf("%-*s %s\n", key_width, key, val);
}

static void put_str(const char *key, const char *val)
{
	if (json) {
		json_key(key);
		json_string(val);
	} else {
		printf("%-*s %s\n", key_width, key, val);
	}
}

static void put_bool(const char *key, bool val)
{
	if (json) {
		json_key(key);
		fputs(val ? "true" : "false", stdout);
	} else {
		printf("%-*s %s\n", key_width, key, val ? "yes" : "no");
	}
}

static void put_num(const char *key, unsigned long long val)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", val);
	put_value(key, buf);
}

/* Words separated by spaces: a JSON array of strings. */
static void put_words(const char *key, const char *words)
{
	const char *p;
	size_t n;

	if (!json) {
		printf("%-*s %s\n", key_width, key, *words ? words : "-");
		return;
	}
	json_open(key, '[');
	for (p = words; *p; p += n) {
		char word[256];

		while (*p == ' ')
			p++;
		n = strcspn(p, " ");
		if (!n)
			continue;
		snprintf(word, sizeof(word), "%.*s", (int)n, p);
		json_key(NULL);
		json_string(word);
	}
	json_close(']');
}

/*
 * A table of records, each a list of (key, value) pairs pointing into
 * text the caller keeps. Its columns are every key seen, in the order
 * first seen; a record need not have all of them.
 */
struct kv {
	const char *key;
	const char *val;
};

struct table {
	const char *cols[MAX_COLS];
	unsigned int ncols;
	bool cols_cut;		/* keys beyond MAX_COLS were dropped */
	struct kv *kv;
	size_t nkv, kv_cap;
	size_t *start;		/* record i: kv[start[i]] to kv[start[i + 1]] */
	size_t nrec, rec_cap;
};

static void table_free(struct table *t)
{
	free(t->kv);
	free(t->start);
	*t = (struct table) {};
}

static void table_begin_record(struct table *t)
{
	if (t->nrec + 2 > t->rec_cap) {
		t->rec_cap = t->rec_cap ? 2 * t->rec_cap : 64;
		t->start = xrealloc(t->start, t->rec_cap * sizeof(*t->start));
	}
	t->start[t->nrec++] = t->nkv;
	t->start[t->nrec] = t->nkv;
}

/* Adds column @key unless it exists; false if there is no room for it. */
static bool table_add_col(struct table *t, const char *key)
{
	unsigned int i;

	for (i = 0; i < t->ncols && strcmp(t->cols[i], key); i++)
		;
	if (i < t->ncols)
		return true;
	if (t->ncols == MAX_COLS) {
		t->cols_cut = true;
		return false;
	}
	t->cols[t->ncols++] = key;
	return true;
}

/* Adds (key, val) to the last record. */
static void table_add(struct table *t, const char *key, const char *val)
{
	if (!table_add_col(t, key))
		return;
	if (t->nkv == t->kv_cap) {
		t->kv_cap = t->kv_cap ? 2 * t->kv_cap : 256;
		t->kv = xrealloc(t->kv, t->kv_cap * sizeof(*t->kv));
	}
	t->kv[t->nkv++] = (struct kv) { key, val };
	t->start[t->nrec] = t->nkv;
}

/* Record @r's value of column @c, or NULL. */
static const char *table_get(const struct table *t, size_t r, unsigned int c)
{
	size_t i;

	for (i = t->start[r]; i < t->start[r + 1]; i++)
		if (!strcmp(t->kv[i].key, t->cols[c]))
			return t->kv[i].val;
	return NULL;
}

/*
 * Text: columns aligned, numeric ones (and their names) to the right, "-"
 * where a record has no value. JSON: member @name, an array of one object
 * per record.
 */
static void table_print(const char *name, const struct table *t)
{
	size_t width[MAX_COLS], r;
	bool numeric[MAX_COLS];
	unsigned int c;

	if (json) {
		json_open(name, '[');
		for (r = 0; r < t->nrec; r++) {
			size_t i;

			json_open(NULL, '{');
			for (i = t->start[r]; i < t->start[r + 1]; i++)
				json_token(t->kv[i].key, t->kv[i].val);
			json_close('}');
		}
		json_close(']');
		return;
	}
	for (c = 0; c < t->ncols; c++) {
		width[c] = strlen(t->cols[c]);
		if (width[c] > WIDTH_MAX)
			width[c] = WIDTH_MAX;
		numeric[c] = true;
		for (r = 0; r < t->nrec; r++) {
			const char *v = table_get(t, r, c);
			size_t n = v ? strlen(v) : 1;

			if (n > width[c] && n <= WIDTH_MAX)
				width[c] = n;
			if (v && !is_number(v, n))
				numeric[c] = false;
		}
	}
	for (r = 0; r <= t->nrec; r++) {
		for (c = 0; c < t->ncols; c++) {
			const char *v = r ? table_get(t, r - 1, c) : t->cols[c];
			bool last = c + 1 == t->ncols;

			if (!v)
				v = "-";
			if (numeric[c])
				printf("%*s", (int)width[c], v);
			else
				printf("%-*s", last ? 0 : (int)width[c], v);
			putchar(last ? '\n' : ' ');
		}
	}
}

/*
 * Splits @line at spaces and tabs into at most MAX_COLS tokens; sets
 * t->cols_cut if there were more.
 */
static unsigned int split(struct table *t, char *line, char **tok)
{
	unsigned int n = 0;
	char *save, *p;

	for (p = strtok_r(line, " \t", &save); p;
	     p = strtok_r(NULL, " \t", &save)) {
		if (n == MAX_COLS) {
			t->cols_cut = true;
			break;
		}
		tok[n++] = p;
	}
	return n;
}

/*
 * A "header line + rows" table (debugfs ops, peers, quarantine): the
 * header names the columns; a row's fields beyond the header's are
 * named col<N> (1-based).
 */
static void parse_rows(char *text, struct table *t)
{
	static char extra[MAX_COLS][16];
	char *header[MAX_COLS], *tok[MAX_COLS], *line, *save;
	unsigned int nh = 0, n, i;

	for (i = 0; i < MAX_COLS; i++)
		snprintf(extra[i], sizeof(extra[i]), "col%u", i + 1);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		n = split(t, line, nh ? tok : header);
		if (!n)
			continue;
		if (!nh) {
			for (nh = 0; nh < n; nh++)
				table_add_col(t, header[nh]);
			continue;
		}
		table_begin_record(t);
		for (i = 0; i < n; i++)
			table_add(t, i < nh ? header[i] : extra[i], tok[i]);
	}
}

/*
 * One line of the debugfs queue file: "KIND NAME [STATE] KEY VALUE...",
 * a record with KIND=NAME, state=STATE (when the remaining tokens are
 * odd in number) and each KEY=VALUE. @parent's (KIND, NAME) pairs come
 * first: a class names its device, a queued op its device and class.
 */
static void queue_record(struct table *t, char **tok, unsigned int n,
			 char **parent, unsigned int nparent)
{
	unsigned int i;

	table_begin_record(t);
	for (i = 0; i + 1 < nparent; i += 2)
		table_add(t, parent[i], parent[i + 1]);
	table_add(t, tok[0], tok[1]);
	i = 2;
	if ((n - i) % 2)
		table_add(t, "state", tok[i++]);
	for (; i + 1 < n; i += 2)
		table_add(t, tok[i], tok[i + 1]);
}

/* debugfs queue: the per-device queues, their classes and queued ops. */
struct queue_view {
	struct table top;	/* "KEY VALUE" lines at the top: bypass */
	struct table devices;
	struct table classes;
	struct table ops;
};

/*
 * Its lines, by indentation: "device NAME ..." (none), " class NAME ..."
 * (one space), "  pid PID STATE ..." (two); "KEY VALUE" at the top.
 */
static void parse_queue(char *text, struct queue_view *q)
{
	char *tok[MAX_COLS], *dev[2] = {}, *cls[4] = {}, *line, *save;
	unsigned int n, depth;

	table_begin_record(&q->top);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		depth = strspn(line, " ");
		n = split(&q->top, line, tok);
		if (n < 2)
			continue;
		if (depth == 0 && n == 2) {
			table_add(&q->top, tok[0], tok[1]);
		} else if (depth == 0) {
			dev[0] = tok[0];
			dev[1] = tok[1];
			cls[0] = NULL;
			queue_record(&q->devices, tok, n, NULL, 0);
		} else if (depth == 1 && dev[0]) {
			cls[0] = dev[0];
			cls[1] = dev[1];
			cls[2] = tok[0];
			cls[3] = tok[1];
			queue_record(&q->classes, tok, n, dev, 2);
		} else if (cls[0]) {
			queue_record(&q->ops, tok, n, cls, 4);
		}
	}
}

static void queue_free(struct queue_view *q)
{
	table_free(&q->top);
	table_free(&q->devices);
	table_free(&q->classes);
	table_free(&q->ops);
}

/* Why a debugfs table could not be opened (@err a negative errno). */
static void debugfs_why(int err, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	struct statfs sfs;

	if (err == -EACCES || err == -EPERM) {
		snprintf(buf, size, "cannot read %s/%s: %s (debugfs is readable by root only)",
			 DEBUGFS_DIR, name, strerror(-err));
	} else if (err != -ENOENT) {
		snprintf(buf, size, "cannot read %s/%s: %s", DEBUGFS_DIR,
			 name, strerror(-err));
	} else if (exists(DEBUGFS_DIR)) {
		snprintf(buf, size, "%s/%s does not exist: the module has no such table",
			 DEBUGFS_DIR, name);
	} else if (path_of(path, sizeof(path), DEBUGFS_MNT) &&
		   (statfs(path, &sfs) || sfs.f_type != DEBUGFS_MAGIC)) {
		snprintf(buf, size, "debugfs is not mounted at %s (mount -t debugfs none %s)",
			 DEBUGFS_MNT, DEBUGFS_MNT);
	} else {
		snprintf(buf, size, "%s does not exist (module not loaded?)",
			 DEBUGFS_DIR);
	}
}

/*
 * Reads debugfs table @name into @t; 0, or a negative errno and @why
 * (when not NULL) says what went wrong.
 */
static int debugfs_read(const char *name, struct text *t, char *why,
			size_t why_size)
{
	char rel[128], path[PATH_MAX];
	int ret;

	snprintf(rel, sizeof(rel), "%s/%s", DEBUGFS_DIR, name);
	if (!path_of(path, sizeof(path), rel))
		return -ENAMETOOLONG;
	ret = read_text(path, TABLE_MAX, t);
	if (ret && why)
		debugfs_why(ret, name, why, why_size);
	if (!ret && t->truncated)
		fprintf(stderr, "xferk: %s: only the first %d MiB are shown\n",
			path, TABLE_MAX >> 20);
	return ret;
}

/* debugfs_read(), the reason on stderr. */
static int debugfs_read_or_say(const char *name, struct text *t)
{
	char why[PATH_MAX + 128];
	int ret = debugfs_read(name, t, why, sizeof(why));

	if (ret)
		fprintf(stderr, "xferk: %s\n", why);
	return ret;
}

/* Puts the rows of debugfs table @name as @key; false if unreadable. */
static bool put_rows(const char *key, const char *name)
{
	struct table t = {};
	struct text text;

	if (debugfs_read_or_say(name, &text))
		return false;
	parse_rows(text.buf, &t);
	put_num(key, t.nrec);
	table_free(&t);
	free(text.buf);
	return true;
}

static void warn_cut(const char *name, bool cut)
{
	if (cut)
		fprintf(stderr, "xferk: %s: only the first %d columns are shown\n",
			name, MAX_COLS);
}

/* Commands peers, ops, quarantine: one debugfs "header + rows" table. */
static int show_rows(const char *name)
{
	struct table t = {};
	struct text text;

	if (debugfs_read_or_say(name, &text))
		return EXIT_ERROR;
	parse_rows(text.buf, &t);
	warn_cut(name, t.cols_cut);
	table_print(name, &t);
	table_free(&t);
	free(text.buf);
	return EXIT_OK;
}

static int cmd_peers(void)
{
	return show_rows("peers");
}

static int cmd_ops(void)
{
	return show_rows("ops");
}

static int cmd_quarantine(void)
{
	return show_rows("quarantine");
}

static int cmd_queue(void)
{
	struct queue_view q = {};
	struct text text;
	size_t i;

	if (debugfs_read_or_say("queue", &text))
		return EXIT_ERROR;
	parse_queue(text.buf, &q);
	warn_cut("queue", q.top.cols_cut || q.devices.cols_cut ||
		 q.classes.cols_cut || q.ops.cols_cut);
	if (json) {
		for (i = 0; i < q.top.nkv; i++)
			json_token(q.top.kv[i].key, q.top.kv[i].val);
	} else {
		for (i = 0; i < q.top.nkv; i++)
			printf("%s %s\n", q.top.kv[i].key, q.top.kv[i].val);
		printf("\ndevices:\n");
	}
	table_print("devices", &q.devices);
	if (!json)
		printf("\nclasses:\n");
	table_print("classes", &q.classes);
	if (!json)
		printf("\nqueued ops:\n");
	table_print("ops", &q.ops);
	queue_free(&q);
	free(text.buf);
	return EXIT_OK;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Every file of sysfs group @group (stats, queue) as "group/name value";
 * in JSON an object @group. Returns EXIT_OK or EXIT_ERROR.
 */
static int show_group(const char *group)
{
	char rel[PATH_MAX], path[PATH_MAX], key[512], val[VALUE_MAX];
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *d;
	int ret = EXIT_OK, err;
	DIR *dir;

	snprintf(rel, sizeof(rel), "%s/%s", SYSFS_DIR, group);
	if (!path_of(path, sizeof(path), rel))
		return EXIT_ERROR;
	dir = opendir(path);
	if (!dir) {
		fprintf(stderr, "xferk: %s: %s\n", path, strerror(errno));
		return EXIT_ERROR;
	}
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = xrealloc(names, cap * sizeof(*names));
		}
		names[n] = strdup(d->d_name);
		if (!names[n++]) {
			fprintf(stderr, "xferk: out of memory\n");
			exit(EXIT_ERROR);
		}
	}
	closedir(dir);
	qsort(names, n, sizeof(*names), compare_names);
	if (json)
		json_open(group, '{');
	for (i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "%s/%s/%s", SYSFS_DIR, group,
			 names[i]);
		err = read_value(rel, val, sizeof(val));
		if (err) {
			fprintf(stderr, "xferk: %s%s: %s\n", root, rel,
				strerror(-err));
			ret = EXIT_ERROR;
		} else if (json) {
			put_value(names[i], val);
		} else {
			snprintf(key, sizeof(key), "%s/%s", group, names[i]);
			put_value(key, val);
		}
		free(names[i]);
	}
	free(names);
	if (json)
		json_close('}');
	return ret;
}

/* Prometheus label value @s, escaped (backslash, quote, newline). */
static void prom_label(const char *name, const char *s)
{
	printf("%s=\"", name);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			printf("\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", stdout);
		else
			putchar(*s);
	}
	putchar('"');
}

static void prom_type(const char *metric, bool counter)
{
	printf("# TYPE %s %s\n", metric, counter ? "counter" : "gauge");
}

/* sysfs stats/ files that say how much there is now, not how often. */
static const char *const stats_gauges[] = {
	"ops_live", "pinned_pages", "quarantined_pages", "regions",
	"dmabuf_regions", "peers_connected", "exports", "uring_parked",
	"close_ack_ns_max",
};

/* queue/ files that count since the module loaded. */
static const char *const queue_counters[] = {
	"enqueued", "dispatched", "completed", "cancelled", "aged",
	"rejects_queued_ops", "rejects_queued_bytes", "rejects_file_ops",
	"rejects_file_bytes",
};

static const char *const prio_classes[] = {
	"normal", "critical", "bulk", "internal",
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static bool listed(const char *name, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(name, list[i]))
			return true;
	return false;
}

/* Is @val a decimal number Prometheus can take? */
static bool prom_number(const char *val)
{
	return *val && is_number(val, strlen(val));
}

/*
 * A queue/ file: per-class ones (depth_CLASS, bytes_CLASS, weight_CLASS)
 * as one metric with a class label, the log2 histograms as counters per
 * bucket (lo_us, hi_us), the rest as xferk_queue_NAME.
 */
static void prom_queue(const char *name, char *val)
{
	static char family[METRIC_MAX];	/* of the last per-class file */
	char metric[METRIC_MAX], *tok, *save;
	const char *cls;
	unsigned int b = 0;
	size_t i, len;

	if (strstr(name, "_hist_us")) {
		len = strlen(name) - strlen("_hist_us");
		snprintf(metric, sizeof(metric), "xferk_queue_%.*s_us_bucket_total",
			 (int)len, name);
		prom_type(metric, true);
		for (tok = strtok_r(val, " ", &save); tok;
		     tok = strtok_r(NULL, " ", &save), b++)
			if (prom_number(tok))
				printf("%s{lo_us=\"%llu\",hi_us=\"%llu\"} %s\n",
				       metric, 1ULL << b, 2ULL << b, tok);
		return;
	}
	if (!prom_number(val))
		return;
	for (i = 0; i < ARRAY_SIZE(prio_classes); i++) {
		cls = strrchr(name, '_');
		if (cls && !strcmp(cls + 1, prio_classes[i]))
			break;
	}
	if (i < ARRAY_SIZE(prio_classes)) {
		snprintf(metric, sizeof(metric), "xferk_queue_%.*s",
			 (int)(cls - name), name);
		/* Files come sorted: a family's classes are together. */
		if (strcmp(metric, family)) {
			prom_type(metric, false);
			snprintf(family, sizeof(family), "%s", metric);
		}
		printf("%s{", metric);
		prom_label("class", prio_classes[i]);
		printf("} %s\n", val);
		return;
	}
	i = listed(name, queue_counters, ARRAY_SIZE(queue_counters));
	snprintf(metric, sizeof(metric), "xferk_queue_%s%s", name,
		 i ? "_total" : "");
	prom_type(metric, i);
	printf("%s %s\n", metric, val);
}

/* Numeric columns of debugfs peers, and whether each counts events. */
static const struct {
	const char *col;
	bool counter;
} peer_metrics[] = {
	{ "outstanding", false }, { "qps", false }, { "qps_live", false },
	{ "revokes_unanswered", false }, { "answers_owed", false },
	{ "window_bytes", false }, { "window_limit", false },
	{ "notify_uncredited", false }, { "notify_owed", false },
	{ "attempts", true }, { "reconnects", true }, { "reposted", true },
};

/* A peer row's identifying labels: id, transport, side, peer. */
static void prom_peer_labels(const struct table *t, size_t r)
{
	static const char *const keys[] = { "id", "transport", "side", "peer" };
	unsigned int c, k;
	const char *v;

	putchar('{');
	for (k = 0; k < ARRAY_SIZE(keys); k++) {
		for (c = 0; c < t->ncols && strcmp(t->cols[c], keys[k]); c++)
			;
		v = c < t->ncols ? table_get(t, r, c) : NULL;
		if (k)
			putchar(',');
		prom_label(keys[k], v ? v : "");
	}
}

/*
 * Per connection (debugfs peers): xferk_peer_info{...,state} 1, and each
 * of peer_metrics as xferk_peer_COL. EXIT_ERROR if debugfs is unreadable.
 */
static int prom_peers(void)
{
	struct table t = {};
	struct text text;
	unsigned int c, state = MAX_COLS;
	const char *v;
	size_t m, r;

	if (debugfs_read_or_say("peers", &text))
		return EXIT_ERROR;
	parse_rows(text.buf, &t);
	for (c = 0; c < t.ncols; c++)
		if (!strcmp(t.cols[c], "state"))
			state = c;
	prom_type("xferk_peer_info", false);
	for (r = 0; r < t.nrec; r++) {
		fputs("xferk_peer_info", stdout);
		prom_peer_labels(&t, r);
		v = state < t.ncols ? table_get(&t, r, state) : NULL;
		putchar(',');
		prom_label("state", v ? v : "");
		puts("} 1");
	}
	for (m = 0; m < ARRAY_SIZE(peer_metrics); m++) {
		for (c = 0; c < t.ncols && strcmp(t.cols[c], peer_metrics[m].col); c++)
			;
		if (c == t.ncols)
			continue;
		printf("# TYPE xferk_peer_%s%s %s\n", peer_metrics[m].col,
		       peer_metrics[m].counter ? "_total" : "",
		       peer_metrics[m].counter ? "counter" : "gauge");
		for (r = 0; r < t.nrec; r++) {
			v = table_get(&t, r, c);
			if (!v || !prom_number(v))
				continue;
			printf("xferk_peer_%s%s", peer_metrics[m].col,
			       peer_metrics[m].counter ? "_total" : "");
			prom_peer_labels(&t, r);
			printf("} %s\n", v);
		}
	}
	table_free(&t);
	free(text.buf);
	return EXIT_OK;
}

/*
 * sysfs file @name of group @group (stats: xferk_NAME, counters with
 * _total; queue: prom_queue()); false if it cannot be read.
 */
static bool prom_file(const char *group, const char *name)
{
	char rel[PATH_MAX], val[VALUE_MAX], metric[METRIC_MAX];
	bool counter;
	int err;

	snprintf(rel, sizeof(rel), "%s/%s/%s", SYSFS_DIR, group, name);
	err = read_value(rel, val, sizeof(val));
	if (err) {
		fprintf(stderr, "xferk: %s%s: %s\n", root, rel, strerror(-err));
		return false;
	}
	if (!strcmp(group, "queue")) {
		prom_queue(name, val);
	} else if (prom_number(val)) {
		counter = !listed(name, stats_gauges, ARRAY_SIZE(stats_gauges));
		snprintf(metric, sizeof(metric), "xferk_%s%s", name,
			 counter && !ends_with(name, "_total") ? "_total" : "");
		prom_type(metric, counter);
		printf("%s %s\n", metric, val);
	}
	return true;
}

/* stats --format=prometheus: stats/ and queue/, then prom_peers(). */
static int prom_stats(void)
{
	static const char *const groups[] = { "stats", "queue" };
	char rel[PATH_MAX], path[PATH_MAX];
	struct dirent **names;
	int ret = EXIT_OK, n, i;
	size_t g;

	for (g = 0; g < ARRAY_SIZE(groups); g++) {
		snprintf(rel, sizeof(rel), "%s/%s", SYSFS_DIR, groups[g]);
		if (!path_of(path, sizeof(path), rel))
			return EXIT_ERROR;
		n = scandir(path, &names, NULL, alphasort);
		if (n < 0) {
			fprintf(stderr, "xferk: %s: %s\n", path, strerror(errno));
			return EXIT_ERROR;
		}
		for (i = 0; i < n; i++) {
			if (names[i]->d_name[0] != '.' &&
			    !prom_file(groups[g], names[i]->d_name))
				ret = EXIT_ERROR;
			free(names[i]);
		}
		free(names);
	}
	return prom_peers() ? EXIT_ERROR : ret;
}

static int cmd_stats(void)
{
	int ret;

	if (prometheus)
		return prom_stats();
	key_width = 32;
	ret = show_group("stats");
	return show_group("queue") ? EXIT_ERROR : ret;
}

static const char *const feature_names[] = {
	"info", "datapath", "null_peer", "cancel", "uring", "queue",
	"sessions", "windows", "groups", "notify", "rails", "qps", "dmabuf",
	"poll", "window_edges",
};

/* The XFERK_FEAT_* names of @features, bitN for bits this tool predates. */
static void feature_words(unsigned long long features, char *buf, size_t size)
{
	size_t len = 0;
	unsigned int bit;

	buf[0] = '\0';
	for (bit = 0; bit < 64 && len < size; bit++) {
		if (!(features & (1ULL << bit)))
			continue;
		if (bit < ARRAY_SIZE(feature_names))
			len += snprintf(buf + len, size - len, "%s%s",
					len ? " " : "", feature_names[bit]);
		else
			len += snprintf(buf + len, size - len, "%sbit%u",
					len ? " " : "", bit);
	}
}

/* Puts sysfs file @rel as @key if it exists; false if it cannot be read. */
static bool put_sysfs(const char *key, const char *rel)
{
	char val[VALUE_MAX];
	int err = read_value(rel, val, sizeof(val));

	if (err == -ENOENT)
		return true;
	if (err) {
		fprintf(stderr, "xferk: %s%s: %s\n", root, rel, strerror(-err));
		return false;
	}
	put_value(key, val);
	return true;
}

/* The counters status shows, from /sys/class/misc/xferk/stats. */
static const char *const status_counters[] = {
	"peers_connected", "ops_live", "ops_orphaned", "regions", "exports",
	"pinned_pages", "quarantined_pages", "ops_submitted", "ops_succeeded",
	"ops_failed", "ops_timed_out", "bytes_read", "bytes_written",
	"quarantine_events", "qp_errors",
};

/* The devices that have an admission queue (debugfs queue), space-separated. */
static int queue_devices(char *buf, size_t size)
{
	struct queue_view q = {};
	struct text text;
	size_t r, len = 0;
	int ret = debugfs_read("queue", &text, NULL, 0);

	if (ret)
		return ret;
	parse_queue(text.buf, &q);
	buf[0] = '\0';
	for (r = 0; r < q.devices.nrec && len < size; r++)
		len += snprintf(buf + len, size - len, "%s%s", len ? " " : "",
				q.devices.kv[q.devices.start[r]].val);
	queue_free(&q);
	free(text.buf);
	return 0;
}

static int cmd_status(void)
{
	char val[VALUE_MAX], rel[PATH_MAX], words[1024], why[PATH_MAX + 128];
	unsigned long long features;
	int ret = EXIT_OK, err;
	struct xferk *x;
	size_t i;

	key_width = 24;
	put_bool("loaded", true);
	if (!put_sysfs("refcnt", MODULE_DIR "/refcnt") ||
	    !put_sysfs("abi_version", SYSFS_DIR "/abi_version"))
		ret = EXIT_ERROR;
	err = read_value(SYSFS_DIR "/features", val, sizeof(val));
	if (err) {
		fprintf(stderr, "xferk: %s%s/features: %s\n", root, SYSFS_DIR,
			strerror(-err));
		ret = EXIT_ERROR;
	} else {
		put_str("features", val);
		features = strtoull(val, NULL, 16);
		feature_words(features, words, sizeof(words));
		put_words("feature_names", words);
	}
	err = xferk_open(&x);
	if (err) {
		snprintf(val, sizeof(val), "%s: %s", XFERK_DEVICE_PATH,
			 strerror(-err));
		put_str("ioctl_error", val);
	} else {
		put_num("ioctl_abi_version", xferk_abi_version(x));
		snprintf(val, sizeof(val), "0x%llx",
			 (unsigned long long)xferk_features(x));
		put_str("ioctl_features", val);
		xferk_close(x);
	}
	if (!put_sysfs("listen_addr", MODULE_DIR "/parameters/listen_addr") ||
	    !put_sysfs("listen_port", MODULE_DIR "/parameters/listen_port") ||
	    !put_sysfs("quarantine_limit_bytes",
		       SYSFS_DIR "/quarantine_limit_bytes"))
		ret = EXIT_ERROR;
	for (i = 0; i < ARRAY_SIZE(status_counters); i++) {
		snprintf(rel, sizeof(rel), "%s/stats/%s", SYSFS_DIR,
			 status_counters[i]);
		if (!put_sysfs(status_counters[i], rel))
			ret = EXIT_ERROR;
	}
	err = queue_devices(words, sizeof(words));
	put_bool("debugfs", !err);
	if (err) {
		debugfs_why(err, "queue", why, sizeof(why));
		put_str("debugfs_error", why);
		return ret;
	}
	put_words("devices", words);
	if (!put_rows("connections", "peers") || !put_rows("ops", "ops") ||
	    !put_rows("quarantine_entries", "quarantine"))
		ret = EXIT_ERROR;
	return ret;
}

static const struct command {
	const char *name;
	int (*run)(void);
} commands[] = {
	{ "status", cmd_status },
	{ "peers", cmd_peers },
	{ "ops", cmd_ops },
	{ "quarantine", cmd_quarantine },
	{ "queue", cmd_queue },
	{ "stats", cmd_stats },
};

/* One round of @cmd: checks that the module is loaded, then runs it. */
static int run_once(const struct command *cmd)
{
	int ret;

	if (!exists(MODULE_DIR)) {
		fprintf(stderr, "xferk: the xferk module is not loaded (no %s%s)\n",
			root, MODULE_DIR);
		return EXIT_ERROR;
	}
	if (!exists(SYSFS_DIR)) {
		fprintf(stderr, "xferk: %s%s does not exist\n", root, SYSFS_DIR);
		return EXIT_ERROR;
	}
	if (json) {
		json_comma = false;
		json_open(NULL, '{');
	}
	ret = cmd->run();
	if (json) {
		json_close('}');
		putchar('\n');
	}
	return ret;
}

static void on_signal(int sig)
{
	interrupted = 1;
}

/* Runs @cmd every @secs seconds until SIGINT; the last round's status. */
static int watch(const struct command *cmd, unsigned int secs)
{
	struct sigaction sa = { .sa_handler = on_signal };
	bool tty = isatty(STDOUT_FILENO);
	struct timespec ts;
	int ret = EXIT_OK;

	/* No SA_RESTART: the signal ends the sleep. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!interrupted) {
		if (tty)
			fputs("\033[H\033[2J", stdout);
		ret = run_once(cmd);
		fflush(stdout);
		ts = (struct timespec) { .tv_sec = secs };
		while (!interrupted && nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xferk [COMMAND] [--json] [--watch N]\n"
		"commands (default status):\n"
		"  status      module, ABI version and features, devices, key counters\n"
		"  peers       connections (debugfs peers)\n"
		"  ops         live ops (debugfs ops)\n"
		"  quarantine  quarantined ops and regions (debugfs quarantine)\n"
		"  queue       the admission queue of each device (debugfs queue)\n"
		"  stats       every sysfs counter (stats/, queue/)\n"
		"options:\n"
		"  -j, --json      one JSON object (--format=json)\n"
		"  -f, --format F  text, json, or prometheus (stats only: Prometheus's\n"
		"                  text format, per-peer numbers included)\n"
		"  -w, --watch N   repeat every N seconds until interrupted\n"
		"  -h, --help      this text\n"
		"exit status: 0 ok, 1 cannot read (module not loaded, no debugfs), 2 usage\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "format", required_argument, NULL, 'f' },
		{ "watch", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const struct command *cmd = &commands[0];
	unsigned long secs = 0;
	const char *env;
	char *end;
	size_t i;
	int c;

	while ((c = getopt_long(argc, argv, "jf:w:h", options, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'f':
			json = !strcmp(optarg, "json");
			prometheus = !strcmp(optarg, "prometheus");
			if (!json && !prometheus && strcmp(optarg, "text")) {
				fprintf(stderr, "xferk: --format is text, json or prometheus\n");
				return EXIT_USAGE;
			}
			break;
		case 'w':
			errno = 0;
			secs = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' ||
			    secs < 1 || secs > WATCH_MAX) {
				fprintf(stderr, "xferk: --watch takes seconds, 1 to %d\n",
					WATCH_MAX);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "xferk: one command at most\n");
		usage(stderr);
		return EXIT_USAGE;
	}
	if (optind < argc) {
		for (i = 0; i < ARRAY_SIZE(commands) &&
		     strcmp(commands[i].name, argv[optind]); i++)
			;
		if (i == ARRAY_SIZE(commands)) {
			fprintf(stderr, "xferk: unknown command '%s'\n",
				argv[optind]);
			usage(stderr);
			return EXIT_USAGE;
		}
		cmd = &commands[i];
	}
	if (prometheus && (strcmp(cmd->name, "stats") || secs)) {
		fprintf(stderr, "xferk: --format=prometheus is for stats, once\n");
		return EXIT_USAGE;
	}
	env = getenv("XFERK_ROOT");
	if (env)
		root = env;
	return secs ? watch(cmd, secs) : run_once(cmd);
}
