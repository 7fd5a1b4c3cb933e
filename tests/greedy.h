// Greedy decoding for the tests: n tokens after the prompt, never stopping at an end token, as the
// reference files are generated.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/session/generate.h"
#include "runtime/session/sampling.h"
#include "runtime/session/session.h"
#include "runtime/text/vocab.h"

namespace rill::test {

inline std::vector<int32_t> greedy(Session& session, const std::vector<int32_t>& prompt, int n) {
    const Vocab vocab{};  // no end tokens
    Sampler sampler(SamplingParams{.temperature = 0});
    std::vector<int32_t> out;
    generate(session, vocab, prompt, n, sampler, [&](int32_t t, std::string_view) {
        out.push_back(t);
        return true;
    });
    return out;
}

}  // namespace rill::test
