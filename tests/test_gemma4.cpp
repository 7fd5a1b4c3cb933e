// Gemma 4 against ../shared/arch/gemma4-A (E2B/E4B style: PLE, KV sharing, double-wide FFN) and
// gemma4-moe-A (26B-A4B style: experts beside a dense FFN, V from K on the full layers): llama.cpp's
// gguf-py files with a float64 reference pass. The arch README measures float32 rounding at 1e-5 to
// 2e-5 on these log-probs and every simulated bug at ≥ 0.65 (GELU with erf: 0.004), so an exact
// float32 pass must land within 1e-4 of the reference; llama.cpp's FP16 GELU table puts it 4e-3 to
// 9e-3 away.
#include "catch.h"
#include "kernel_paths.h"

#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "arch_case.h"
#include "greedy.h"
#include "numeric.h"
#include "quant/fp16.h"
#include "runtime/format/gguf_writer.h"
#include "runtime/make/quant_mix.h"
#include "runtime/make/synth.h"
#include "runtime/session/session.h"
#include "shared_data.h"
#include "temp_file.h"

using namespace rill;

namespace {

const char* const kGemma4[] = {"gemma4-A", "gemma4-moe-A"};

using Gemma4Case = test::ReferenceCase;

Gemma4Case open_case(const std::string& name) { return test::open_reference_case(name); }

using test::exact_options;

double distance_to(std::span<const float> logits, const nlohmann::json& reference) {
    return test::max_logprob_distance(logits, reference.get<std::vector<double>>());
}

using test::bits_differing;
using test::max_abs_difference;
const auto copy = test::copy_of;

}  // namespace

TEST_CASE("gemma4's log-probs after the prompt are within 1e-4 of the float64 reference with an exact GELU", "[gemma4]") {
    for (const char* name : kGemma4) {
        Gemma4Case c = open_case(name);
        Session session(*c.model, exact_options());
        const double ours = distance_to(session.eval(c.prompt()), c.data["ref_logprobs_last"]);
        INFO(name << ": ours " << ours << ", llama.cpp " << c.data["max_abs_diff_llamacpp_vs_ref"].get<double>());
        CHECK(ours < 1e-4);
    }
}

TEST_CASE("gemma4's 16 greedy tokens equal the reference's on every kernel path", "[gemma4]") {
    for (const char* name : kGemma4) {
        Gemma4Case c = open_case(name);
        const auto ref = c.data["ref_greedy"].get<std::vector<int32_t>>();
        for (const simd::KernelPath path : test::kernel_paths()) {
            INFO(name << " on " << simd::kernel_path_name(path));
            Session session(*c.model, exact_options(2, 512, path));
            CHECK(test::greedy(session, c.prompt(), int(ref.size())) == ref);
        }
    }
}

TEST_CASE("gemma4's logits are bit-identical with 1 and 2 threads on every kernel path", "[gemma4][threads]") {
    for (const char* name : kGemma4) {
        Gemma4Case c = open_case(name);
        for (const simd::KernelPath path : test::kernel_paths()) {
            INFO(name << " on " << simd::kernel_path_name(path));
            Session one(*c.model, SessionOptions{.n_threads = 1, .kernels = path});
            Session two(*c.model, SessionOptions{.n_threads = 2, .kernels = path});
            const auto a = copy(one.eval(c.prompt(), true));
            CHECK(bits_differing(a, two.eval(c.prompt(), true)) == 0);
        }
    }
}

// The 40-token prompt is four and five times the windows (10, 8): decoding token by token goes round
// each sliding layer's ring, and the KV-shared layers read their donors' rings. Same arithmetic per
// row as the batch, but the batch's attention sums differently: 1e-4.
TEST_CASE("gemma4 decoded token by token matches its batch evaluation, its sliding layers sliding", "[gemma4]") {
    for (const char* name : kGemma4) {
        Gemma4Case c = open_case(name);
        const auto prompt = c.prompt();
        REQUIRE(int(prompt.size()) > 2 * c.model->hp.n_swa);
        Session batch(*c.model, exact_options());
        const auto whole = copy(batch.eval(prompt));
        Session single(*c.model, exact_options(1, 4));
        std::span<const float> last;
        for (const int32_t t : prompt) last = single.eval(std::span(&t, 1));
        INFO(name);
        CHECK(max_abs_difference(last, whole) < 1e-4);
    }
}

TEST_CASE("gemma4's per-layer shapes come from its arrays and its _swa keys", "[gemma4]") {
    Gemma4Case c = open_case("gemma4-A");
    const Hparams& hp = c.model->hp;
    CHECK(hp.head_dim_of(0) == 32);
    CHECK(hp.head_dim_of(2) == 64);
    CHECK(hp.n_head_kv_of(1) == 2);
    CHECK(hp.n_head_kv_of(5) == 1);
    CHECK(hp.n_ff_of(2) == 48);
    CHECK(hp.n_ff_of(3) == 96);
    CHECK(hp.n_rot_of(0) == 32);
    CHECK(hp.n_rot_of(2) == 64);
    CHECK(hp.kq_scale() == 1.0f);
    CHECK(hp.final_logit_softcap == 30.0f);
    CHECK(hp.n_embd_per_layer == 32);
    CHECK(std::vector<uint8_t>(hp.layer_sliding) == std::vector<uint8_t>{1, 1, 0, 1, 1, 0});
}

