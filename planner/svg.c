/* svg.c — the parts every chart of the planner shares: the page and its
 * title, a plot area with axes, grid and labels, escaped text.  The charts
 * themselves (the plan's throughput-memory front in cli.c, the cluster
 * comparison's bars and lines in purchase_cli.c) draw their marks with
 * plan_svg_x / plan_svg_y.  Writing a file the user asked for is the
 * front ends' business; these helpers only format into the FILE given. */
#include <math.h>
#include <stdio.h>

#include "planner/plan.h"

double plan_svg_x(const plan_svg_panel *p, double v)
{
    return p->left + v / p->xmax * p->width;
}

double plan_svg_y(const plan_svg_panel *p, double v)
{
    return p->top + p->height - v / p->ymax * p->height;
}

double plan_svg_nice(double v)
{
    if (!(v > 0))
        return 1;
    double step = v / 5, mag = pow(10, floor(log10(step))), f = step / mag;
    f = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
    return 5 * f * mag;
}

void plan_svg_text(FILE *f, const char *s)
{
    for (; *s; s++)
        fputs(*s == '<' ? "&lt;" : *s == '&' ? "&amp;" : *s == '>' ? "&gt;" : (char[2]){*s, 0}, f);
}

void plan_svg_begin(FILE *f, double width, double height, const char *title)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", width, height);
    fprintf(f, "<text x=\"%.0f\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">", width / 2);
    plan_svg_text(f, title);
    fprintf(f, "</text>\n");
}

void plan_svg_axes(FILE *f, const plan_svg_panel *p, const char *xlabel, const char *ylabel, int xticks)
{
    double x0 = p->left, x1 = p->left + p->width, y0 = p->top, y1 = p->top + p->height;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", x0, y1, x1, y1);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", x0, y0, x0, y1);
    for (int k = 0; k <= 5; k++) {
        double xv = p->xmax * k / 5, yv = p->ymax * k / 5;
        if (xticks)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.1f</text>\n", plan_svg_x(p, xv),
                    y1 + 16, xv);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n", x0 - 6, plan_svg_y(p, yv) + 4, yv);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x0, plan_svg_y(p, yv),
                x1, plan_svg_y(p, yv));
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (x0 + x1) / 2, y1 + 40);
    plan_svg_text(f, xlabel);
    fprintf(f, "</text>\n<text transform=\"translate(%.0f,%.1f) rotate(-90)\" text-anchor=\"middle\">", x0 - 52,
            (y0 + y1) / 2);
    plan_svg_text(f, ylabel);
    fprintf(f, "</text>\n");
}

int plan_svg_end(sim_outfile *out, sim_err *err)
{
    fprintf(out->f, "</svg>\n");
    return sim_out_commit(out, err);
}
