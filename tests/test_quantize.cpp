// Quantization: float32 rows into every block format, checked against llama.cpp's own quantization
// of the golden model (byte for byte, and by error where bytes could legitimately differ), and by
// round trips through dequantize_row on random and awkward rows.
#include "catch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "numeric.h"
#include "sample_blocks.h"
#include "quant/quantize.h"
#include "quant/tensor_type.h"
#include "runtime/format/gguf.h"
#include "shared_data.h"

using namespace rill;

namespace {

GgufFile open_golden(const std::string& format) {
    return GgufFile::open(test::shared_path("golden/synth-llama-A." + format + ".gguf"));
}

std::vector<float> tensor_floats(const GgufTensor& t) {
    REQUIRE(t.type == TensorType::F32);
    std::vector<float> out(t.n_elements);
    std::memcpy(out.data(), t.data, t.n_bytes);  // copied: file bytes carry no alignment promise
    return out;
}

// Quantizes the float weights row by row into the type and shape of `like`.
std::vector<uint8_t> quantize_like(const GgufTensor& like, const std::vector<float>& weights) {
    std::vector<uint8_t> out(like.n_bytes);
    for (uint64_t r = 0; r < like.n_rows(); ++r)
        quantize_row(like.type, weights.data() + r * like.ne[0], out.data() + r * like.row_bytes(), like.ne[0]);
    return out;
}

double rmse_of(const GgufTensor& shape, const uint8_t* data, const std::vector<float>& weights) {
    std::vector<float> row(shape.ne[0]);
    double sum = 0;
    for (uint64_t r = 0; r < shape.n_rows(); ++r) {
        dequantize_row(shape.type, data + r * shape.row_bytes(), row.data(), shape.ne[0]);
        for (size_t i = 0; i < row.size(); ++i) {
            const double e = double(row[i]) - weights[r * shape.ne[0] + i];
            sum += e * e;
        }
    }
    return std::sqrt(sum / double(shape.n_elements));
}

size_t differing_blocks(const GgufTensor& expected, const std::vector<uint8_t>& actual) {
    const size_t bytes = traits(expected.type).bytes_per_block;
    size_t count = 0;
    for (size_t b = 0; b < expected.n_bytes / bytes; ++b)
        count += std::memcmp(expected.data + b * bytes, actual.data() + b * bytes, bytes) != 0;
    return count;
}

// Calls check(golden tensor, its float weights) for every quantized tensor of the golden files.
template <typename Check>
void for_each_golden_tensor(std::initializer_list<const char*> formats, Check check) {
    const GgufFile f32 = open_golden("F32");
    for (const char* format : formats) {
        const GgufFile g = open_golden(format);
        size_t checked = 0;
        for (const GgufTensor& t : g.tensors()) {
            if (t.type == TensorType::F32) continue;  // 1-D norms stay float
            INFO(format << " " << t.name << " " << traits(t.type).name);
            const GgufTensor* source = f32.find_tensor(t.name);
            REQUIRE(source != nullptr);
            REQUIRE(source->n_elements == t.n_elements);
            check(t, tensor_floats(*source));
            ++checked;
        }
        CHECK(checked > 0);
    }
}

// Relative RMSE (over the row's RMS) a round trip of an N(0,1) row stays under: about 1.25 times
// what each format gives, so a real regression shows and noise does not.
double round_trip_bound(TensorType type) {
    switch (type) {
        case TensorType::F32: return 0.0;
        case TensorType::F16: return 3e-4;
        case TensorType::BF16: return 2.5e-3;
        case TensorType::Q8_0: return 0.008;
        case TensorType::Q6_K: return 0.025;
        case TensorType::Q5_0: return 0.06;
        case TensorType::Q5_1: return 0.05;
        case TensorType::Q5_K: return 0.05;
        case TensorType::Q4_0: return 0.11;
        case TensorType::Q4_1: return 0.1;
        case TensorType::Q4_K: return 0.09;
        case TensorType::IQ4_NL: return 0.1;
        case TensorType::IQ4_XS: return 0.1;
        case TensorType::Q3_K: return 0.2;
        case TensorType::Q2_K: return 0.38;
        case TensorType::MXFP4: return 0.14;  // 4-bit floats under a power-of-two scale: measured 0.112
        // The lattice types, weighted by x² (or a flat importance where one is needed); measured on
        // this row: IQ3_S 0.167, IQ3_XXS 0.216, IQ2_S 0.267, IQ2_XS 0.302, IQ2_XXS 0.344, IQ1_S 0.487, IQ1_M 0.578.
        case TensorType::IQ3_S: return 0.21;
        case TensorType::IQ3_XXS: return 0.27;
        case TensorType::IQ2_S: return 0.34;
        case TensorType::IQ2_XS: return 0.38;
        case TensorType::IQ2_XXS: return 0.43;
        case TensorType::IQ1_S: return 0.61;
        case TensorType::IQ1_M: return 0.72;
        case TensorType::TQ1_0:
        case TensorType::TQ2_0: return 0.85;  // -1, 0, +1 times the block's largest magnitude: normal data 0.79; the types
                                               // are for weights trained ternary, which round-trip exactly (test below)
        default: break;
    }
    return 0.0;
}

bool is_lattice_type(TensorType type) {
    switch (type) {
        case TensorType::IQ2_XXS: case TensorType::IQ2_XS: case TensorType::IQ2_S: case TensorType::IQ3_XXS:
        case TensorType::IQ3_S: case TensorType::IQ1_S: case TensorType::IQ1_M: return true;
        default: return false;
    }
}

std::vector<float> round_trip(TensorType type, const std::vector<float>& row) {
    std::vector<uint8_t> q(row_bytes(type, row.size()));
    test::quantize_for_test(type, row.data(), q.data(), row.size());
    std::vector<float> out(row.size());
    dequantize_row(type, q.data(), out.data(), row.size());
    return out;
}

double relative_rmse(const std::vector<float>& expected, const std::vector<float>& actual) {
    double err = 0, energy = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
        err += (double(actual[i]) - expected[i]) * (double(actual[i]) - expected[i]);
        energy += double(expected[i]) * expected[i];
    }
    return std::sqrt(err / energy);
}

