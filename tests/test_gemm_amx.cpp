// The AMX bf16 tile GEMM (simd/gemm_amx.h) on its own: exact packing, bfloat16-rounding accuracy, and
// sums that do not depend on how rows and tokens are cut into calls. Where the CPU or OS has no AMX
// tiles, the cases that run the tiles are skipped with a line; the packing cases run everywhere.
#include "catch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "numeric.h"
#include "random_weight.h"
#include "quant/fp16.h"
#include "simd/gemm_amx.h"

using namespace rill;

namespace {

bool amx_here() {
    if (simd::amx_bf16_available()) return true;
    WARN("skipped: no AMX tiles with bfloat16 products here (Intel Xeon from Sapphire Rapids), or the OS refused them");
    return false;
}

std::vector<uint16_t> bf16_of(const std::vector<float>& x) {
    std::vector<uint16_t> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = f32_to_bf16(x[i]);
    return out;
}

// The product of rows of w (n_rows by cols) and tokens of x (n_tokens by cols), out[t][r].
std::vector<float> amx_product(const std::vector<uint16_t>& w, int n_rows, const std::vector<uint16_t>& x, int n_tokens, size_t cols) {
    std::vector<uint16_t> packed(simd::amx_packed_act_elements(n_tokens, cols)), panel(simd::amx_packed_weight_elements(n_rows, cols));
    for (int b = 0; b < simd::amx_act_blocks(n_tokens); ++b) simd::amx_pack_act(x.data(), n_tokens, b, cols, packed.data());
    simd::amx_pack_weights(w.data(), cols, n_rows, cols, panel.data());
    std::vector<float> sums(simd::amx_acc_elements(n_rows, n_tokens)), out(size_t(n_rows) * size_t(n_tokens));
    simd::amx_gemm_bf16(panel.data(), n_rows, packed.data(), n_tokens, cols, sums.data(), out.data(), size_t(n_rows));
    return out;
}

}  // namespace

TEST_CASE("packed tokens hold each column pair of each token once, and zeros past the batch", "[amx]") {
    const size_t cols = 64;
    const int n_tokens = 19;
    std::vector<uint16_t> x(size_t(n_tokens) * cols);
    for (size_t i = 0; i < x.size(); ++i) x[i] = uint16_t(i + 1);
    std::vector<uint16_t> packed(simd::amx_packed_act_elements(n_tokens, cols), 0xffff);
    REQUIRE(simd::amx_act_blocks(n_tokens) == 2);
    for (int b = 0; b < simd::amx_act_blocks(n_tokens); ++b) simd::amx_pack_act(x.data(), n_tokens, b, cols, packed.data());
    // Tile (block, k), row p, token n: columns 32k + 2p and 32k + 2p + 1 of token 16 block + n.
    for (int b = 0; b < 2; ++b)
        for (size_t k = 0; k < cols / 32; ++k)
            for (int p = 0; p < 16; ++p)
                for (int n = 0; n < 16; ++n)
                    for (int e = 0; e < 2; ++e) {
                        const int t = b * 16 + n;
                        const uint16_t got = packed[((size_t(b) * (cols / 32) + k) * 16 + size_t(p)) * 32 + size_t(n) * 2 + size_t(e)];
                        CHECK(got == (t < n_tokens ? x[size_t(t) * cols + k * 32 + size_t(p) * 2 + size_t(e)] : 0));
                    }
}

TEST_CASE("a packed panel holds each row's 32-column slices as tile rows, and zero rows up to a whole block", "[amx]") {
    const size_t cols = 96;
    const int n_rows = 20;
    std::vector<uint16_t> w(size_t(n_rows) * cols);
    for (size_t i = 0; i < w.size(); ++i) w[i] = uint16_t(i + 1);
    std::vector<uint16_t> panel(simd::amx_packed_weight_elements(n_rows, cols), 0xffff);
    REQUIRE(panel.size() == 32 * cols);
    simd::amx_pack_weights(w.data(), cols, n_rows, cols, panel.data());
    for (int r = 0; r < 32; ++r)
        for (size_t c = 0; c < cols; ++c) {
            const size_t at = ((size_t(r / 16) * (cols / 32) + c / 32) * 16 + size_t(r % 16)) * 32 + c % 32;
            CHECK(panel[at] == (r < n_rows ? w[size_t(r) * cols + c] : 0));
        }
}

