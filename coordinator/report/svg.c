/* Inline SVG line charts for report.html: honest axes from zero, round tick values, a grid,
 * a legend and hover titles on the points; plain attributes, so the markup is valid XML. */
#include "coordinator/report/internal.h"

#include <math.h>
#include <string.h>

#define ML       64 /* margins around the plot area, px */
#define MR       16
#define MT       48
#define MB       46
#define TITLE_X  14
#define RED_MARK "#dc2626"
#define FONT     "font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif\""

/* A value a chart can place: finite and far from overflowing the axis arithmetic (a file may
 * hold 1e308, and an axis rounded up past it would be infinite). */
static bool plottable(double v)
{
	return isfinite(v) && fabs(v) < 1e300;
}

struct axis {
	double lo, hi, step;
};

/* A round step (1, 2 or 5 times a power of ten) giving about `target` intervals. */
static double nice_step(double range, int target)
{
	double raw = range / target;
	double mag = pow(10, floor(log10(raw)));
	double f = raw / mag;
	double nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
	return nf * mag;
}

static struct axis make_axis(double max, int target)
{
	struct axis a = { 0, 1, 0.2 };
	if (!isfinite(max) || max <= 0)
		return a;
	a.step = nice_step(max, target);
	a.hi = ceil(max / a.step - 1e-9) * a.step;
	if (a.hi <= 0)
		a.hi = a.step;
	return a;
}

static void fmt_tick(char *buf, size_t n, double v, double step)
{
	if (fabs(v) >= 10000 && step >= 1000)
		snprintf(buf, n, "%gk", v / 1000);
	else if (step >= 1)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.*f", (int)ceil(-log10(step) - 1e-9), v);
}

static void fmt_value(char *buf, size_t n, double v)
{
	/* Whole numbers (a concurrency, a count) read as they are: "c=1", not "c=1.00". */
	if (v == floor(v) && fabs(v) < 1e15)
		snprintf(buf, n, "%.0f", v);
	else if (fabs(v) >= 100)
		snprintf(buf, n, "%.0f", v);
	else if (fabs(v) >= 10)
		snprintf(buf, n, "%.1f", v);
	else
		snprintf(buf, n, "%.2f", v);
}

/* Legend items' widths: ~6.6 px per character at 12 px, plus the line sample. */
static double legend_width(const struct cli_rp_series *se)
{
	return 23 + 6.6 * (double)strlen(se->name ? se->name : "") + 18;
}

/* Rows the legend needs at this width (it wraps rather than run off the chart). */
static int legend_rows(const struct cli_rp_chart *c, int w)
{
	int rows = 1;
	double lx = ML;
	for (size_t s = 0; s < c->n_series; s++) {
		double iw = legend_width(&c->series[s]);
		if (lx > ML && lx + iw > w - MR) {
			rows++;
			lx = ML;
		}
		lx += iw;
	}
	return rows;
}

static void cross(FILE *out, double x, double y)
{
	fprintf(out,
		"<path d=\"M%.1f %.1fl8 8m0 -8l-8 8\" stroke=\"" RED_MARK "\" stroke-width=\"2.5\" "
		"fill=\"none\"/>",
		x - 4, y - 4);
}

/* Where a chart draws: its size, the plot area inside the margins, and the two axes. */
struct plot {
	int w, h;
	int mt; /* top margin: the title and the legend's rows */
	double pw, ph;
	struct axis ax, ay;
	size_t points; /* data points that can be placed */
};

static double px(const struct plot *p, double x)
{
	return ML + (x - p->ax.lo) / (p->ax.hi - p->ax.lo) * p->pw;
}

static double py(const struct plot *p, double y)
{
	return p->h - MB - (y - p->ay.lo) / (p->ay.hi - p->ay.lo) * p->ph;
}

