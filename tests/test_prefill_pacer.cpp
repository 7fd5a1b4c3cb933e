// The server's pacing of prompt pieces beside generating streams (apps/serve_prefill_pacer.h).
#include "catch.h"

#include "apps/serve_prefill_pacer.h"

using rill::serve::observe_step;
using rill::serve::prefill_piece;
using rill::serve::PrefillPacer;

namespace {

// A machine where a step of the generating streams alone takes `step_ms` and each prompt token adds `token_ms`.
void run_steps(PrefillPacer& pacer, int decoding, double step_ms, double token_ms, int steps) {
    observe_step(pacer, decoding, 0, step_ms);
    for (int i = 0; i < steps; ++i) {
        const int piece = prefill_piece(pacer, decoding);
        observe_step(pacer, decoding, piece, step_ms + piece * token_ms);
    }
}

}  // namespace

TEST_CASE("before any step is measured, the fixed chunk bounds a piece", "[pacer]") {
    PrefillPacer pacer{.slowdown = 2, .max_piece = 64};
    CHECK(prefill_piece(pacer, 3) == 64);
}

TEST_CASE("the first piece beside measured streams is one token, to learn what a token costs", "[pacer]") {
    PrefillPacer pacer{.slowdown = 2, .max_piece = 64};
    observe_step(pacer, 3, 0, 30);
    CHECK(prefill_piece(pacer, 3) == 1);
}

TEST_CASE("pieces settle where a step takes the slowdown times a step of the streams alone", "[pacer]") {
    PrefillPacer pacer{.slowdown = 3, .max_piece = 64};
    run_steps(pacer, 3, 30, 10, 20);
    // 30 ms alone, 10 ms a token, at most 90 ms a step: 6 tokens.
    CHECK(prefill_piece(pacer, 3) == 6);
}

TEST_CASE("a piece is never larger than --prefill-chunk", "[pacer]") {
    PrefillPacer pacer{.slowdown = 2, .max_piece = 8};
    run_steps(pacer, 2, 30, 0.5, 20);
    CHECK(prefill_piece(pacer, 2) == 8);
}

TEST_CASE("a piece is at least one token however dear a token is", "[pacer]") {
    PrefillPacer pacer{.slowdown = 2, .max_piece = 64};
    run_steps(pacer, 1, 10, 100, 10);
    CHECK(prefill_piece(pacer, 1) == 1);
}

TEST_CASE("a slowdown of 0 leaves only the fixed chunk", "[pacer]") {
    PrefillPacer pacer{.slowdown = 0, .max_piece = 16};
    run_steps(pacer, 3, 30, 100, 5);
    CHECK(prefill_piece(pacer, 3) == 16);
}

TEST_CASE("a stream count never measured alone borrows the nearest count's step time", "[pacer]") {
    PrefillPacer pacer{.slowdown = 2, .max_piece = 64};
    run_steps(pacer, 2, 40, 10, 20);
    // 4 streams were never measured alone: 2 streams' 40 ms stands in, room for 4 tokens.
    CHECK(prefill_piece(pacer, 4) == 4);
}

TEST_CASE("passes of prompts alone teach the pacer nothing", "[pacer]") {
    PrefillPacer pacer{.slowdown = 2, .max_piece = 64};
    observe_step(pacer, 0, 500, 9000);
    CHECK(pacer.decode_step_ms.empty());
    CHECK(pacer.prompt_token_ms == 0);
}