// Both factors are already bfloat16, so every product is exact in float32; what remains is float32
// summation over cols terms, under cols * 2^-24 of the sum of |products| (1024 terms: 6e-5). 1e-4 is that.
TEST_CASE("the tile product is within float32 summation of exact arithmetic on bfloat16 inputs", "[amx]") {
    if (!amx_here()) return;
    const size_t cols = 1024;
    const int n_rows = 45, n_tokens = 37;
    std::vector<float> wf = test::normal_floats(size_t(n_rows) * cols, 11), xf = test::normal_floats(size_t(n_tokens) * cols, 12);
    const std::vector<uint16_t> w = bf16_of(wf), x = bf16_of(xf);
    for (size_t i = 0; i < wf.size(); ++i) wf[i] = bf16_to_f32(w[i]);
    for (size_t i = 0; i < xf.size(); ++i) xf[i] = bf16_to_f32(x[i]);
    const std::vector<float> out = amx_product(w, n_rows, x, n_tokens, cols);
    CHECK(test::products_off(wf, xf, out, size_t(n_rows), cols, 1e-4) == 0);
}

TEST_CASE("a row's sums are the same bits whichever panel and batch it is computed in", "[amx][threads]") {
    if (!amx_here()) return;
    const size_t cols = 2560;  // wider than one pass over the columns, so sums wait in memory between passes
    const int n_rows = 40, n_tokens = 50;
    const std::vector<uint16_t> w = bf16_of(test::normal_floats(size_t(n_rows) * cols, 21));
    const std::vector<uint16_t> x = bf16_of(test::normal_floats(size_t(n_tokens) * cols, 22));
    const std::vector<float> whole = amx_product(w, n_rows, x, n_tokens, cols);
    // Rows 16-39 alone (a different place in their tiles), against the first 5 tokens alone.
    const std::vector<uint16_t> w_tail(w.begin() + 16 * long(cols), w.end());
    const std::vector<uint16_t> x_head(x.begin(), x.begin() + 5 * long(cols));
    const std::vector<float> part = amx_product(w_tail, n_rows - 16, x_head, 5, cols);
    for (int t = 0; t < 5; ++t)
        for (int r = 16; r < n_rows; ++r) {
            INFO("token " << t << ", row " << r);
            CHECK(std::memcmp(&part[size_t(t) * size_t(n_rows - 16) + size_t(r - 16)], &whole[size_t(t) * size_t(n_rows) + size_t(r)], 4) == 0);
        }
}


TEST_CASE("float rows rounded into tiles give the same panel as rounding them first and packing, NaNs and padding included", "[amx]") {
    if (!amx_here()) return;
    const size_t cols = 96;
    const int n_rows = 21;  // two row groups of 8 and a partial one, then 11 rows of padding
    std::vector<float> rows = test::normal_floats(size_t(n_rows) * cols, 41);
    rows[7] = std::numeric_limits<float>::quiet_NaN();
    rows[8] = 1e-40f;        // subnormal: kept
    rows[9] = 1.00390625f;   // halfway: to even
    std::vector<uint16_t> expected(simd::amx_packed_weight_elements(n_rows, cols)), got(expected.size(), 0xffff);
    simd::amx_pack_weights(bf16_of(rows).data(), cols, n_rows, cols, expected.data());
    for (int r = 0; r < n_rows; r += 8)
        simd::amx_pack_weights_f32(rows.data() + size_t(r) * cols, r, std::min(8, n_rows - r), n_rows, cols, got.data());
    CHECK(got == expected);
}

TEST_CASE("interleaved Q4_0 and Q8_0 groups packed as they lie give the panel of their dequantized rows", "[amx]") {
    if (!amx_here()) return;
    const size_t cols = 128;
    const int n_rows = 24;  // three groups of eight: the last one pads the panel to 32 rows
    for (const TensorType type : {TensorType::Q4_0, TensorType::Q8_0}) {
        INFO(traits(type).name);
        const test::RandomWeight w(type, size_t(n_rows), cols, 500);  // its bytes already interleaved
        REQUIRE(w.weight.interleaved);
        const std::vector<uint8_t>& grouped = w.bytes;
        const size_t row_stride = row_bytes(type, cols);
        std::vector<uint16_t> expected(simd::amx_packed_weight_elements(n_rows, cols)), got(expected.size(), 0xffff);
        simd::amx_pack_weights_f32(w.values.data(), 0, n_rows, n_rows, cols, expected.data());
        for (int r = 0; r < n_rows; r += 8) simd::amx_pack_group(type, grouped.data() + size_t(r) * row_stride, r, n_rows, cols, got.data());
        CHECK(got == expected);
    }
}