constexpr size_t kRow = 4096;  // a multiple of every block size, long enough for stable statistics

}  // namespace

TEST_CASE("every readable type can be quantized, IQ2_XXS, IQ2_XS and IQ1_S only with an importance matrix", "[quantize]") {
    const std::string_view needing[] = {"IQ2_XXS", "IQ2_XS", "IQ1_S"};
    for (const TensorTypeTraits& t : all_tensor_types()) {
        INFO(t.name);
        CHECK(can_quantize(t.type));
        const bool needs = std::find(std::begin(needing), std::end(needing), t.name) != std::end(needing);
        CHECK(needs_importance(t.type) == needs);
        if (needs) {
            std::vector<uint8_t> out(row_bytes(t.type, 256));
            const std::vector<float> x(256, 1.0f);
            CHECK_THROWS_AS(quantize_row(t.type, x.data(), out.data(), 256), std::invalid_argument);
        }
    }
}

TEST_CASE("nearest_int rounds halves to even, as ggml's does", "[quantize]") {
    CHECK(nearest_int(2.5f) == 2);
    CHECK(nearest_int(3.5f) == 4);
    CHECK(nearest_int(-2.5f) == -2);
    CHECK(nearest_int(-0.5f) == 0);
    CHECK(nearest_int(0.49999997f) == 0);
    CHECK(nearest_int(-31.7f) == -32);
    CHECK(nearest_int(4194303.0f) == 4194303);
}

TEST_CASE("Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 quantize every golden tensor byte for byte as llama-quantize --pure",
          "[quantize][golden]") {
    for_each_golden_tensor({"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"}, [](const GgufTensor& t, const std::vector<float>& w) {
        CHECK(differing_blocks(t, quantize_like(t, w)) == 0);
    });
}