TEST_CASE("gemma4's KV-shared layers read their donor's cache and store nothing", "[gemma4]") {
    Gemma4Case c = open_case("gemma4-A");
    const Hparams& hp = c.model->hp;
    CHECK(std::vector<int>{hp.kv_source(3), hp.kv_source(4), hp.kv_source(5)} == std::vector<int>{1, 1, 2});
    Session session(*c.model, SessionOptions{.n_ctx = 512, .n_threads = 1, .n_batch = 16});
    const KvCache& kv = session.kv_cache();
    CHECK(kv.capacity == std::vector<int>{10 + 16, 10 + 16, 512, 0, 0, 0});
    // F16: sliding rows of 2 heads × 32, full rows of 1 head × 64, keys and values.
    CHECK(kv.bytes() == uint64_t(2) * 2 * (2 * 26 * 64 + 512 * 64));
}

// Real E2B/E4B conversions keep attn_k, attn_v and attn_k_norm on the shared layers, QAT exports drop
// them: llama.cpp never reads them, and neither does rill.
TEST_CASE("gemma4 without K and V tensors on its KV-shared layers gives the same logits", "[gemma4]") {
    Gemma4Case c = open_case("gemma4-A");
    const GgufFile& src = c.model->file;
    const std::string path = test::temp_file("gemma4-no-shared-kv.gguf");
    const auto dropped = [](const std::string& name) {
        for (const char* layer : {"blk.3.", "blk.4.", "blk.5."})
            for (const char* t : {"attn_k.weight", "attn_v.weight", "attn_k_norm.weight"})
                if (name == std::string(layer) + t) return true;
        return false;
    };
    {
        GgufWriter w(path);
        for (const auto& [key, value] : src.metadata())
            if (key != "general.alignment") w.set_value(key, value);
        for (const GgufTensor& t : src.tensors())
            if (!dropped(t.name)) w.add_tensor(t.name, t.type, std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
        w.begin_data();
        for (const GgufTensor& t : src.tensors())
            if (!dropped(t.name)) w.write_data(std::span(t.data, t.n_bytes));
        w.finish();
    }
    const auto without = load_model(path);
    Session a(*c.model, exact_options()), b(*without, exact_options());
    CHECK(bits_differing(copy(a.eval(c.prompt())), b.eval(c.prompt())) == 0);
    std::filesystem::remove(path);
}

TEST_CASE("gemma4's prompt evaluated in pieces of any size ends where one batch does", "[gemma4]") {
    for (const char* name : kGemma4) {
        Gemma4Case c = open_case(name);
        const auto prompt = c.prompt();
        Session whole(*c.model, exact_options(1, 4));
        const auto expected = copy(whole.eval(prompt));
        Session pieces(*c.model, exact_options(1, 4));
        std::span<const float> last;
        for (size_t at = 0; at < prompt.size(); at += 3) last = pieces.eval(std::span(prompt).subspan(at, std::min<size_t>(3, prompt.size() - at)));
        INFO(name);
        CHECK(bits_differing(last, expected) == 0);
    }
}

TEST_CASE("gemma4's saved state continues in another session exactly as without the interruption", "[gemma4][state]") {
    for (const char* name : kGemma4) {
        Gemma4Case c = open_case(name);
        Session a(*c.model, exact_options(1, 8));
        a.eval(c.prompt());
        const auto state = a.save_state();
        Session b(*c.model, exact_options(1, 8));
        b.load_state(state);
        const int32_t next = 7;
        const auto expected = copy(a.eval(std::span(&next, 1)));
        INFO(name);
        CHECK(bits_differing(b.eval(std::span(&next, 1)), expected) == 0);
    }
}

// The planner's hyperparameters for a preset must be what the loader reads from the file synth writes
// (Gemma 4's per-layer shapes, and the layer kinds of the LFM2, Nemotron-H and Granite 4.0-H layouts).
TEST_CASE("a preset's per-layer hyperparameters are what the loader reads from its synthesized file", "[gemma4][synth]") {
    for (const char* name : {"tiny-gemma4", "tiny-gemma4-moe", "tiny-lfm2", "tiny-lfm2moe", "tiny-nemotron-h", "tiny-nemotron-h-moe", "tiny-granite-h"}) {
        INFO(name);
        const std::string path = test::temp_file(std::string(name) + ".gguf");
        SynthOptions o{.preset = *find_preset(name), .recipe = *find_recipe("F32"), .n_threads = 1};
        synthesize_model(path, o);
        const auto model = load_model(path);
        const Hparams expected = preset_hparams(o.preset), &hp = model->hp;
        CHECK(hp.layer_sliding == expected.layer_sliding);
        CHECK(hp.layer_head_dim == expected.layer_head_dim);
        CHECK(hp.layer_n_head_kv == expected.layer_n_head_kv);
        CHECK(hp.layer_n_ff == expected.layer_n_ff);
        CHECK(hp.layer_kv_source == expected.layer_kv_source);
        CHECK(hp.n_rot_swa == expected.n_rot_swa);
        CHECK(hp.n_embd_per_layer == expected.n_embd_per_layer);
        CHECK(hp.head_dim == expected.head_dim);
        CHECK(hp.n_head_kv == expected.n_head_kv);
        CHECK(hp.n_ff == expected.n_ff);
        CHECK(hp.kq_scale() == expected.kq_scale());
        CHECK(hp.final_logit_softcap == expected.final_logit_softcap);
        CHECK(hp.layer_recurrent == expected.layer_recurrent);
        CHECK(hp.layer_rope == expected.layer_rope);
        CHECK(hp.n_dense_lead == expected.n_dense_lead);
        Session session(*model, exact_options());
        const std::vector<int32_t> prompt = {1, 300, 301, 302, 303, 304, 305, 306, 307, 308, 309, 310};
        const auto logits = session.eval(prompt);
        CHECK(std::all_of(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); }));
        std::filesystem::remove(path);
    }
}
