// Loading a model: hyperparameters from metadata, checked against every tensor's shape.
#include <catch2/catch.hpp>

#include "gguf_builder.h"
#include "runtime/base/error.h"
#include "runtime/model/model.h"
#include "runtime/session/session.h"
#include "shared_data.h"

using namespace rill;
using test::GgufBuilder;

namespace {

std::string load_error(const GgufBuilder& b) {
    const std::vector<uint8_t> bytes = b.bytes();
    try {
        model_from_gguf(GgufFile::parse(bytes, "m.gguf"));
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("stories260K's hyperparameters come from its metadata", "[model]") {
    const auto m = load_model(test::shared_path("models/stories260K/stories260K.gguf"));
    CHECK(m->hp.arch == "llama");
    CHECK(m->hp.n_embd == 64);
    CHECK(m->hp.n_layer == 5);
    CHECK(m->hp.n_head == 8);
    CHECK(m->hp.n_head_kv == 4);
    CHECK(m->hp.n_vocab == 512);
    CHECK(m->hp.head_dim == 8);
    CHECK(m->hp.rope_style == RopeStyle::Norm);
    CHECK(m->layers.size() == 5);
}

TEST_CASE("a well-formed tiny model builds from bytes and runs", "[model]") {
    const std::vector<uint8_t> bytes = test::tiny_llama().bytes();
    const auto m = model_from_gguf(GgufFile::parse(bytes, "m.gguf"));
    CHECK(m->output.tensor == m->token_embd.tensor);  // no output.weight: tied
    Session s(*m, SessionOptions{.n_threads = 1});
    const std::vector<int32_t> tokens = {0, 1, 2, 3};
    CHECK(s.eval(tokens).size() == 4);
}

TEST_CASE("an unsupported architecture is an error listing the supported ones", "[model]") {
    GgufBuilder b;
    b.kv_string("general.architecture", "mamba");
    CHECK_THAT(load_error(b), Catch::Contains("architecture 'mamba' is not supported (supported: llama, qwen2, qwen3, gemma3, phi3, smollm3, olmo2, granite)"));
}

TEST_CASE("metadata that disagrees with a tensor's shape names both", "[model]") {
    auto b = test::tiny_llama();
    b.f32_tensor("output.weight", {8, 5});  // the vocabulary has 4 tokens
    CHECK_THAT(load_error(b), Catch::Contains("tensor 'output.weight' has shape [8, 5] but the metadata implies [8, 4]"));
}

TEST_CASE("a missing tensor or hyperparameter is named", "[model]") {
    GgufBuilder b;
    b.kv_string("general.architecture", "llama");
    CHECK_THAT(load_error(b), Catch::Contains("metadata 'llama.embedding_length' is missing"));
    CHECK_THAT(load_error(test::tiny_llama("blk.0.ffn_up.weight")), Catch::Contains("tensor 'blk.0.ffn_up.weight' is missing"));
}

TEST_CASE("absurd hyperparameters are refused before anything is allocated", "[model]") {
    GgufBuilder b;
    b.kv_string("general.architecture", "llama").kv_u32("llama.embedding_length", 0);
    CHECK_THAT(load_error(b), Catch::Contains("'llama.embedding_length' is 0"));
    GgufBuilder c;
    c.kv_string("general.architecture", "llama").kv_u32("llama.embedding_length", 8).kv_u32("llama.block_count", 5000000);
    CHECK_THAT(load_error(c), Catch::Contains("'llama.block_count' is 5000000, outside 1..1024"));
}
