// SPDX-License-Identifier: GPL-2.0
/*
 * A self-contained interactive flame graph (SVG with its own script: zoom on
 * click, search, reset), laid out the way flamegraph.pl does it: root at the
 * bottom, children sorted by name, width proportional to weight, frames
 * narrower than MIN_WIDTH_PX left out so that huge profiles stay small.
 *
 * The tree is built from the samples directly (comm, user frames root to
 * leaf, kernel frames), merging siblings of the same name and kind.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exporter.h"
#include "util.h"

#define IMAGE_WIDTH	1200
#define FRAME_HEIGHT	16
#define FONT_SIZE	12
#define FONT_WIDTH	0.59	/* average glyph width / font size, Verdana */
#define XPAD		10
#define YPAD_TOP	(FONT_SIZE * 4)	/* title and subtitle */
#define YPAD_BOTTOM	(FONT_SIZE * 2 + 10)
#define MIN_WIDTH_PX	0.1

enum frame_kind { KIND_OTHER, KIND_USER, KIND_KERNEL };

struct fnode {
	const char *name;	/* not owned, not NUL-terminated: comm is a char[16] */
	uint32_t len;
	uint8_t kind;
	uint32_t parent;
	uint32_t first_child;	/* index into svg_tree.order */
	uint32_t nchildren;
	uint64_t weight;	/* inclusive */
};

struct svg_tree {
	struct fnode *nodes;	/* [0]: "all" */
	size_t n, cap;
	uint32_t *slots;	/* (parent, kind, name) -> node index + 1 */
	size_t nslots;
	uint32_t *order;	/* non-root nodes sorted by (parent, name, kind) */
	size_t max_depth;	/* deepest frame drawn */
	double px_per_weight;
	int value_index;
	const struct profile *p;
};

static uint64_t node_hash(uint32_t parent, uint8_t kind, const char *name, uint32_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)parent << 8 | kind);
	uint32_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static size_t tree_slot(const struct svg_tree *t, uint32_t parent, uint8_t kind, const char *name, uint32_t len)
{
	size_t i = node_hash(parent, kind, name, len) & (t->nslots - 1);
	const struct fnode *e;

	for (; t->slots[i]; i = (i + 1) & (t->nslots - 1)) {
		e = &t->nodes[t->slots[i] - 1];
		if (e->parent == parent && e->kind == kind && e->len == len && memcmp(e->name, name, len) == 0)
			break;
	}
	return i;
}

