// Tensor types: block geometry, half-float conversion, and dequantization bit-exact with ggml.
#include "catch.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "quant/fp16.h"
#include "quant/tensor_type.h"
#include "runtime/format/gguf.h"
#include "shared_data.h"

using namespace rill;

namespace {

const char* const kGoldenFormats[] = {"F32",  "F16",  "BF16", "Q8_0",   "Q6_K",   "Q5_K_M", "Q5_1", "Q5_0",
                                      "Q4_K_M", "Q4_1", "Q4_0", "IQ4_NL", "IQ4_XS", "Q3_K_M", "Q2_K"};

}  // namespace

TEST_CASE("every readable type has ggml's block size and bytes per block", "[quant]") {
    struct Geometry {
        const char* name;
        size_t block, bytes;
    };
    const Geometry expected[] = {{"F32", 1, 4},      {"F16", 1, 2},       {"BF16", 1, 2},    {"Q4_0", 32, 18},
                                 {"Q4_1", 32, 20},   {"Q5_0", 32, 22},    {"Q5_1", 32, 24},  {"Q8_0", 32, 34},
                                 {"Q2_K", 256, 84},  {"Q3_K", 256, 110},  {"Q4_K", 256, 144}, {"Q5_K", 256, 176},
                                 {"Q6_K", 256, 210}, {"IQ4_NL", 32, 18}, {"IQ4_XS", 256, 136}, {"MXFP4", 32, 17},
                                 {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74}, {"IQ2_S", 256, 82},  {"IQ3_XXS", 256, 98},
                                 {"IQ3_S", 256, 110}, {"IQ1_S", 256, 50},  {"IQ1_M", 256, 56},  {"TQ1_0", 256, 54},
                                 {"TQ2_0", 256, 66}};
    REQUIRE(all_tensor_types().size() == std::size(expected));
    for (const Geometry& g : expected) {
        INFO(g.name);
        const TensorTypeTraits* t = nullptr;
        for (const auto& candidate : all_tensor_types())
            if (candidate.name == g.name) t = &candidate;
        REQUIRE(t != nullptr);
        CHECK(t->block_size == g.block);
        CHECK(t->bytes_per_block == g.bytes);
        CHECK(find_tensor_type(uint32_t(t->type)) == t);
    }
}

TEST_CASE("half floats convert exactly and round to nearest even", "[quant]") {
    for (uint32_t h = 0; h < 65536; ++h) {
        const float f = f16_to_f32(uint16_t(h));
        if (f != f) continue;  // NaN payloads need not round-trip
        REQUIRE(f32_to_f16(f) == h);
    }
    CHECK(f16_to_f32(0x3c00) == 1.0f);
    CHECK(f16_to_f32(0x0001) == 0x1p-24f);
    CHECK(f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);               // tie rounds to even
    CHECK(f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);   // above the tie rounds up
    CHECK(f32_to_f16(65520.0f) == 0x7c00);                      // overflows to infinity
    CHECK(f32_to_f16(0x1p-25f) == 0x0000);                      // half the smallest subnormal: tie to even zero
    CHECK(bf16_to_f32(f32_to_bf16(1.5f)) == 1.5f);
    CHECK(f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);  // tie rounds to even
}

TEST_CASE("every golden model's ffn_down dequantizes bit for bit as ggml does", "[quant][golden]") {
    for (const char* format : kGoldenFormats) {
        INFO(format);
        const std::string base = test::shared_path(std::string("golden/synth-llama-A.") + format);
        const GgufFile g = GgufFile::open(base + ".gguf");
        const GgufTensor* t = g.find_tensor("blk.0.ffn_down.weight");
        REQUIRE(t != nullptr);
        const auto golden = nlohmann::json::parse(test::read_text(base + ".golden.json"));
        CHECK(std::string(traits(t->type).name) == golden["tensor_types"]["blk.0.ffn_down.weight"].get<std::string>());

        const std::vector<float> expected = test::read_f32(base + ".ffn_down.f32");
        REQUIRE(expected.size() == t->n_elements);
        std::vector<float> actual(t->n_elements);
        for (uint64_t r = 0; r < t->n_rows(); ++r)
            dequantize_row(t->type, t->data + r * t->row_bytes(), actual.data() + r * t->ne[0], t->ne[0]);
        size_t mismatches = 0;
        for (size_t i = 0; i < expected.size(); ++i) mismatches += f32_to_bits(actual[i]) != f32_to_bits(expected[i]);
        CHECK(mismatches == 0);
    }
}

TEST_CASE("the K-quant mixes' other tensor types dequantize too", "[quant][golden]") {
    // Q4_K_M, Q5_K_M and Q3_K_M also hold Q6_K, Q5_K and Q4_K tensors: all must decode to finite values.
    for (const char* format : {"Q4_K_M", "Q5_K_M", "Q3_K_M"}) {
        const GgufFile g = GgufFile::open(test::shared_path(std::string("golden/synth-llama-A.") + format + ".gguf"));
        for (const GgufTensor& t : g.tensors()) {
            INFO(format << " " << t.name);
            std::vector<float> row(t.ne[0]);
            dequantize_row(t.type, t.data, row.data(), t.ne[0]);
            for (float x : row) REQUIRE(std::isfinite(x));
        }
    }
}

TEST_CASE("every IQ1-IQ3 and ternary type dequantizes random blocks bit for bit as ggml does", "[quant][iq]") {
    // tests/data/iq: random blocks (with sane half scales) and what ggml's dequantize_row_* made of them,
    // written by scripts/ggml_reference.sh dequant through the llama.cpp peer's libggml.
    for (const char* name : {"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0"}) {
        INFO(name);
        std::string lower = name;
        for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
        const std::string base = std::string(RILL_TEST_DATA_DIR) + "/iq/" + lower;
        const std::string text = test::read_text(base + ".blocks");
        const std::vector<float> expected = test::read_f32(base + ".f32");
        const TensorTypeTraits* t = nullptr;
        for (const auto& candidate : all_tensor_types())
            if (candidate.name == name) t = &candidate;
        REQUIRE(t != nullptr);
        REQUIRE(text.size() % t->bytes_per_block == 0);
        REQUIRE(expected.size() == text.size() / t->bytes_per_block * t->block_size);
        std::vector<float> actual(expected.size());
        dequantize_row(t->type, reinterpret_cast<const uint8_t*>(text.data()), actual.data(), actual.size());
        size_t mismatches = 0;
        for (size_t i = 0; i < expected.size(); ++i) mismatches += f32_to_bits(actual[i]) != f32_to_bits(expected[i]);
        CHECK(mismatches == 0);
    }
}