/* The axes from zero to the data's top (and the SLO lines near it). */
static struct plot frame(const struct cli_rp_chart *c)
{
	struct plot p = { .w = c->width > 0 ? c->width : 560,
			  .h = c->height > 0 ? c->height : 300 };
	int rows = legend_rows(c, p.w);
	p.mt = MT + 16 * (rows - 1);
	double max_x = 0, max_y = 0;
	for (size_t k = 0; k < c->n_vlines; k++)
		if (plottable(c->vline[k]) && c->vline[k] > max_x)
			max_x = c->vline[k];
	for (size_t s = 0; s < c->n_series; s++) {
		for (size_t i = 0; i < c->series[s].n; i++) {
			double x = c->series[s].x[i], y = c->series[s].y[i];
			if (!plottable(x) || !plottable(y))
				continue;
			p.points++;
			/* The error bar's top must fit too. */
			const double *err = c->series[s].err;
			if (err && isfinite(err[i]) && err[i] > 0)
				y += err[i];
			max_x = x > max_x ? x : max_x;
			max_y = y > max_y ? y : max_y;
		}
		/* A band's top must fit as well. */
		for (size_t i = 0; c->series[s].band_hi && i < c->series[s].n; i++) {
			double x = c->series[s].x[i], hi = c->series[s].band_hi[i];
			if (plottable(x) && plottable(hi) && hi > max_y)
				max_y = hi;
		}
	}
	/* An SLO line far above the data would flatten it against the axis: the axis takes in
	 * limits up to 3 times the data's top; a higher one is named at the top instead. */
	double data_max_y = max_y;
	for (size_t k = 0; k < c->n_hlines; k++)
		if (plottable(c->hline[k]) && c->hline[k] > max_y &&
		    (data_max_y <= 0 || c->hline[k] <= 3 * data_max_y))
			max_y = c->hline[k];
	if (c->y_percent)
		max_y = 100;
	p.ax = make_axis(max_x, 6);
	p.ay = make_axis(max_y, 5);
	if (c->integer_y && p.ay.step < 1) {
		p.ay.step = 1;
		p.ay.hi = ceil(max_y) > 0 ? ceil(max_y) : 1;
	}
	p.pw = p.w - ML - MR;
	p.ph = p.h - p.mt - MB;
	return p;
}

/* The svg element, its accessible title, the background and the visible title. */
static void put_head(FILE *out, const struct cli_rp_chart *c, const struct plot *p)
{
	fprintf(out,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
		p->w, p->h, p->w, p->h);
	cli_rp_put_xml(out, c->title);
	fprintf(out, "\" " FONT ">\n<title>");
	cli_rp_put_xml(out, c->title);
	fprintf(out,
		"</title>\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
		p->w, p->h);
	fprintf(out,
		"<text x=\"%d\" y=\"18\" font-size=\"14\" font-weight=\"600\" fill=\"#111827\">",
		TITLE_X);
	cli_rp_put_xml(out, c->title);
	fputs("</text>\n", out);
}

/* The legend under the title, wrapped to the chart's width. */
static void put_legend(FILE *out, const struct cli_rp_chart *c, const struct plot *p)
{
	double lx = ML;
	int ly = 32;
	for (size_t s = 0; s < c->n_series; s++) {
		const struct cli_rp_series *se = &c->series[s];
		if (lx > ML && lx + legend_width(se) > p->w - MR) {
			lx = ML;
			ly += 16;
		}
		fprintf(out,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" "
			"stroke-width=\"2.5\"%s/>",
			lx, ly, lx + 18, ly, se->color,
			se->dashed ? " stroke-dasharray=\"5 3\"" : "");
		fprintf(out, "<text x=\"%.1f\" y=\"%d\" font-size=\"12\" fill=\"#374151\">",
			lx + 23, ly + 4);
		cli_rp_put_xml(out, se->name);
		fputs("</text>\n", out);
		lx += legend_width(se);
	}
}

/* The grid with the y ticks, the x ticks, the y axis line and both axis labels. */
static void put_axes(FILE *out, const struct cli_rp_chart *c, const struct plot *p)
{
	int w = p->w, h = p->h;
	char label[48];
	for (double v = p->ay.lo; v <= p->ay.hi + p->ay.step * 1e-6; v += p->ay.step) {
		double y = py(p, v);
		fprintf(out,
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
			"stroke-width=\"1\"/>",
			ML, y, w - MR, y, v == p->ay.lo ? "#6b7280" : "#e5e7eb");
		fmt_tick(label, sizeof(label), v, p->ay.step);
		fprintf(out,
			"<text x=\"%d\" y=\"%.1f\" font-size=\"11\" fill=\"#4b5563\" "
			"text-anchor=\"end\">%s</text>\n",
			ML - 6, y + 4, label);
	}
	for (double v = p->ax.lo; v <= p->ax.hi + p->ax.step * 1e-6; v += p->ax.step) {
		double x = px(p, v);
		fprintf(out,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#6b7280\" "
			"stroke-width=\"1\"/>",
			x, h - MB, x, h - MB + 5);
		fmt_tick(label, sizeof(label), v, p->ax.step);
		fprintf(out,
			"<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#4b5563\" "
			"text-anchor=\"middle\">%s</text>\n",
			x, h - MB + 18, label);
	}
	fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#6b7280\"/>\n", ML,
		p->mt, ML, h - MB);
	fprintf(out,
		"<text x=\"%.1f\" y=\"%d\" font-size=\"12\" fill=\"#111827\" "
		"text-anchor=\"middle\">",
		ML + p->pw / 2, h - 8);
	cli_rp_put_xml(out, c->x_label);
	fprintf(out,
		"</text>\n<text x=\"14\" y=\"%.1f\" font-size=\"12\" fill=\"#111827\" "
		"text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">",
		p->mt + p->ph / 2, p->mt + p->ph / 2);
	cli_rp_put_xml(out, c->y_label);
	fputs("</text>\n", out);
}

