#include "svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rill::cli {
namespace {

constexpr double kWidth = 760, kHeight = 460;
constexpr double kLeft = 70, kRight = 220, kTop = 64, kBottom = 56;  // margins; the legend sits right

std::string escape(const std::string& s) {
    std::string out;
    for (const char c : s) {
        if (c == '&') out += "&amp;";
        else if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '"') out += "&quot;";
        else out += c;
    }
    return out;
}

std::string number(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", x);
    return buf;
}

std::string tick_label(double x) {
    char buf[32];
    if (std::fabs(x - std::round(x)) < 1e-9) std::snprintf(buf, sizeof buf, "%.0f", x);
    else std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}

// 1, 2 or 5 times a power of ten, giving about `target` intervals over [0, hi].
double nice_step(double hi, int target) {
    const double raw = std::max(hi, 1e-12) / target;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (const double m : {1.0, 2.0, 5.0, 10.0})
        if (m * power >= raw) return m * power;
    return 10 * power;
}

}  // namespace

std::string render_svg(const Plot& plot) {
    double x_lo = 1e300, x_hi = -1e300, y_hi = 0;
    for (const PlotSeries& s : plot.series)
        for (const auto& [x, y] : s.points) {
            x_lo = std::min(x_lo, x), x_hi = std::max(x_hi, x);
            if (std::isfinite(y)) y_hi = std::max(y_hi, y);
        }
    if (x_lo > x_hi) x_lo = 0, x_hi = 1;
    if (x_hi == x_lo) x_lo -= 1, x_hi += 1;
    if (plot.integer_x) x_lo = std::floor(x_lo), x_hi = std::ceil(x_hi);
    const double y_step = nice_step(y_hi * 1.08, 6);
    const double y_top = std::ceil(y_hi * 1.08 / y_step) * y_step;
    const double x_step = plot.integer_x ? std::max(1.0, nice_step(x_hi - x_lo, 8)) : nice_step(x_hi - x_lo, 8);
    const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
    const auto px = [&](double x) { return kLeft + (x - x_lo) / (x_hi - x_lo) * plot_w; };
    const auto py = [&](double y) { return kTop + plot_h - std::clamp(y / y_top, 0.0, 1.05) * plot_h; };

    std::string svg;
    svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(kWidth) + "\" height=\"" + number(kHeight) +
           "\" viewBox=\"0 0 " + number(kWidth) + " " + number(kHeight) + "\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n";
    svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    svg += "<text x=\"" + number(kLeft) + "\" y=\"26\" font-size=\"17\" font-weight=\"bold\">" + escape(plot.title) + "</text>\n";
    svg += "<text x=\"" + number(kLeft) + "\" y=\"46\" font-size=\"12\" fill=\"#555\">" + escape(plot.subtitle) + "</text>\n";
    // Grid and ticks.
    for (double y = 0; y <= y_top + 1e-9; y += y_step) {
        svg += "<line x1=\"" + number(kLeft) + "\" x2=\"" + number(kLeft + plot_w) + "\" y1=\"" + number(py(y)) + "\" y2=\"" +
               number(py(y)) + "\" stroke=\"#ddd\"/>\n";
        svg += "<text x=\"" + number(kLeft - 8) + "\" y=\"" + number(py(y) + 4) + "\" font-size=\"12\" text-anchor=\"end\">" +
               tick_label(y) + "</text>\n";
    }
    const double x_first = std::ceil(x_lo / x_step) * x_step;
    for (double x = x_first; x <= x_hi + 1e-9; x += x_step) {
        svg += "<line x1=\"" + number(px(x)) + "\" x2=\"" + number(px(x)) + "\" y1=\"" + number(kTop) + "\" y2=\"" +
               number(kTop + plot_h) + "\" stroke=\"#eee\"/>\n";
        svg += "<text x=\"" + number(px(x)) + "\" y=\"" + number(kTop + plot_h + 18) + "\" font-size=\"12\" text-anchor=\"middle\">" +
               tick_label(x) + "</text>\n";
    }
    svg += "<rect x=\"" + number(kLeft) + "\" y=\"" + number(kTop) + "\" width=\"" + number(plot_w) + "\" height=\"" + number(plot_h) +
           "\" fill=\"none\" stroke=\"#333\"/>\n";
    svg += "<text x=\"" + number(kLeft + plot_w / 2) + "\" y=\"" + number(kHeight - 14) +
           "\" font-size=\"13\" text-anchor=\"middle\">" + escape(plot.x_label) + "</text>\n";
    svg += "<text transform=\"translate(18," + number(kTop + plot_h / 2) + ") rotate(-90)\" font-size=\"13\" text-anchor=\"middle\">" +
           escape(plot.y_label) + "</text>\n";
    // Series, then the legend.
    double legend_y = kTop + 8;
    for (const PlotSeries& s : plot.series) {
        std::string path;
        for (const auto& [x, y] : s.points)
            if (std::isfinite(y)) path += (path.empty() ? "M" : " L") + number(px(x)) + " " + number(py(y));
        const std::string dash = s.dashed ? " stroke-dasharray=\"7 5\"" : "";
        if (!path.empty())
            svg += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"2\"" + dash + "/>\n";
        if (s.markers)
            for (const auto& [x, y] : s.points)
                if (std::isfinite(y))
                    svg += "<circle cx=\"" + number(px(x)) + "\" cy=\"" + number(py(y)) + "\" r=\"4\" fill=\"" + s.color + "\"/>\n";
        const double lx = kLeft + plot_w + 16;
        svg += "<line x1=\"" + number(lx) + "\" x2=\"" + number(lx + 26) + "\" y1=\"" + number(legend_y) + "\" y2=\"" + number(legend_y) +
               "\" stroke=\"" + s.color + "\" stroke-width=\"2\"" + dash + "/>\n";
        if (s.markers) svg += "<circle cx=\"" + number(lx + 13) + "\" cy=\"" + number(legend_y) + "\" r=\"4\" fill=\"" + s.color + "\"/>\n";
        svg += "<text x=\"" + number(lx + 34) + "\" y=\"" + number(legend_y + 4) + "\" font-size=\"12\">" + escape(s.label) + "</text>\n";
        legend_y += 22;
    }
    svg += "</svg>\n";
    return svg;
}

}  // namespace rill::cli
