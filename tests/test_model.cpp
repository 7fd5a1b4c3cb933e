// Loading a model: hyperparameters from metadata, checked against every tensor's shape.
#include "catch.h"

#include <cmath>

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
    CHECK_THAT(load_error(b), rill::test::contains("architecture 'mamba' is not supported (supported: llama, qwen2, qwen3, gemma3, phi3, smollm3, olmo2, granite, qwen3moe, gpt-oss, qwen35, qwen35moe, gemma4, lfm2, lfm2moe, nemotron_h, nemotron_h_moe, granitehybrid)"));
}

TEST_CASE("metadata that disagrees with a tensor's shape names both", "[model]") {
    auto b = test::tiny_llama();
    b.f32_tensor("output.weight", {8, 5});  // the vocabulary has 4 tokens
    CHECK_THAT(load_error(b), rill::test::contains("tensor 'output.weight' has shape [8, 5] but the metadata implies [8, 4]"));
}

TEST_CASE("a missing tensor or hyperparameter is named", "[model]") {
    GgufBuilder b;
    b.kv_string("general.architecture", "llama");
    CHECK_THAT(load_error(b), rill::test::contains("metadata 'llama.embedding_length' is missing"));
    CHECK_THAT(load_error(test::tiny_llama("blk.0.ffn_up.weight")), rill::test::contains("tensor 'blk.0.ffn_up.weight' is missing"));
}

TEST_CASE("absurd hyperparameters are refused before anything is allocated", "[model]") {
    GgufBuilder b;
    b.kv_string("general.architecture", "llama").kv_u32("llama.embedding_length", 0);
    CHECK_THAT(load_error(b), rill::test::contains("'llama.embedding_length' is 0"));
    GgufBuilder c;
    c.kv_string("general.architecture", "llama").kv_u32("llama.embedding_length", 8).kv_u32("llama.block_count", 5000000);
    CHECK_THAT(load_error(c), rill::test::contains("'llama.block_count' is 5000000, outside 1..1024"));
}

TEST_CASE("a tiny model of every newer family loads and runs with finite logits", "[model][arch]") {
    for (const char* family : {"qwen3", "qwen3-yarn", "gemma3", "phi3", "smollm3", "olmo2", "granite", "qwen3moe", "gpt-oss"}) {
        INFO(family);
        const std::vector<uint8_t> bytes = test::tiny_family(family).bytes();
        const auto m = model_from_gguf(GgufFile::parse(bytes, "m.gguf"));
        Session s(*m, SessionOptions{.n_threads = 1});
        const std::vector<int32_t> tokens = {0, 1, 2, 3, 0, 1, 2, 3, 3};  // longer than gemma3's window of 4
        for (const float x : s.eval(tokens)) REQUIRE(std::isfinite(x));
    }
}

TEST_CASE("each family's keys become its hyperparameters, with llama.cpp's defaults where a key is missing", "[model][arch]") {
    const auto load = [](const char* family) {
        static std::vector<std::vector<uint8_t>> keep;  // the model views the bytes
        keep.push_back(test::tiny_family(family).bytes());
        return model_from_gguf(GgufFile::parse(keep.back(), "m.gguf"));
    };
    const auto gemma = load("gemma3");
    CHECK(gemma->hp.n_swa == 4);
    CHECK(gemma->hp.rope_local.freq_base == 10000.0f);  // rope.freq_base_swa missing: llama.cpp's 10000
    CHECK(gemma->hp.embedding_scale == std::sqrt(8.0f));
    CHECK(gemma->hp.kq_scale() == 0.5f);  // 1/sqrt(key_length 4)
    CHECK(gemma->hp.final_logit_softcap == 30.0f);
    const auto granite = load("granite");
    CHECK(granite->hp.logit_scale == 8.0f);
    CHECK(granite->hp.residual_scale == 0.22f);
    CHECK(granite->hp.kq_scale() == 0.25f);
    const auto yarn = load("qwen3-yarn");
    CHECK(yarn->hp.rope.freq_scale == 0.25f);
    CHECK(yarn->hp.rope.ext_factor == 1.0f);
    CHECK(yarn->hp.rope.attn_factor == Approx(1 + 0.1 * std::log(4.0)));
    const auto phi = load("phi3");
    CHECK(phi->hp.rope.attn_factor == 1.2f);
    CHECK(phi->layers[0].wqkv);
    CHECK(!phi->layers[0].ffn_gate);
    const auto smollm = load("smollm3");
    CHECK(smollm->hp.uses_rope(0));  // only every fourth layer goes without
}

