#pragma once
// How many prompt tokens the scheduler may read in one pass while other streams are generating.
// A prompt token costs compute (on two cores about half a three-stream decode step), so a fixed
// chunk bounds the generating streams' inter-token latency only in tokens, differently on every
// machine and model. The pacer bounds it in time instead: it learns what a step of generating
// streams alone takes, and what each prompt token adds to it, and sizes the piece so that a step
// with the piece takes at most `slowdown` times a step without it.
#include <vector>

namespace rill::serve {

struct PrefillPacer {
    double slowdown = 2.0;  // a step with a prompt piece may take this many times one without; 0: no bound
    int max_piece = 64;     // --prefill-chunk: never more tokens than this in one pass

    // Milliseconds of a step of d generating streams alone (index d; 0: not measured yet), and what
    // one prompt token adds to a step; both moving averages of what was measured.
    std::vector<double> decode_step_ms;
    double prompt_token_ms = 0;
};

// The prompt tokens the next pass may take while `decoding` streams generate (at least 1).
int prefill_piece(const PrefillPacer& pacer, int decoding);

// A pass of `decoding` generating streams and `prompt_tokens` prompt tokens took `ms`.
void observe_step(PrefillPacer& pacer, int decoding, int prompt_tokens, double ms);

}  // namespace rill::serve
