/* The scenario loader's YAML layer: libyaml events -> a node tree with positions, under
 * hard caps on size, depth and alias expansion, and the --set overrides applied to it. */
#include "coordinator/scenario/internal.h"

#include "chatload/units.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static struct ynode *node_new(struct scn_ctx *c, struct ytree *t, enum ynode_kind kind,
			      const char *origin)
{
	struct ynode *n = calloc(1, sizeof(*n));
	if (!n) {
		c->oom = true;
		return NULL;
	}
	n->kind = kind;
	n->origin = origin;
	n->exp_nodes = 1;
	n->next_alloc = t->all;
	t->all = n;
	return n;
}

static int kids_push(struct ynode *parent, struct ynode *kid)
{
	if (parent->n == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 4;
		struct ynode **k = realloc(parent->kids, cap * sizeof(*k));
		if (!k)
			return CL_ENOMEM;
		parent->kids = k;
		parent->cap = cap;
	}
	parent->kids[parent->n++] = kid;
	kid->refs++;
	return 0;
}

void cli_ytree_free(struct ytree *t)
{
	if (!t)
		return;
	struct ynode *n = t->all;
	while (n) {
		struct ynode *next = n->next_alloc;
		free(n->str);
		free(n->kids);
		free(n);
		n = next;
	}
	memset(t, 0, sizeof(*t));
}

bool cli_ynode_is_null(const struct ynode *n)
{
	if (!n || n->kind != YN_SCALAR || n->quoted)
		return false;
	return n->len == 0 || strcmp(n->str, "~") == 0 || strcmp(n->str, "null") == 0 ||
	       strcmp(n->str, "Null") == 0 || strcmp(n->str, "NULL") == 0;
}

/* Line and column (1-based) of byte offset off in text. */
static void offset_pos(const char *text, size_t len, size_t off, int *line, int *col)
{
	int l = 1, col_ = 1;
	for (size_t i = 0; i < off && i < len; i++) {
		if (text[i] == '\n') {
			l++;
			col_ = 1;
		} else {
			col_++;
		}
	}
	*line = l;
	*col = col_;
}