TEST_CASE("gemma3's sliding layers follow llama.cpp's pattern: the last of every six is global", "[model][arch]") {
    const std::vector<uint8_t> bytes = test::tiny_family("gemma3").bytes();
    const auto m = model_from_gguf(GgufFile::parse(bytes, "m.gguf"));
    Hparams hp = m->hp;
    hp.n_layer = 7;
    set_layer_pattern(hp, 6);
    CHECK(hp.layer_sliding == std::vector<uint8_t>{1, 1, 1, 1, 1, 0, 1});
    set_layer_pattern(hp, 3);
    CHECK(hp.layer_sliding == std::vector<uint8_t>{1, 1, 0, 1, 1, 0, 1});
}

TEST_CASE("a missing family tensor, a fused tensor of the wrong shape or an unknown rope scaling is an error naming it", "[model][arch]") {
    CHECK_THAT(load_error(test::tiny_family("qwen3", "blk.0.attn_k_norm.weight")),
               rill::test::contains("tensor 'blk.0.attn_k_norm.weight' is missing"));
    CHECK_THAT(load_error(test::tiny_family("gemma3", "blk.0.post_ffw_norm.weight")),
               rill::test::contains("tensor 'blk.0.post_ffw_norm.weight' is missing"));
    GgufBuilder phi = test::tiny_family("phi3", "blk.0.ffn_up.weight");
    phi.f32_tensor("blk.0.ffn_up.weight", {8, 16});  // gate | up needs 2 × 16 rows
    CHECK_THAT(load_error(phi), rill::test::contains("tensor 'blk.0.ffn_up.weight' has shape [8, 16] but the metadata implies [8, 32]"));
    GgufBuilder rope = test::tiny_family("qwen3");
    rope.kv_string("qwen3.rope.scaling.type", "ntk-by-parts");
    CHECK_THAT(load_error(rope), rill::test::contains("'qwen3.rope.scaling.type' is 'ntk-by-parts', which rill does not support"));
    GgufBuilder base = test::tiny_family("qwen3");
    base.kv_f32("qwen3.rope.freq_base", -1.0f);
    CHECK_THAT(load_error(base), rill::test::contains("'qwen3.rope.freq_base' is -1"));
}

TEST_CASE("a mixture of experts with more chosen than there are, or an expert tensor of the wrong shape, is an error naming it", "[model][moe]") {
    CHECK_THAT(load_error(test::tiny_family("qwen3moe", "", 5)),
               rill::test::contains("'qwen3moe.expert_used_count' is 5, more than expert_count 4"));
    GgufBuilder shape = test::tiny_family("gpt-oss", "blk.0.ffn_down_exps.weight");
    shape.f32_tensor("blk.0.ffn_down_exps.weight", {8, 8, 3});
    CHECK_THAT(load_error(shape), rill::test::contains("tensor 'blk.0.ffn_down_exps.weight' has shape [8, 8, 3] but the metadata implies [8, 8, 4]"));
    CHECK_THAT(load_error(test::tiny_family("gpt-oss", "blk.0.attn_sinks.weight")), rill::test::contains("tensor 'blk.0.attn_sinks.weight' is missing"));
    CHECK_THAT(load_error(test::tiny_family("gpt-oss", "blk.0.ffn_up_exps.bias")), rill::test::contains("tensor 'blk.0.ffn_up_exps.bias' is missing"));
}

// Writing a private file mapping copies it 4 KiB page by page; the regrouped matrices go to memory
// the model owns instead, and the numbers must not notice.
TEST_CASE("a memory-mapped model regroups its matrices in memory of its own and computes what a model read into memory does", "[model]") {
    for (const std::string name : {"golden/synth-llama-A.Q4_K_M.gguf", "golden/synth-llama-A.Q8_0.gguf"}) {
        INFO(name);
        const std::string path = test::shared_path(name);
        LoadOptions options;
        const auto mapped = load_model(path, options);
        options.use_mmap = false;
        const auto read = load_model(path, options);
        CHECK(mapped->relaid.size() > 0);
        CHECK(read->relaid.size() == 0);
        const LayerWeights& L = mapped->layers[0];
        for (const Weight* w : {&L.wq, &L.ffn_down}) {
            REQUIRE(w->interleaved);
            CHECK(w->tensor->data >= mapped->relaid.data());
            CHECK(w->tensor->data < mapped->relaid.data() + mapped->relaid.size());
        }
        const std::vector<int32_t> prompt = {1, 5, 9, 2, 7, 3};
        Session a(*mapped, SessionOptions{.n_threads = 2}), b(*read, SessionOptions{.n_threads = 2});
        const auto la = a.eval(prompt), lb = b.eval(prompt);
        CHECK(std::equal(la.begin(), la.end(), lb.begin(), lb.end()));
    }
}