static int tree_grow(struct svg_tree *t)
{
	size_t nslots = t->nslots, i;
	struct fnode *nodes;

	if (t->n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;

		nodes = realloc(t->nodes, cap * sizeof(*nodes));
		if (!nodes)
			return -ENOMEM;
		t->nodes = nodes;
		t->cap = cap;
	}
	if ((t->n + 1) * 2 < nslots)
		return 0;
	free(t->slots);
	t->nslots = nslots ? nslots * 2 : 2048;
	t->slots = calloc_logged(t->nslots, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	for (i = 1; i < t->n; i++)	/* the root is never looked up */
		t->slots[tree_slot(t, t->nodes[i].parent, t->nodes[i].kind, t->nodes[i].name, t->nodes[i].len)] = i + 1;
	return 0;
}

/* Index of the child @name of @parent, added when new; or -ENOMEM. */
static int64_t tree_child(struct svg_tree *t, uint32_t parent, uint8_t kind, const char *name, size_t maxlen)
{
	uint32_t len = name ? strnlen(name, maxlen) : 0;
	size_t slot;

	if (!len) {
		name = "[unknown]";
		len = strlen(name);
	}
	if (tree_grow(t))
		return -ENOMEM;
	slot = tree_slot(t, parent, kind, name, len);
	if (t->slots[slot])
		return t->slots[slot] - 1;
	t->nodes[t->n] = (struct fnode){ .name = name, .len = len, .kind = kind, .parent = parent };
	t->slots[slot] = t->n + 1;
	return t->n++;
}

static uint8_t frame_kind(const struct profile_frame *f)
{
	if (f->kernel)
		return KIND_KERNEL;
	return f->sym.function ? KIND_USER : KIND_OTHER;
}

/* Adds one sample's weight along its root-first path. */
static int tree_add(struct svg_tree *t, const struct profile_sample *s, uint64_t weight)
{
	int64_t node;
	uint32_t i;

	t->nodes[0].weight += weight;
	node = tree_child(t, 0, KIND_OTHER, s->comm, sizeof(s->comm));
	if (node < 0)
		return node;
	t->nodes[node].weight += weight;
	for (i = s->nkernel + s->nuser; i-- > 0;) {
		/* leaf-first frames read backwards: user root .. leaf, kernel entry .. leaf */
		const struct profile_frame *f = &s->frames[i];

		node = tree_child(t, node, frame_kind(f), f->sym.name, SIZE_MAX);
		if (node < 0)
			return node;
		t->nodes[node].weight += weight;
	}
	return 0;
}

static struct svg_tree *sort_tree;	/* qsort has no context argument */

static int cmp_children(const void *a, const void *b)
{
	const struct fnode *x = &sort_tree->nodes[*(const uint32_t *)a];
	const struct fnode *y = &sort_tree->nodes[*(const uint32_t *)b];
	uint32_t len = x->len < y->len ? x->len : y->len;
	int c;

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	c = memcmp(x->name, y->name, len);
	if (c)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return (int)x->kind - (int)y->kind;
}

/* Children of every node as a contiguous, name-sorted range of t->order. */
static int tree_index_children(struct svg_tree *t)
{
	size_t i;

	t->order = calloc_logged(t->n, sizeof(*t->order));
	if (!t->order)
		return -ENOMEM;
	for (i = 1; i < t->n; i++)
		t->order[i - 1] = i;
	sort_tree = t;
	qsort(t->order, t->n - 1, sizeof(*t->order), cmp_children);
	sort_tree = NULL;
	for (i = 0; i + 1 < t->n; i++) {
		struct fnode *parent = &t->nodes[t->nodes[t->order[i]].parent];

		if (!parent->nchildren++)
			parent->first_child = i;
	}
	return 0;
}

static int tree_build(struct svg_tree *t)
{
	const struct profile *p = t->p;
	size_t i;
	int err;

	if (tree_grow(t))
		return -ENOMEM;
	t->nodes[0] = (struct fnode){ .name = "all", .len = 3, .kind = KIND_OTHER };
	t->n = 1;
	for (i = 0; i < p->nsamples; i++) {
		uint64_t w = p->samples[i].values[t->value_index];

		if (w && (err = tree_add(t, &p->samples[i], w)))
			return err;
	}
	return tree_index_children(t);
}

static void tree_free(struct svg_tree *t)
{
	free(t->nodes);
	free(t->slots);
	free(t->order);
}

static void measure_depth(struct svg_tree *t, uint32_t node, size_t depth)
{
	const struct fnode *n = &t->nodes[node];
	uint32_t i;

	if (depth > t->max_depth)
		t->max_depth = depth;
	for (i = 0; i < n->nchildren; i++) {
		uint32_t child = t->order[n->first_child + i];

		if (t->nodes[child].weight * t->px_per_weight >= MIN_WIDTH_PX)
			measure_depth(t, child, depth + 1);
	}
}

/*
 * Writes @len bytes as XML character data: markup escaped, and what XML 1.0
 * cannot hold (control characters, invalid UTF-8) replaced with '?'.
 */
static void xml_write(FILE *f, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, seq, k;

	while (i < len) {
		unsigned char c = u[i];

		switch (c) {
		case '&': fputs("&amp;", f); i++; continue;
		case '<': fputs("&lt;", f); i++; continue;
		case '>': fputs("&gt;", f); i++; continue;
		case '"': fputs("&quot;", f); i++; continue;
		case '\'': fputs("&apos;", f); i++; continue;
		}
		if (c < 0x80) {
			fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
			i++;
			continue;
		}
		seq = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
		if (c >= 0xf5)
			seq = 0;
		for (k = 1; seq && k < seq; k++)
			if (i + k >= len || (u[i + k] & 0xc0) != 0x80)
				seq = 0;
		/* overlong 3/4-byte forms, surrogates and > U+10FFFF */
		if ((seq == 3 && ((c == 0xe0 && u[i + 1] < 0xa0) || (c == 0xed && u[i + 1] >= 0xa0))) ||
		    (seq == 4 && ((c == 0xf0 && u[i + 1] < 0x90) || (c == 0xf4 && u[i + 1] >= 0x90))))
			seq = 0;
		if (!seq) {
			fputc('?', f);
			i++;
			continue;
		}
		fwrite(u + i, 1, seq, f);
		i += seq;
	}
}

static void xml_puts(FILE *f, const char *s)
{
	xml_write(f, s, strlen(s));
}

static void format_weight(const struct profile *p, int idx, uint64_t w, char *buf, size_t size)
{
	const char *type = p->value_types[idx].type ? p->value_types[idx].type : "samples";
	const char *unit = p->value_types[idx].unit ? p->value_types[idx].unit : "count";

	if (strcmp(unit, "nanoseconds") == 0)
		snprintf(buf, size, "%.2f ms", w / 1e6);
	else if (strcmp(unit, "count") == 0)
		snprintf(buf, size, "%llu %s", (unsigned long long)w, type);
	else
		snprintf(buf, size, "%llu %s", (unsigned long long)w, unit);
}

/* Hot colours for user code, aqua for the kernel, grey for comm and unknown frames. */
static void frame_color(const struct fnode *n, char *buf, size_t size)
{
	uint64_t h = node_hash(0, 0, n->name, n->len);
	double v1 = (h & 0xff) / 255.0, v2 = ((h >> 8) & 0xff) / 255.0, v3 = ((h >> 16) & 0xff) / 255.0;

	switch (n->kind) {
	case KIND_KERNEL:
		snprintf(buf, size, "rgb(%d,%d,%d)", (int)(50 + 60 * v1), (int)(165 + 55 * v2), (int)(165 + 55 * v2));
		break;
	case KIND_USER:
		snprintf(buf, size, "rgb(%d,%d,%d)", (int)(205 + 50 * v3), (int)(230 * v1), (int)(55 * v2));
		break;
	default:
		snprintf(buf, size, "rgb(%d,%d,%d)", (int)(160 + 40 * v1), (int)(160 + 40 * v1), (int)(160 + 40 * v1));
		break;
	}
}

static void write_frame(FILE *f, struct svg_tree *t, const struct fnode *n, double x, double width, size_t depth)
{
	double y2 = YPAD_TOP + (t->max_depth + 1 - depth) * FRAME_HEIGHT;
	size_t chars = width / (FONT_SIZE * FONT_WIDTH), shown = n->len;
	char weight[64], color[32];

	format_weight(t->p, t->value_index, n->weight, weight, sizeof(weight));
	frame_color(n, color, sizeof(color));
	fputs("<g><title>", f);
	xml_write(f, n->name, n->len);
	fprintf(f, " (%s, %.2f%%)</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\" ry=\"2\"/>",
		weight, 100.0 * n->weight / t->nodes[0].weight, x, y2 - FRAME_HEIGHT + 1, width,
		FRAME_HEIGHT - 1, color);
	fprintf(f, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y2 - 4.5);
	if (chars >= 3) {
		if (shown > chars) {
			/* cut at a character boundary, then mark the cut */
			shown = chars - 2;
			while (shown && ((unsigned char)n->name[shown] & 0xc0) == 0x80)
				shown--;
		}
		xml_write(f, n->name, shown);
		if (shown < n->len)
			fputs("..", f);
	}
	fputs("</text></g>\n", f);
}

static void write_subtree(FILE *f, struct svg_tree *t, uint32_t node, uint64_t start, size_t depth)
{
	const struct fnode *n = &t->nodes[node];
	uint32_t i;

	write_frame(f, t, n, XPAD + start * t->px_per_weight, n->weight * t->px_per_weight, depth);
	for (i = 0; i < n->nchildren; i++) {
		uint32_t child = t->order[n->first_child + i];

		if (t->nodes[child].weight * t->px_per_weight >= MIN_WIDTH_PX)
			write_subtree(f, t, child, start, depth + 1);
		start += t->nodes[child].weight;
	}
}

/*
 * Zoom, search and reset; the frames are the <g> children of #frames.
 * write_header() opens the script and defines the layout constants.
 */
static const char svg_script[] =
"var frames, details, matched, resetbtn, rootw = 0, searchterm = null;\n"
"function rect(g) { return g.getElementsByTagName('rect')[0]; }\n"
"function label(g) { return g.getElementsByTagName('title')[0].textContent; }\n"
"function fname(g) { var t = label(g), i = t.lastIndexOf(' ('); return i < 0 ? t : t.substring(0, i); }\n"
"function fit(g, x, w) {\n"
"  var r = rect(g), t = g.getElementsByTagName('text')[0], name = fname(g);\n"
"  var chars = Math.floor(w / (FONT * FONTW));\n"
"  r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', w.toFixed(2));\n"
"  t.setAttribute('x', (x + 3).toFixed(2));\n"
"  t.textContent = chars < 3 ? '' : name.length <= chars ? name : name.substring(0, chars - 2) + '..';\n"
"}\n"
"function each(fn) { var gs = frames.getElementsByTagName('g'); for (var i = 0; i < gs.length; i++) fn(gs[i]); }\n"
"function zoom(z) {\n"
"  var zr = rect(z), zx = zr.ox, zw = zr.ow, zy = zr.oy, ratio = FULL / zw, eps = 0.05;\n"
"  each(function (g) {\n"
"    var r = rect(g), x = r.ox, w = r.ow;\n"
"    if (r.oy > zy && x <= zx + eps && x + w >= zx + zw - eps) {\n"
"      g.style.display = ''; g.style.opacity = '0.6'; fit(g, XPAD, FULL);\n"
"    } else if (r.oy <= zy && x >= zx - eps && x + w <= zx + zw + eps) {\n"
"      g.style.display = ''; g.style.opacity = ''; fit(g, XPAD + (x - zx) * ratio, w * ratio);\n"
"    } else {\n"
"      g.style.display = 'none';\n"
"    }\n"
"  });\n"
"  resetbtn.style.display = '';\n"
"}\n"
"function unzoom() {\n"
"  each(function (g) { var r = rect(g); g.style.display = ''; g.style.opacity = ''; fit(g, r.ox, r.ow); });\n"
"  resetbtn.style.display = 'none';\n"
"}\n"
"function search(term) {\n"
"  var re, spans = [], covered = 0, end = -1;\n"
"  searchterm = term || null;\n"
"  if (term) {\n"
"    try { re = new RegExp(term); } catch (e) { alert('Bad regular expression: ' + e.message); searchterm = null; }\n"
"  }\n"
"  each(function (g) {\n"
"    var r = rect(g);\n"
"    if (re && re.test(fname(g))) { r.setAttribute('fill', 'rgb(230,0,230)'); spans.push([r.ox, r.ox + r.ow]); }\n"
"    else r.setAttribute('fill', r.ofill);\n"
"  });\n"
"  /* nested matches cover the same width once */\n"
"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
"  spans.forEach(function (s) {\n"
"    if (s[1] <= end) return;\n"
"    covered += s[1] - Math.max(s[0], end); end = s[1];\n"
"  });\n"
"  matched.textContent = re ? 'Matched: ' + (rootw ? 100 * covered / rootw : 0).toFixed(1) + '%' : '';\n"
"}\n"
"function ask() {\n"
"  var term = prompt('Search for (regular expression):', searchterm || '');\n"
"  if (term !== null) search(term);\n"
"}\n"
"function init() {\n"
"  frames = document.getElementById('frames');\n"
"  details = document.getElementById('details');\n"
"  matched = document.getElementById('matched');\n"
"  resetbtn = document.getElementById('unzoom');\n"
"  each(function (g) {\n"
"    var r = rect(g);\n"
"    r.ox = +r.getAttribute('x'); r.ow = +r.getAttribute('width'); r.oy = +r.getAttribute('y');\n"
"    r.ofill = r.getAttribute('fill');\n"
"    if (r.ow > rootw) rootw = r.ow;\n"
"    g.onclick = function () { zoom(g); };\n"
"    g.onmouseover = function () { details.textContent = label(g); };\n"
"    g.onmouseout = function () { details.textContent = ' '; };\n"
"  });\n"
"  resetbtn.onclick = unzoom;\n"
"  document.getElementById('search').onclick = ask;\n"
"  window.addEventListener('keydown', function (e) {\n"
"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); ask(); }\n"
"    else if (e.key === 'Escape') { unzoom(); search(null); }\n"
"  });\n"
"}\n"
"window.addEventListener('load', init);\n"
"]]></script>\n";

static void write_header(FILE *f, struct svg_tree *t, int height)
{
	const struct profile *p = t->p;
	const struct value_type *vt = &p->value_types[t->value_index];
	char total[64];

	format_weight(p, t->value_index, t->nodes[0].weight, total, sizeof(total));
	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n", IMAGE_WIDTH, height, IMAGE_WIDTH, height);
	fputs("<style type=\"text/css\"><![CDATA[\n"
	      "text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
	      "#title { font-size: 17px; text-anchor: middle; }\n"
	      "#subtitle { fill: rgb(90,90,90); text-anchor: middle; }\n"
	      "#matched { text-anchor: end; }\n"
	      "#frames > g:hover > rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
	      "#frames > g, .button { cursor: pointer; }\n"
	      "]]></style>\n", f);
	fprintf(f, "<script type=\"text/ecmascript\"><![CDATA[\n'use strict';\n"
		"var XPAD = %d, FULL = %d, FONT = %d, FONTW = %g;\n", XPAD, IMAGE_WIDTH - 2 * XPAD, FONT_SIZE, FONT_WIDTH);
	fputs(svg_script, f);
	fprintf(f, "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
		"<stop stop-color=\"#eeeeee\" offset=\"5%%\"/><stop stop-color=\"#eeeeb0\" offset=\"95%%\"/>"
		"</linearGradient></defs>\n"
		"<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"url(#background)\"/>\n",
		IMAGE_WIDTH, height);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"%d\">", IMAGE_WIDTH / 2, FONT_SIZE * 2);
	xml_puts(f, p->title ? p->title : p->kind ? p->kind : "Profile");
	fputs(" flame graph</text>\n", f);
	fprintf(f, "<text id=\"subtitle\" x=\"%d\" y=\"%d\">weight: ", IMAGE_WIDTH / 2, FONT_SIZE * 2 + 14);
	xml_puts(f, vt->type ? vt->type : "samples");
	fputs(" (", f);
	xml_puts(f, vt->unit ? vt->unit : "count");
	fputs("), total ", f);
	xml_puts(f, total);
	fputs(" - click to zoom, Ctrl-F to search, Esc to reset</text>\n", f);
	fprintf(f, "<text id=\"unzoom\" class=\"button\" x=\"%d\" y=\"%d\" style=\"display: none\">Reset Zoom</text>\n",
		XPAD, FONT_SIZE * 2);
	fprintf(f, "<text id=\"search\" class=\"button\" x=\"%d\" y=\"%d\">Search</text>\n",
		IMAGE_WIDTH - XPAD - 100, FONT_SIZE * 2);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", XPAD, height - YPAD_BOTTOM / 2);
	fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%d\"></text>\n", IMAGE_WIDTH - XPAD, height - YPAD_BOTTOM / 2);
}