/* An error while reading: at the mark in a file, or naming the override whose value it is. */
static void perr(struct scn_ctx *c, const char *origin, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void perr(struct scn_ctx *c, const char *origin, int line, int col, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (origin)
		cli_scn_error(c, NULL, "--set %s: %s", origin, msg);
	else
		cli_scn_error_pos(c, line, col, "%s", msg);
}

#define MARK(m) (int)(m)->line + 1, (int)(m)->column + 1

/* Reports a libyaml error in the words a user can act on. */
static void report_yaml_error(struct scn_ctx *c, const yaml_parser_t *p, const char *text,
			      size_t len, const char *origin)
{
	char where[96] = "";
	int line = 0, col = 0;
	const char *problem = p->problem ? p->problem : "unknown error";

	if (p->error == YAML_READER_ERROR) {
		offset_pos(text, len, p->problem_offset, &line, &col);
		char value[32] = "";
		if (p->problem_value >= 0)
			snprintf(value, sizeof(value), " (byte 0x%02x)", p->problem_value & 0xff);
		perr(c, origin, line, col, "not a YAML text file: %s%s", problem, value);
		return;
	}
	/* the commonest YAML mistake gets its own words */
	size_t at = p->problem_mark.index;
	if (at < len && text[at] == '\t') {
		perr(c, origin, MARK(&p->problem_mark),
		     "invalid YAML: a tab cannot indent YAML (use spaces)");
		return;
	}
	if (p->context && !origin)
		snprintf(where, sizeof(where), " (%s that started at line %d, column %d)",
			 p->context, MARK(&p->context_mark));
	else if (p->context)
		snprintf(where, sizeof(where), " (%s)", p->context);
	perr(c, origin, MARK(&p->problem_mark), "invalid YAML: %s%s", problem, where);
}

struct anchor {
	char *name;
	struct ynode *node;
};

/* Counts n expanded nodes and bytes against the caps; false (with an error) past them. */
static bool budget(struct scn_ctx *c, struct ytree *t, uint64_t nodes, uint64_t bytes, bool alias,
		   const yaml_mark_t *m, const char *origin)
{
	t->total_nodes += nodes;
	t->total_bytes += bytes;
	if (t->total_nodes <= SCN_MAX_NODES && t->total_bytes <= SCN_MAX_EXPANDED_BYTES)
		return true;
	char limit[64];
	if (t->total_nodes > SCN_MAX_NODES)
		snprintf(limit, sizeof(limit), "more than %u YAML nodes", SCN_MAX_NODES);
	else
		snprintf(limit, sizeof(limit), "more than %u MiB of text",
			 SCN_MAX_EXPANDED_BYTES >> 20);
	if (alias)
		perr(c, origin, MARK(m),
		     "aliases expand the document to %s (refusing it: an alias "
		     "bomb?)",
		     limit);
	else
		perr(c, origin, MARK(m),
		     "the document has %s (refusing it; put large prompt sets "
		     "in a dataset file)",
		     limit);
	return false;
}

/* true for tags this loader understands; !!str (and the non-specific "!") force a string. */
static bool tag_ok(struct scn_ctx *c, const yaml_char_t *tag, bool *is_str, const yaml_mark_t *m,
		   const char *origin)
{
	static const char core[] = "tag:yaml.org,2002:";
	if (!tag)
		return true;
	const char *s = (const char *)tag;
	if (strcmp(s, "!") == 0 || strcmp(s, "tag:yaml.org,2002:str") == 0) {
		*is_str = true;
		return true;
	}
	if (strncmp(s, core, sizeof(core) - 1) == 0) {
		const char *k = s + sizeof(core) - 1;
		if (!strcmp(k, "int") || !strcmp(k, "float") || !strcmp(k, "bool") ||
		    !strcmp(k, "null") || !strcmp(k, "map") || !strcmp(k, "seq"))
			return true;
	}
	perr(c, origin, MARK(m), "unsupported YAML tag '%s'", s);
	return false;
}

static void set_pos(struct ynode *n, const yaml_mark_t *m, const char *origin)
{
	if (!origin) {
		n->line = (int)m->line + 1;
		n->col = (int)m->column + 1;
	}
}

/* The parse in progress: the collections open at this point and the anchors seen so far. */
struct builder {
	struct scn_ctx *c;
	struct ytree *t;
	const char *origin;
	struct ynode **root;
	struct ynode *stack[CL_SCENARIO_MAX_DEPTH + 1];
	size_t depth;
	struct anchor anchors[SCN_MAX_ANCHORS];
	size_t n_anchors;
	int docs;
};

#define STREAM_END 1 /* what an event step returns at the end of the text */

static int oom(struct scn_ctx *c)
{
	c->oom = true;
	return CL_ENOMEM;
}

static int scalar_node(struct builder *b, const yaml_event_t *ev, struct ynode **out,
		       const yaml_char_t **anchor)
{
	const yaml_mark_t *m = &ev->start_mark;
	bool is_str = false;
	if (!tag_ok(b->c, ev->data.scalar.tag, &is_str, m, b->origin))
		return CL_EPARSE;
	if (!budget(b->c, b->t, 1, ev->data.scalar.length, false, m, b->origin))
		return CL_EPARSE;
	struct ynode *n = node_new(b->c, b->t, YN_SCALAR, b->origin);
	if (!n)
		return oom(b->c);
	n->str = malloc(ev->data.scalar.length + 1);
	if (!n->str)
		return oom(b->c);
	memcpy(n->str, ev->data.scalar.value, ev->data.scalar.length);
	n->str[ev->data.scalar.length] = '\0';
	n->len = ev->data.scalar.length;
	n->exp_bytes = n->len;
	n->quoted = is_str || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
	*anchor = ev->data.scalar.anchor;
	*out = n;
	return 0;
}

static int collection_node(struct builder *b, const yaml_event_t *ev, struct ynode **out,
			   const yaml_char_t **anchor)
{
	const yaml_mark_t *m = &ev->start_mark;
	bool seq = ev->type == YAML_SEQUENCE_START_EVENT;
	const yaml_char_t *tag = seq ? ev->data.sequence_start.tag : ev->data.mapping_start.tag;
	bool is_str = false;
	/* Depth is checked as the document is read, so a hostile one stops here. */
	if (b->depth >= CL_SCENARIO_MAX_DEPTH) {
		perr(b->c, b->origin, MARK(m), "the document is nested deeper than %d levels",
		     CL_SCENARIO_MAX_DEPTH);
		return CL_EPARSE;
	}
	if (!tag_ok(b->c, tag, &is_str, m, b->origin))
		return CL_EPARSE;
	if (!budget(b->c, b->t, 1, 0, false, m, b->origin))
		return CL_EPARSE;
	if (!(*out = node_new(b->c, b->t, seq ? YN_SEQ : YN_MAP, b->origin)))
		return oom(b->c);
	*anchor = seq ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor;
	return 0;
}

/* The node an alias names, counted again against the caps (it is expanded where used). */
static int alias_node(struct builder *b, const yaml_event_t *ev, struct ynode **out)
{
	const yaml_mark_t *m = &ev->start_mark;
	const char *name = (const char *)ev->data.alias.anchor;
	struct ynode *target = NULL;
	/* YAML lets an anchor be redefined; the latest definition wins. */
	for (size_t i = b->n_anchors; i-- > 0;) {
		if (strcmp(b->anchors[i].name, name) == 0) {
			target = b->anchors[i].node;
			break;
		}
	}
	if (!target) {
		perr(b->c, b->origin, MARK(m), "unknown alias '*%s' (no '&%s' before it)", name,
		     name);
		return CL_EPARSE;
	}
	for (size_t i = 0; i < b->depth; i++) {
		if (b->stack[i] == target) {
			perr(b->c, b->origin, MARK(m),
			     "alias '*%s' refers to a node that contains it", name);
			return CL_EPARSE;
		}
	}
	if (!budget(b->c, b->t, target->exp_nodes, target->exp_bytes, true, m, b->origin))
		return CL_EPARSE;
	*out = target;
	return 0;
}

/* Puts n (fresh, or an alias's target) under the open collection, or at the root; opens it
 * when it is a fresh collection, and records its anchor. */
static int attach(struct builder *b, struct ynode *n, bool fresh, const yaml_char_t *anchor,
		  const yaml_mark_t *m)
{
	if (fresh)
		set_pos(n, m, b->origin);
	if (b->depth == 0) {
		*b->root = n;
		n->refs++;
	} else {
		struct ynode *parent = b->stack[b->depth - 1];
		if (kids_push(parent, n))
			return oom(b->c);
		/* a finished child adds its expansion now; a collection does at its end */
		if (n->kind == YN_SCALAR || !fresh) {
			parent->exp_nodes += n->exp_nodes;
			parent->exp_bytes += n->exp_bytes;
		}
	}
	if (fresh && n->kind != YN_SCALAR)
		b->stack[b->depth++] = n;
	if (anchor) {
		if (b->n_anchors == SCN_MAX_ANCHORS) {
			perr(b->c, b->origin, MARK(m), "more than %u anchors", SCN_MAX_ANCHORS);
			return CL_EPARSE;
		}
		if (!(b->anchors[b->n_anchors].name = strdup((const char *)anchor)))
			return oom(b->c);
		b->anchors[b->n_anchors++].node = n;
	}
	return 0;
}

/* One libyaml event into the tree: 0, STREAM_END, or CL_EPARSE / CL_ENOMEM (reported). */
static int take_event(struct builder *b, const yaml_event_t *ev)
{
	const yaml_mark_t *m = &ev->start_mark;
	struct ynode *n = NULL;
	const yaml_char_t *anchor = NULL;
	int rc = 0;
	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		return STREAM_END;
	case YAML_DOCUMENT_START_EVENT:
		if (++b->docs > 1) {
			perr(b->c, b->origin, MARK(m),
			     b->origin ? "the value holds more than one YAML document"
				       : "a scenario is one YAML document, but a second one "
					 "starts here");
			return CL_EPARSE;
		}
		return 0;
	case YAML_SCALAR_EVENT:
		rc = scalar_node(b, ev, &n, &anchor);
		break;
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		rc = collection_node(b, ev, &n, &anchor);
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: {
		struct ynode *done = b->stack[--b->depth];
		if (b->depth) {
			b->stack[b->depth - 1]->exp_nodes += done->exp_nodes;
			b->stack[b->depth - 1]->exp_bytes += done->exp_bytes;
		}
		return 0;
	}
	case YAML_ALIAS_EVENT:
		rc = alias_node(b, ev, &n);
		break;
	default:
		return 0;
	}
	if (rc)
		return rc;
	return attach(b, n, ev->type != YAML_ALIAS_EVENT, anchor, m);
}

