// What the serving tests share: logits compared bit for bit, and a prompt read in pieces beside
// another stream that decodes greedily, as the server's scheduler reads it.
#pragma once
#include "catch.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "runtime/session/sampling.h"
#include "runtime/session/session.h"

namespace rill::test {

inline bool same_bits(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// Reads `prompt` into `reader` in pieces of `piece` tokens, each pass shared with a step of `other`
// (started on two tokens of its own); the reader has logits only after its last piece.
inline void read_beside_another(Session& reader, Session& other, const std::vector<int32_t>& prompt, size_t piece) {
    const int32_t start[] = {1, 9};
    other.eval(start);
    int32_t other_next = 3;
    for (size_t at = 0; at < prompt.size(); at += piece) {
        const auto part = std::span<const int32_t>(prompt).subspan(at, std::min(piece, prompt.size() - at));
        const BatchPiece pieces[] = {{&other, std::span<const int32_t>(&other_next, 1), true},
                                     {&reader, part, at + part.size() == prompt.size()}};
        Session::eval_batch(pieces);
        other_next = argmax(other.last_logits());
        CHECK(reader.last_logits().empty() == (at + part.size() < prompt.size()));
    }
}

}  // namespace rill::test
