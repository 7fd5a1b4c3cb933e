// Quantizing with an importance matrix, against ggml's own quantizers: tests/data/iq/quantize.f32 (four
// rows of 512: three normal, one of exact quarter steps, so ties and sorted runs of equal values occur),
// quantize.importance.f32 (one importance per column, spread over three decades), and what
// ggml_quantize_chunk wrote for them (scripts/ggml_reference.sh quantize).
#include "catch.h"

#include <cstring>
#include <string>
#include <vector>

#include "quant/quantize.h"
#include "shared_data.h"

using namespace rill;

namespace {

const std::string kDir = std::string(RILL_TEST_DATA_DIR) + "/iq/";
constexpr size_t kCols = 512;

// Each row whole, with the columns' importance (or none), as llama-quantize hands rows to ggml.
std::vector<uint8_t> quantize_rows(TensorType type, const std::vector<float>& x, const float* importance) {
    const size_t stride = row_bytes(type, kCols);
    std::vector<uint8_t> out(stride * (x.size() / kCols));
    for (size_t r = 0; r < x.size() / kCols; ++r) quantize_row(type, x.data() + r * kCols, out.data() + r * stride, kCols, importance);
    return out;
}

size_t differing_bytes(const std::vector<uint8_t>& actual, const std::string& expected) {
    if (actual.size() != expected.size()) return actual.size() + expected.size();
    size_t n = 0;
    for (size_t i = 0; i < actual.size(); ++i) n += actual[i] != uint8_t(expected[i]);
    return n;
}

}  // namespace

TEST_CASE("with an importance vector every type ggml weights by one quantizes byte for byte as ggml", "[quantize][imatrix]") {
    const std::vector<float> x = test::read_f32(kDir + "quantize.f32");
    const std::vector<float> importance = test::read_f32(kDir + "quantize.importance.f32");
    REQUIRE(importance.size() == kCols);
    const std::pair<TensorType, const char*> types[] = {
        {TensorType::Q4_0, "q4_0"},       {TensorType::Q4_1, "q4_1"},       {TensorType::Q5_0, "q5_0"},   {TensorType::Q5_1, "q5_1"},
        {TensorType::Q2_K, "q2_k"},       {TensorType::Q3_K, "q3_k"},       {TensorType::Q4_K, "q4_k"},   {TensorType::Q5_K, "q5_k"},
        {TensorType::Q6_K, "q6_k"},       {TensorType::IQ4_NL, "iq4_nl"},   {TensorType::IQ4_XS, "iq4_xs"}, {TensorType::IQ2_XXS, "iq2_xxs"},
        {TensorType::IQ2_XS, "iq2_xs"},   {TensorType::IQ2_S, "iq2_s"},     {TensorType::IQ3_XXS, "iq3_xxs"}, {TensorType::IQ3_S, "iq3_s"},
        {TensorType::IQ1_S, "iq1_s"},     {TensorType::IQ1_M, "iq1_m"}};
    for (const auto& [type, file] : types) {
        INFO(file);
        CHECK(differing_bytes(quantize_rows(type, x, importance.data()), test::read_text(kDir + file + ".imatrix.quantized")) == 0);
    }
}

TEST_CASE("without one IQ2_S, IQ3_XXS, IQ3_S and IQ1_M weigh values by their square, byte for byte as ggml", "[quantize][imatrix]") {
    const std::vector<float> x = test::read_f32(kDir + "quantize.f32");
    const std::pair<TensorType, const char*> types[] = {
        {TensorType::IQ2_S, "iq2_s"}, {TensorType::IQ3_XXS, "iq3_xxs"}, {TensorType::IQ3_S, "iq3_s"}, {TensorType::IQ1_M, "iq1_m"}};
    for (const auto& [type, file] : types) {
        INFO(file);
        CHECK(differing_bytes(quantize_rows(type, x, nullptr), test::read_text(kDir + file + ".quantized")) == 0);
    }
}

TEST_CASE("an importance vector changes the bytes only where ggml's quantizer reads one", "[quantize][imatrix]") {
    // Q8_0, MXFP4 and the ternary types have no weighted quantizer in ggml: the importance is ignored.
    const std::vector<float> x = test::read_f32(kDir + "quantize.f32");
    const std::vector<float> importance = test::read_f32(kDir + "quantize.importance.f32");
    for (const TensorType type : {TensorType::Q8_0, TensorType::MXFP4, TensorType::TQ1_0, TensorType::TQ2_0}) {
        INFO(traits(type).name);
        CHECK(quantize_rows(type, x, importance.data()) == quantize_rows(type, x, nullptr));
    }
    CHECK(quantize_rows(TensorType::Q4_K, x, importance.data()) != quantize_rows(TensorType::Q4_K, x, nullptr));
}