TEST_CASE("F16 and BF16 rows round to nearest even exactly as llama.cpp converted the golden tensors",
          "[quantize][golden]") {
    for_each_golden_tensor({"F16", "BF16"}, [](const GgufTensor& t, const std::vector<float>& w) {
        CHECK(differing_blocks(t, quantize_like(t, w)) == 0);
    });
}

TEST_CASE("k-quant and IQ4 quantization of every golden tensor errs at most 1.02 times llama.cpp's",
          "[quantize][golden]") {
    for_each_golden_tensor({"Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS"},
                           [](const GgufTensor& t, const std::vector<float>& w) {
                               const double ours = rmse_of(t, quantize_like(t, w).data(), w);
                               const double theirs = rmse_of(t, t.data, w);
                               CHECK(theirs > 0.0);
                               CHECK(ours <= 1.02 * theirs);
                           });
}

TEST_CASE("k-quant and IQ4 quantization of every golden tensor matches llama-quantize byte for byte",
          "[quantize][golden]") {
    // Stronger than the error bound above: the same fits, in the same float operations, as ggml.
    for_each_golden_tensor({"Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS"},
                           [](const GgufTensor& t, const std::vector<float>& w) {
                               CHECK(differing_blocks(t, quantize_like(t, w)) == 0);
                           });
}

TEST_CASE("a random row round-trips through every type with small error", "[quantize]") {
    const std::vector<float> row = test::normal_floats(kRow, 1);
    for (const TensorTypeTraits& t : all_tensor_types()) {
        if (!can_quantize(t.type)) continue;
        INFO(t.name);
        CHECK(relative_rmse(row, round_trip(t.type, row)) <= round_trip_bound(t.type));
    }
}

TEST_CASE("an all-zero row decodes to exact zeros in every type", "[quantize]") {
    const std::vector<float> zeros(kRow, 0.0f);
    for (const TensorTypeTraits& t : all_tensor_types()) {
        if (!can_quantize(t.type)) continue;
        INFO(t.name);
        const std::vector<float> out = round_trip(t.type, zeros);
        size_t nonzero = 0;
        for (float x : out) nonzero += x != 0.0f;
        CHECK(nonzero == 0);
    }
}

TEST_CASE("one huge value in a row is kept and leaves the other blocks untouched in every type", "[quantize]") {
    const std::vector<float> plain = test::normal_floats(kRow, 2);
    std::vector<float> spiked = plain;
    const size_t at = 300;  // inside the second 256-element super-block
    spiked[at] = 1000.0f;
    for (const TensorTypeTraits& t : all_tensor_types()) {
        if (!can_quantize(t.type)) continue;
        INFO(t.name);
        const size_t n = kRow;
        std::vector<uint8_t> q_plain(row_bytes(t.type, n)), q_spiked(row_bytes(t.type, n));
        test::quantize_for_test(t.type, plain.data(), q_plain.data(), n);
        test::quantize_for_test(t.type, spiked.data(), q_spiked.data(), n);
        // Blocks are independent: every block but the spike's is the same bytes as without it.
        const size_t spike_block = at / t.block_size;
        size_t changed_elsewhere = 0;
        for (size_t b = 0; b < n / t.block_size; ++b) {
            if (b == spike_block) continue;
            changed_elsewhere +=
                std::memcmp(q_plain.data() + b * t.bytes_per_block, q_spiked.data() + b * t.bytes_per_block,
                            t.bytes_per_block) != 0;
        }
        CHECK(changed_elsewhere == 0);
        std::vector<float> out(n);
        dequantize_row(t.type, q_spiked.data(), out.data(), n);
        // MXFP4's scale is a power of two and its largest level 12, so 1000 becomes 12 · 2^6 = 768,
        // as in ggml: kept as the block's largest value, to the format's resolution.
        // The lattice types store a scale fitted with a bias (ggml multiplies IQ3_S's by 1.033, IQ1_M's
        // by 1.1125) and decode to tuned grid values, not the levels searched: the spike lands within
        // 12% (measured 0.2% for IQ2_XXS up to 11.2% for IQ1_M).
        if (t.type == TensorType::MXFP4) CHECK(out[at] == 768.0f);
        else if (is_lattice_type(t.type)) CHECK(out[at] == Approx(1000.0f).epsilon(0.12));
        else CHECK(out[at] == Approx(1000.0f).epsilon(1e-3));
    }
}

