// A line chart written as SVG text: no plotting library, readable axes, a legend. `rill bench --plot`
// draws measured tokens/s against threads or context with the predicted and ceiling lines.
#pragma once
#include <string>
#include <vector>

namespace rill::cli {

struct PlotSeries {
    std::string label;
    std::string color;    // any SVG colour
    bool dashed = false;
    bool markers = false;  // measured points get dots; model lines do not
    std::vector<std::pair<double, double>> points;
};

struct Plot {
    std::string title, subtitle, x_label, y_label;
    bool integer_x = false;  // thread counts: ticks only at whole numbers
    std::vector<PlotSeries> series;
};

std::string render_svg(const Plot& plot);

}  // namespace rill::cli
