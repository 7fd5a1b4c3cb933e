// The generation loop shared by the CLI's commands: prompt in, streamed text out, timings back.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "runtime/session/constrained.h"
#include "runtime/session/sampling.h"
#include "runtime/session/session.h"
#include "runtime/text/vocab.h"

namespace rill {

struct GenerationStats {
    int n_prompt = 0;
    int n_generated = 0;
    double prefill_ms = 0;  // evaluating the prompt: this is the time to first token's compute
    double decode_ms = 0;   // evaluating the generated tokens after the first
    bool hit_end = false;   // stopped at an end-of-generation token
    bool hit_context = false;
};

// Called with every generated token and the text that became complete with it: the bytes of a
// character split across tokens arrive together with its last token. At the end, bytes left of an
// incomplete character come with token -1. Return false to stop.
using TokenCallback = std::function<bool(int32_t token, std::string_view text)>;

// Evaluates the prompt, then samples up to n_predict tokens (stopping at end-of-generation tokens or a
// full context), calling on_token for each. With a constraint, only what its grammar allows is
// sampled, and generation ends where the grammar is complete.
GenerationStats generate(Session& session, const Vocab& vocab, std::span<const int32_t> prompt, int n_predict,
                         Sampler& sampler, const TokenCallback& on_token, Constraint* constraint = nullptr);

}  // namespace rill