static void write_svg_file(FILE *f, struct svg_tree *t)
{
	int height;

	if (t->nodes[0].weight)
		t->px_per_weight = (double)(IMAGE_WIDTH - 2 * XPAD) / t->nodes[0].weight;
	measure_depth(t, 0, 0);
	height = (t->max_depth + 1) * FRAME_HEIGHT + YPAD_TOP + YPAD_BOTTOM;
	write_header(f, t, height);
	fputs("<g id=\"frames\">\n", f);
	if (t->nodes[0].weight)
		write_subtree(f, t, 0, 0, 0);
	fputs("</g>\n</svg>\n", f);
}

static int svg_write(const struct profile *p, const char *path, const struct export_opts *opts)
{
	struct svg_tree t = { .p = p };
	FILE *f = NULL;
	int err;

	t.value_index = export_value_index(p, opts, path);
	if (t.value_index < 0)
		return t.value_index;
	err = tree_build(&t);
	if (err) {
		log_error("cannot write %s: %s", path, strerror(-err));
		goto out;
	}
	f = export_open(path, &err);
	if (!f)
		goto out;
	write_svg_file(f, &t);
	err = export_close(f, path);
out:
	tree_free(&t);
	return err;
}

static const char *const svg_suffixes[] = { ".svg", NULL };

const struct exporter exporter_svg = {
	.name = "svg",
	.suffixes = svg_suffixes,
	.write = svg_write,
};