int cli_ytree_parse(struct scn_ctx *c, struct ytree *t, const char *text, size_t len,
		    const char *origin, struct ynode **root)
{
	yaml_parser_t p;
	yaml_event_t ev;
	struct builder b = { .c = c, .t = t, .origin = origin, .root = root };
	int rc;

	*root = NULL;
	if (!yaml_parser_initialize(&p)) {
		c->oom = true;
		return CL_ENOMEM;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	for (;;) {
		if (!yaml_parser_parse(&p, &ev)) {
			if (p.error == YAML_MEMORY_ERROR) {
				rc = oom(c);
			} else {
				report_yaml_error(c, &p, text, len, origin);
				rc = CL_EPARSE;
			}
			break;
		}
		rc = take_event(&b, &ev);
		yaml_event_delete(&ev);
		if (rc)
			break;
	}
	if (rc == STREAM_END)
		rc = 0;
	for (size_t i = 0; i < b.n_anchors; i++)
		free(b.anchors[i].name);
	yaml_parser_delete(&p);
	if (rc == 0 && *root && cli_ynode_is_null(*root))
		*root = NULL; /* a document of only "~" or "---" is as empty as no document */
	if (rc && (t->total_nodes > SCN_MAX_NODES || t->total_bytes > SCN_MAX_EXPANDED_BYTES))
		rc = CL_ETOOBIG;
	return rc;
}

/* ---- overrides ---- */

/* A private copy of a shared node (same kids, which become shared one more time). */
static struct ynode *unshare(struct scn_ctx *c, struct ytree *t, struct ynode **slot)
{
	struct ynode *old = *slot;
	if (old->refs <= 1)
		return old;
	struct ynode *n = node_new(c, t, old->kind, old->origin);
	if (!n)
		return NULL;
	n->quoted = old->quoted;
	n->line = old->line;
	n->col = old->col;
	n->exp_nodes = old->exp_nodes;
	n->exp_bytes = old->exp_bytes;
	if (old->str && !(n->str = strdup(old->str))) {
		c->oom = true;
		return NULL;
	}
	n->len = old->len;
	for (size_t i = 0; i < old->n; i++) {
		if (kids_push(n, old->kids[i])) {
			c->oom = true;
			return NULL;
		}
	}
	old->refs--;
	n->refs = 1;
	*slot = n;
	return n;
}

static bool is_merge_key(const struct ynode *k)
{
	return k->kind == YN_SCALAR && !k->quoted && strcmp(k->str, "<<") == 0;
}

static bool key_is(const struct ynode *k, const char *name, size_t len)
{
	return k->kind == YN_SCALAR && !is_merge_key(k) && k->len == len &&
	       memcmp(k->str, name, len) == 0;
}

/* The value of key in map, looking through '<<' merges (explicit keys win). */
static struct ynode *find_merged(const struct ynode *map, const char *key, size_t len, int depth)
{
	if (depth > SCN_MAX_MERGE_DEPTH || map->kind != YN_MAP)
		return NULL;
	for (size_t i = 0; i + 1 < map->n; i += 2) {
		if (key_is(map->kids[i], key, len))
			return map->kids[i + 1];
	}
	for (size_t i = 0; i + 1 < map->n; i += 2) {
		if (!is_merge_key(map->kids[i]))
			continue;
		const struct ynode *v = map->kids[i + 1];
		if (v->kind == YN_MAP) {
			struct ynode *f = find_merged(v, key, len, depth + 1);
			if (f)
				return f;
		} else if (v->kind == YN_SEQ) {
			for (size_t j = 0; j < v->n; j++) {
				struct ynode *f = find_merged(v->kids[j], key, len, depth + 1);
				if (f)
					return f;
			}
		}
	}
	return NULL;
}

static struct ynode *scalar_new(struct scn_ctx *c, struct ytree *t, const char *s, size_t len,
				const char *origin)
{
	struct ynode *n = node_new(c, t, YN_SCALAR, origin);
	if (!n)
		return NULL;
	if (!(n->str = strndup(s, len))) {
		c->oom = true;
		return NULL;
	}
	n->len = len;
	n->exp_bytes = len;
	return n;
}

/* Appends key: value to a (private) map and returns the value's slot. */
static struct ynode **map_add(struct scn_ctx *c, struct ytree *t, struct ynode *map,
			      const char *key, size_t len, struct ynode *value, const char *origin)
{
	struct ynode *k = scalar_new(c, t, key, len, origin);
	if (!k || kids_push(map, k) || kids_push(map, value)) {
		c->oom = true;
		return NULL;
	}
	return &map->kids[map->n - 1];
}

static bool all_digits(const char *s, size_t len)
{
	if (len == 0 || len > 9)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
	}
	return true;
}