/* Reference lines, drawn under the data: SLO limits across, stage boundaries down. */
static void put_reference_lines(FILE *out, const struct cli_rp_chart *c, const struct plot *p)
{
	int w = p->w, h = p->h, mt = p->mt;
	for (size_t k = 0; k < c->n_hlines; k++) {
		if (!plottable(c->hline[k]))
			continue;
		if (c->hline[k] > p->ay.hi) {
			fprintf(out,
				"<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#991b1b\" "
				"text-anchor=\"end\">",
				w - MR - 2, mt - 4);
			cli_rp_put_xml(out, c->hline_label ? c->hline_label[k] : "");
			fputs(" (above the chart)</text>\n", out);
			continue;
		}
		double y = py(p, c->hline[k]);
		fprintf(out,
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#dc2626\" "
			"stroke-width=\"1.5\" stroke-dasharray=\"2 3\"/><text x=\"%d\" y=\"%.1f\" "
			"font-size=\"11\" fill=\"#991b1b\" text-anchor=\"end\">",
			ML, y, w - MR, y, w - MR - 2, y - 4);
		cli_rp_put_xml(out, c->hline_label ? c->hline_label[k] : "");
		fputs("</text>\n", out);
	}
	for (size_t k = 0; k < c->n_vlines; k++) {
		if (!plottable(c->vline[k]))
			continue;
		double x = px(p, c->vline[k]);
		fprintf(out,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#9ca3af\" "
			"stroke-width=\"1\" stroke-dasharray=\"4 3\"/><text x=\"%.1f\" y=\"%d\" "
			"font-size=\"10\" fill=\"#4b5563\">",
			x, mt, x, h - (double)MB, x + 3, mt + 10);
		cli_rp_put_xml(out, c->vline_label ? c->vline_label[k] : "");
		fputs("</text>\n", out);
	}
}

/* A series' band: one faint polygon per run of points where both edges are known, the upper
 * edge left to right, then the lower one back. */
static void put_band(FILE *out, const struct cli_rp_series *se, const struct plot *p)
{
	if (!se->band_lo || !se->band_hi)
		return;
	size_t i = 0;
	while (i < se->n) {
		size_t a = i;
		while (i < se->n && plottable(se->x[i]) && plottable(se->band_lo[i]) &&
		       plottable(se->band_hi[i]))
			i++;
		if (i > a) {
			fprintf(out,
				"<polygon class=\"band\" fill=\"%s\" fill-opacity=\"0.12\" "
				"stroke=\"none\" points=\"",
				se->color);
			for (size_t k = a; k < i; k++)
				fprintf(out, "%.1f,%.1f ", px(p, se->x[k]), py(p, se->band_hi[k]));
			for (size_t k = i; k-- > a;) {
				double lo = se->band_lo[k] < 0 ? 0 : se->band_lo[k];
				fprintf(out, "%.1f,%.1f%s", px(p, se->x[k]), py(p, lo),
					k > a ? " " : "");
			}
			fputs("\"/>\n", out);
		}
		if (i == a)
			i++;
	}
}

/* A series' line, broken where a value is missing or a point is marked. */
static void put_line(FILE *out, const struct cli_rp_series *se, const struct plot *p)
{
	bool open = false;
	for (size_t i = 0; i < se->n; i++) {
		double x = se->x[i], y = se->y[i];
		if (!plottable(x) || !plottable(y) || (se->mark && se->mark[i])) {
			if (open)
				fputs("\"/>\n", out);
			open = false;
			continue;
		}
		if (!open)
			fprintf(out,
				"<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
				"stroke-linejoin=\"round\"%s points=\"",
				se->color, se->dashed ? " stroke-dasharray=\"5 3\"" : "");
		fprintf(out, "%s%.1f,%.1f", open ? " " : "", px(p, x), py(p, y));
		open = true;
	}
	if (open)
		fputs("\"/>\n", out);
}