TEST_CASE("a negative-only row round-trips through every type with small error", "[quantize]") {
    std::vector<float> row = test::normal_floats(kRow, 3);
    for (float& x : row) x = -std::fabs(x) - 0.25f;
    for (const TensorTypeTraits& t : all_tensor_types()) {
        if (!can_quantize(t.type)) continue;
        INFO(t.name);
        CHECK(relative_rmse(row, round_trip(t.type, row)) <= round_trip_bound(t.type));
    }
}

TEST_CASE("MXFP4 quantizes as ggml's reference: the exponent from the block's largest magnitude, each value to its nearest level", "[quantize][mxfp4]") {
    // amax 5: floor(log2 5) - 2 + 127 = 127, scale 2^-1; 5 / 0.5 = 10 lies between levels 8 and 12,
    // nearer 8 (the first on a tie), and -0.3 / 0.5 = -0.6 goes to -1.
    std::vector<float> row(32, 0.0f);
    row[0] = 5.0f;
    row[17] = -0.3f;
    std::vector<uint8_t> q(row_bytes(TensorType::MXFP4, 32));
    quantize_row(TensorType::MXFP4, row.data(), q.data(), 32);
    CHECK(q[0] == 127);
    CHECK((q[1] & 0x0f) == 6);  // level 8
    CHECK((q[2] >> 4) == 9);    // level -1, element 17 in the high nibble of byte 1 + 1
    std::vector<float> back(32);
    dequantize_row(TensorType::MXFP4, q.data(), back.data(), 32);
    CHECK(back[0] == 4.0f);
    CHECK(back[17] == -0.5f);
}

TEST_CASE("TQ1_0 and TQ2_0 quantize byte for byte as ggml does, ties included", "[quantize][iq]") {
    // tests/data/iq/quantize.f32: four rows of 512 (three normal, one of exact quarter steps of its
    // largest value), and what ggml's quantize_tq1_0 / quantize_tq2_0 wrote for them
    // (scripts/ggml_reference.sh quantize).
    const std::string dir = std::string(RILL_TEST_DATA_DIR) + "/iq/";
    const std::vector<float> x = test::read_f32(dir + "quantize.f32");
    for (const auto& [type, file] : {std::pair{TensorType::TQ1_0, "tq1_0"}, std::pair{TensorType::TQ2_0, "tq2_0"}}) {
        INFO(file);
        const std::string expected = test::read_text(dir + file + ".quantized");
        std::vector<uint8_t> actual(row_bytes(type, x.size()));
        REQUIRE(actual.size() == expected.size());
        quantize_row(type, x.data(), actual.data(), x.size());
        CHECK(std::memcmp(actual.data(), expected.data(), actual.size()) == 0);
    }
}

TEST_CASE("ternary weights round-trip exactly through TQ1_0 and TQ2_0", "[quantize][iq]") {
    std::vector<float> row(kRow);
    for (size_t i = 0; i < kRow; ++i) row[i] = i % 256 == 7 ? -0.375f : float(int(i * 7919 % 3) - 1) * 0.375f;
    for (const TensorType type : {TensorType::TQ1_0, TensorType::TQ2_0}) {
        INFO(traits(type).name);
        const std::vector<float> back = round_trip(type, row);
        CHECK(std::memcmp(back.data(), row.data(), kRow * sizeof(float)) == 0);
    }
}
