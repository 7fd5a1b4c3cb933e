// How far a session's next-token log-probs on a golden file are from the float64 reference, next to
// how far llama.cpp's are: the yardstick of the tests that hold a backend to llama.cpp's accuracy class.
#pragma once
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "numeric.h"
#include "runtime/session/session.h"
#include "shared_data.h"

namespace rill::test {

struct GoldenDistance {
    double ours = 0, llamacpp = 0;  // the largest |log-prob − reference| over the vocabulary
};

inline GoldenDistance golden_distance(const std::string& format, const SessionOptions& options) {
    const std::string base = shared_path("golden/synth-llama-A." + format);
    const auto golden = nlohmann::json::parse(read_text(base + ".golden.json"));
    const auto prompt = golden["prompt_tokens"].get<std::vector<int32_t>>();
    const auto model = load_model(base + ".gguf");
    Session session(*model, options);
    const auto logprobs = log_softmax(session.eval(prompt));
    const auto ref = golden["ref_logprobs_last"].get<std::vector<double>>();
    const auto llama = golden["llamacpp_logprobs_last"].get<std::vector<double>>();
    GoldenDistance d;
    for (size_t i = 0; i < ref.size(); ++i) {
        d.ours = std::max(d.ours, std::abs(logprobs[i] - ref[i]));
        d.llamacpp = std::max(d.llamacpp, std::abs(llama[i] - ref[i]));
    }
    return d;
}

}  // namespace rill::test
