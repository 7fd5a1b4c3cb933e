// A ../shared/arch model and its JSON (llama.cpp's outputs and the float64 reference), and the
// session options the family tests compare in: F32 keys and values, as the reference keeps them.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/session/session.h"
#include "shared_data.h"

namespace rill::test {

struct ReferenceCase {
    nlohmann::json data;
    std::unique_ptr<Model> model;
    std::vector<int32_t> prompt() const { return data["prompt_tokens"].get<std::vector<int32_t>>(); }
};

inline ReferenceCase open_reference_case(const std::string& name) {
    const std::string base = shared_path("arch/" + name);
    return {nlohmann::json::parse(read_text(base + ".llamacpp.json")), load_model(base + ".gguf")};
}

inline SessionOptions exact_options(int threads = 1, int n_batch = 512, simd::KernelPath path = simd::KernelPath::Reference) {
    return SessionOptions{.n_threads = threads, .kv_types = KvType::F32, .n_batch = n_batch, .kernels = path};
}

}  // namespace rill::test
