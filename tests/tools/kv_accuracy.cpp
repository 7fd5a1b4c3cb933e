// Prints the README's KV cache accuracy table: for golden models and KV types, the largest |Δ log-prob|
// over the vocabulary after a 200-token prompt (tests/kv_accuracy.h) against an F16 cache, on the
// fastest kernel path and the reference path, token by token (decode kernels) and as one batch.
//   kv_accuracy           (reads ../shared, or $RILL_SHARED)
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "../kv_accuracy.h"
#include "../shared_data.h"

using namespace rill;

int main() {
    const KvTypes types[] = {{KvType::Q8_0, KvType::Q8_0}, {KvType::Q4_0, KvType::Q4_0}, {KvType::BF16, KvType::BF16},
                             {KvType::Q8_0, KvType::F16}, {KvType::F32, KvType::F32}};
    const simd::KernelPath paths[] = {simd::supported_kernel_paths().back(), simd::KernelPath::Reference};
    std::printf("| model | prompt | kernels | evaluation |");
    for (const KvTypes& t : types) std::printf(" %s |", kv_types_label(t).c_str());
    std::printf("\n|---|---|---|---|");
    for (size_t i = 0; i < std::size(types); ++i) std::printf("---:|");
    std::printf("\n");
    for (const char* format : {"F32", "Q8_0", "Q4_K_M"}) {
        const std::string base = test::shared_path(std::string("golden/synth-llama-A.") + format);
        const auto golden = nlohmann::json::parse(test::read_text(base + ".golden.json"));
        const auto model = load_model(base + ".gguf");
        const auto golden_prompt = golden["prompt_tokens"].get<std::vector<int32_t>>();
        for (const bool greedy : {false, true})
        for (const simd::KernelPath path : paths)
            for (const bool token_by_token : {true, false}) {
                const auto prompt = greedy ? test::kv_accuracy_prompt_greedy(*model, golden_prompt)
                                           : test::kv_accuracy_prompt(golden_prompt, model->hp.n_vocab);
                const auto f16 = test::kv_logprobs(*model, KvType::F16, path, prompt, token_by_token);
                std::printf("| %s | %s | %s | %s |", format, greedy ? "greedy" : "pattern", std::string(simd::kernel_path_name(path)).c_str(),
                            token_by_token ? "token by token" : "one batch");
                for (const KvTypes& t : types)
                    std::printf(" %.4f |", test::max_abs_difference(test::kv_logprobs(*model, t, path, prompt, token_by_token), f16));
                std::printf("\n");
            }
    }
    return 0;
}