/* A series' dots with tooltips when few enough to tell apart; marked points always, as red
 * crosses. */
static void put_points(FILE *out, const struct cli_rp_chart *c, const struct cli_rp_series *se,
		       const struct plot *p)
{
	for (size_t i = 0; i < se->n; i++) {
		double x = se->x[i], y = se->y[i];
		const char *mark = se->mark ? se->mark[i] : NULL;
		if (!plottable(x) || !plottable(y) || (se->n > 80 && !mark))
			continue;
		char xs[32], ys[32];
		fmt_value(xs, sizeof(xs), x);
		fmt_value(ys, sizeof(ys), y);
		if (mark) {
			fputs("<g class=\"marked\">", out);
			cross(out, px(p, x), py(p, y));
		}
		double err = se->err && isfinite(se->err[i]) && se->err[i] > 0 ? se->err[i] : NAN;
		if (isfinite(err)) {
			/* The 95 % interval: a vertical bar with short caps. */
			double lo = y - err < 0 ? 0 : y - err, cx = px(p, x);
			fprintf(out,
				"<path class=\"errbar\" d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f "
				"%.1fH%.1f\" stroke=\"%s\" stroke-width=\"1.2\" fill=\"none\"/>\n",
				cx, py(p, lo), py(p, y + err), cx - 4, py(p, lo), cx + 4, cx - 4,
				py(p, y + err), cx + 4, mark ? RED_MARK : se->color);
		}
		/* A marked point's circle is faint, but filled so its tooltip shows. */
		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"%s><title>",
			px(p, x), py(p, y), mark ? "7" : "3", mark ? RED_MARK : se->color,
			mark ? " fill-opacity=\"0.15\"" : "");
		cli_rp_put_xml(out, se->name);
		if (se->point_name && se->point_name[i]) {
			fputs(" of ", out);
			cli_rp_put_xml(out, se->point_name[i]);
		}
		fputs(" at ", out);
		cli_rp_put_xml(out, c->point_label ? c->point_label : "");
		fprintf(out, "%s: %s", xs, ys);
		if (isfinite(err)) {
			char es[32];
			fmt_value(es, sizeof(es), err);
			fprintf(out, " \xc2\xb1%s (95%% interval)", es);
		}
		if (mark) {
			fputs(" (", out);
			cli_rp_put_xml(out, mark);
			fputs(": not a normal measurement)", out);
		}
		fputs(mark ? "</title></circle></g>\n" : "</title></circle>\n", out);
	}
}

void cli_rp_svg_chart(FILE *out, const struct cli_rp_chart *c)
{
	struct plot p = frame(c);
	put_head(out, c, &p);
	put_legend(out, c, &p);
	put_axes(out, c, &p);
	if (p.points == 0) {
		fprintf(out,
			"<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" fill=\"#6b7280\" "
			"text-anchor=\"middle\">no data</text>\n",
			ML + p.pw / 2, p.mt + p.ph / 2);
	}
	for (size_t s = 0; s < c->n_series; s++)
		put_band(out, &c->series[s], &p);
	put_reference_lines(out, c, &p);
	for (size_t s = 0; s < c->n_series; s++) {
		put_line(out, &c->series[s], &p);
		put_points(out, c, &c->series[s], &p);
	}
	fputs("</svg>\n", out);
}

const char *const cli_rp_palette[CLI_RP_PALETTE_N] = { "#2563eb", "#16a34a", "#ea580c", "#7c3aed",
						       "#0891b2", "#ca8a04", "#db2777", "#4b5563" };

struct cli_rp_series cli_rp_series_of(const char *name, const char *color, const double *x,
				      const double *y, size_t n, bool dashed,
				      const char *const *mark, const char *const *point_name)
{
	return (struct cli_rp_series){ .name = name,
				       .color = color,
				       .x = x,
				       .y = y,
				       .n = n,
				       .dashed = dashed,
				       .mark = mark,
				       .point_name = point_name };
}

struct cli_rp_chart cli_rp_chart_of(const char *title, const char *xl, const char *yl,
				    const char *pl, const struct cli_rp_series *se, size_t n, int w,
				    int h, bool integer_y)
{
	return (struct cli_rp_chart){ .title = title,
				      .x_label = xl,
				      .y_label = yl,
				      .point_label = pl,
				      .series = se,
				      .n_series = n,
				      .width = w,
				      .height = h,
				      .integer_y = integer_y };
}