int cli_ytree_override(struct scn_ctx *c, struct ytree *t, const char *ov)
{
	const char *eq = strchr(ov, '=');
	if (!eq || eq == ov) {
		cli_scn_error(
		    c, NULL, "--set '%s': expected KEY.PATH=VALUE, e.g. stages.0.duration=30s", ov);
		return CL_EINVAL;
	}
	const char *path = ov, *path_end = eq;
	int segments = 1;
	for (const char *p = path; p < path_end; p++)
		segments += *p == '.';
	if (segments > CL_SCENARIO_MAX_DEPTH) {
		cli_scn_error(c, NULL, "--set %s: the key path is longer than %d segments", ov,
			      CL_SCENARIO_MAX_DEPTH);
		return CL_EINVAL;
	}
	for (const char *p = path; p <= path_end; p++) {
		if ((p == path_end || *p == '.') && (p == path || p[-1] == '.')) {
			cli_scn_error(c, NULL, "--set %s: empty segment in the key path", ov);
			return CL_EINVAL;
		}
	}

	struct ynode *value = NULL;
	const char *vtext = eq + 1;
	int rc = cli_ytree_parse(c, t, vtext, strlen(vtext), ov, &value);
	if (rc)
		return rc;
	if (!value && !(value = scalar_new(c, t, "", 0, ov)))
		return CL_ENOMEM;

	struct ynode **slot = &t->root;
	const char *seg = path;
	char shown[256]; /* the path walked so far, for messages */
	shown[0] = '\0';
	while (seg < path_end) {
		const char *dot = memchr(seg, '.', (size_t)(path_end - seg));
		const char *seg_end = dot ? dot : path_end;
		size_t len = (size_t)(seg_end - seg);
		bool last = seg_end == path_end;
		struct ynode *cur = unshare(c, t, slot);
		if (!cur)
			return CL_ENOMEM;

		if (cur->kind == YN_SCALAR && cli_ynode_is_null(cur) && !all_digits(seg, len)) {
			/* "simulator:" with nothing after it becomes a mapping to set keys in */
			struct ynode *m = node_new(c, t, YN_MAP, ov);
			if (!m)
				return CL_ENOMEM;
			m->line = cur->line;
			m->col = cur->col;
			cur->refs--;
			m->refs = 1;
			*slot = cur = m;
		}
		if (cur->kind == YN_MAP) {
			struct ynode **next = NULL;
			for (size_t i = 0; i + 1 < cur->n; i += 2) {
				if (key_is(cur->kids[i], seg, len))
					next = &cur->kids[i + 1];
			}
			if (!next && !last) {
				/* reached only through a '<<' merge: give this map its own entry,
				 * shared with the merged one until it is unshared below */
				struct ynode *found = find_merged(cur, seg, len, 0);
				if (!found && !(found = node_new(c, t, YN_MAP, ov)))
					return CL_ENOMEM;
				if (!(next = map_add(c, t, cur, seg, len, found, ov)))
					return CL_ENOMEM;
			}
			if (!next) {
				if (!map_add(c, t, cur, seg, len, value, ov))
					return CL_ENOMEM;
				return 0;
			}
			slot = next;
		} else if (cur->kind == YN_SEQ) {
			if (!all_digits(seg, len)) {
				cli_scn_error(
				    c, NULL,
				    "--set %s: '%s' is a list; name an entry by its index, "
				    "e.g. %s.0",
				    ov, shown[0] ? shown : "the document", shown);
				return CL_EINVAL;
			}
			size_t idx = (size_t)strtoul(seg, NULL, 10);
			if (idx >= cur->n) {
				if (strcmp(shown, "stages") == 0)
					cli_scn_error(c, NULL,
						      "--set %s: no stage %zu (the file has %zu, "
						      "numbered from 0)",
						      ov, idx, cur->n);
				else
					cli_scn_error(c, NULL,
						      "--set %s: no entry %zu in '%s' (it has %zu, "
						      "numbered from 0)",
						      ov, idx, shown, cur->n);
				return CL_EINVAL;
			}
			slot = &cur->kids[idx];
		} else {
			cli_scn_error(
			    c, NULL,
			    "--set %s: '%s' is a single value, not a mapping to set '%.*s' "
			    "in",
			    ov, shown[0] ? shown : "the document", (int)len, seg);
			return CL_EINVAL;
		}
		snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown), "%s%.*s",
			 shown[0] ? "." : "", (int)len, seg);
		if (last)
			break;
		seg = seg_end + 1;
	}
	(*slot)->refs--;
	*slot = value;
	value->refs++;
	return 0;
}
