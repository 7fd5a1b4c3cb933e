#include "serve_prefill_pacer.h"

#include <algorithm>
#include <cmath>

namespace rill::serve {
namespace {

// Weight of a new measurement in the moving averages: a few steps to follow a change (a longer
// context, another stream joining) without one slow step (a page fault, another process) swinging it.
constexpr double kNewWeight = 0.25;

double blend(double average, double sample) { return average > 0 ? average + kNewWeight * (sample - average) : sample; }

// The decode-alone step time for d streams, or the nearest count measured (a step's cost is
// mostly one pass over the weights, so it changes slowly with d); 0 when none is.
double decode_step(const PrefillPacer& pacer, int d) {
    const int n = int(pacer.decode_step_ms.size());
    for (int distance = 0; distance < n; ++distance) {
        if (d - distance >= 0 && d - distance < n && pacer.decode_step_ms[size_t(d - distance)] > 0) return pacer.decode_step_ms[size_t(d - distance)];
        if (d + distance < n && pacer.decode_step_ms[size_t(d + distance)] > 0) return pacer.decode_step_ms[size_t(d + distance)];
    }
    return 0;
}

}  // namespace

int prefill_piece(const PrefillPacer& pacer, int decoding) {
    if (pacer.slowdown <= 0) return pacer.max_piece;
    const double step_ms = decode_step(pacer, decoding);
    if (step_ms <= 0) return pacer.max_piece;  // nothing measured yet: the fixed chunk bounds it
    if (pacer.prompt_token_ms <= 0) return 1;  // the first piece beside generating streams measures a token's cost
    const double room_ms = (pacer.slowdown - 1) * step_ms;
    const double tokens = std::floor(room_ms / pacer.prompt_token_ms);
    return int(std::clamp(tokens, 1.0, double(pacer.max_piece)));
}

void observe_step(PrefillPacer& pacer, int decoding, int prompt_tokens, double ms) {
    if (decoding <= 0 || ms <= 0) return;  // a pass of prompts alone says nothing about what streams wait for
    if (prompt_tokens == 0) {
        if (pacer.decode_step_ms.size() <= size_t(decoding)) pacer.decode_step_ms.resize(size_t(decoding) + 1, 0.0);
        pacer.decode_step_ms[size_t(decoding)] = blend(pacer.decode_step_ms[size_t(decoding)], ms);
        return;
    }
    const double step_ms = decode_step(pacer, decoding);
    if (step_ms <= 0) return;
    // A pass that came in under the decode-alone time (noise) still says a token costs something.
    const double per_token = std::max(ms - step_ms, 0.05 * step_ms) / prompt_tokens;
    pacer.prompt_token_ms = blend(pacer.prompt_token_ms, per_token);
}

}  // namespace rill::serve
