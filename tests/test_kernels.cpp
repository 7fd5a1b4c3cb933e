// The fused GEMV kernels of every instruction-set path this CPU runs, against exact arithmetic on
// the same inputs: the weights dequantized by the scalar reference and the activations as the
// kernel prepared them.
#include "catch.h"
#include "kernel_paths.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "numeric.h"
#include "random_weight.h"
#include "sample_blocks.h"
#include "quant/interleave.h"
#include "quant/quantize.h"
#include "quant/tensor_type.h"
#include "runtime/compute/matmul.h"
#include "simd/convert.h"
#include "simd/dot.h"
#include "simd/gemv.h"

using namespace rill;
using simd::ActFormat;

namespace {

std::vector<simd::KernelPath> integer_paths() {
    std::vector<simd::KernelPath> paths;
    for (const simd::KernelPath p : test::kernel_paths())
        if (p != simd::KernelPath::Reference) paths.push_back(p);
    return paths;
}

// The activation values a kernel actually multiplies by: q times its block's scale.
std::vector<double> prepared_values(ActFormat format, const std::vector<uint8_t>& act, size_t n) {
    std::vector<double> x(n);
    if (format == ActFormat::F32) {
        for (size_t i = 0; i < n; ++i) {
            float f;
            std::memcpy(&f, act.data() + 4 * i, 4);
            x[i] = f;
        }
        return x;
    }
    const size_t block = format == ActFormat::Q8x32 ? 32 : 256;
    for (size_t i = 0; i < n; ++i) {
        float d;
        std::memcpy(&d, act.data() + n + 4 * (i / block), 4);
        x[i] = double(int8_t(act[i])) * d;
    }
    return x;
}

}  // namespace

TEST_CASE("every integer path is available on the build's CPU family and the generic one everywhere", "[kernels]") {
    const auto paths = simd::supported_kernel_paths();
    CHECK(paths.front() == simd::KernelPath::Reference);
    CHECK(std::find(paths.begin(), paths.end(), simd::KernelPath::Generic) != paths.end());
    for (const auto p : paths) CHECK(simd::parse_kernel_path(simd::kernel_path_name(p)) == p);
    CHECK_FALSE(simd::parse_kernel_path("avx9").has_value());
}

// A run that knows its CPU (scripts/cross-arm64.sh under each qemu CPU model) names the fastest path it
// must get, so a build or a detection that falls back to the generic path fails here.
TEST_CASE("the fastest kernel path is the one the run expects of its CPU", "[kernels]") {
    const char* expected = std::getenv("RILL_EXPECT_KERNELS");
    if (expected == nullptr || *expected == '\0') return;
    const simd::KernelPath best = simd::supported_kernel_paths().back();
    WARN("kernel paths: best is " << simd::kernel_path_name(best));
    CHECK(simd::kernel_path_name(best) == std::string_view(expected));
}

TEST_CASE("prepared activations round each element to its block's nearest 8-bit step", "[kernels]") {
    const size_t n = 1024;
    const auto x = test::normal_floats(n, 7);
    for (const simd::KernelPath path : integer_paths()) {
        for (const ActFormat format : {ActFormat::Q8x32, ActFormat::Q8x256}) {
            INFO(simd::kernel_path_name(path) << " format " << int(format));
            std::vector<uint8_t> act(simd::act_bytes(format, n));
            simd::gemv_kernels(path).prepare(format, x.data(), n, act.data());
            const size_t block = format == ActFormat::Q8x32 ? 32 : 256;
            const auto values = prepared_values(format, act, n);
            for (size_t i = 0; i < n; ++i) {
                float d;
                std::memcpy(&d, act.data() + n + 4 * (i / block), 4);
                REQUIRE(std::abs(int(int8_t(act[i]))) <= 127);
                REQUIRE(std::abs(values[i] - x[i]) <= 0.5 * d * (1 + 1e-6));
            }
            if (format == ActFormat::Q8x256) {  // the sums of 16 the k-quant kernels use for offsets and mins
                for (size_t g = 0; g < n / 16; ++g) {
                    int sum = 0;
                    for (size_t i = 0; i < 16; ++i) sum += int8_t(act[16 * g + i]);
                    int16_t stored;
                    std::memcpy(&stored, act.data() + n + 4 * (n / 256) + 2 * g, 2);
                    REQUIRE(stored == sum);
                }
            }
        }
    }
}

// Each kernel sums exact integer block products and scales them in float32: the only error against
// exact arithmetic on the same inputs is float32 rounding over ~n/32 block terms, well under 1e-5 of
// the sum of |products| (float32's epsilon is 6e-8; a few hundred roundings stay below 2e-5 even if
// all went one way, and in practice they cancel).
TEST_CASE("every kernel on every path equals exact arithmetic on its inputs within float32 rounding", "[kernels]") {
    const size_t cols = 2048 + 256, rows = 5;  // 72 blocks of 32: eight-block groups plus a tail
    for (const simd::KernelPath path : integer_paths()) {
        const simd::GemvKernels& kernels = simd::gemv_kernels(path);
        for (const TensorTypeTraits& t : all_tensor_types()) {
            INFO(simd::kernel_path_name(path) << " " << t.name);
            const size_t stride = row_bytes(t.type, cols);
            std::vector<uint8_t> weights(stride * rows);
            std::vector<float> dequantized(cols * rows);
            for (size_t r = 0; r < rows; ++r) {
                auto w = test::normal_floats(cols, uint32_t(100 + r));
                if (r == 1) std::fill(w.begin(), w.begin() + 256, 0.0f);  // an all-zero block
                test::quantize_for_test(t.type, w.data(), weights.data() + r * stride, cols);
                dequantize_row(t.type, weights.data() + r * stride, dequantized.data() + r * cols, cols);
            }
            auto x = test::normal_floats(cols, 3);
            std::fill(x.begin() + 512, x.begin() + 768, 0.0f);  // all-zero activation blocks
            const ActFormat format = simd::act_format(t.type, path);
            std::vector<uint8_t> act(simd::act_bytes(format, cols));
            kernels.prepare(format, x.data(), cols, act.data());
            const auto xv = prepared_values(format, act, cols);
            std::vector<float> out(rows);
            kernels.dot_rows(t.type)(weights.data(), stride, rows, cols, act.data(), out.data());
            for (size_t r = 0; r < rows; ++r) {
                double exact = 0, magnitude = 0;
                for (size_t i = 0; i < cols; ++i) {
                    exact += double(dequantized[r * cols + i]) * xv[i];
                    magnitude += std::abs(double(dequantized[r * cols + i]) * xv[i]);
                }
                INFO("row " << r << " exact " << exact << " kernel " << out[r]);
                CHECK(std::abs(out[r] - exact) <= 1e-5 * magnitude);
            }
        }
    }
}

TEST_CASE("every weighted-sum kernel for the KV cache's types, on every path, equals exact arithmetic on the stored values", "[kernels][kv]") {
    const size_t n = 128, rows = 37;  // two-block passes and a one-block tail for q8_0 and q4_0
    for (const simd::KernelPath path : integer_paths()) {
        const simd::GemvKernels& kernels = simd::gemv_kernels(path);
        for (const TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0}) {
            INFO(simd::kernel_path_name(path) << " " << traits(type).name);
            const size_t stride = row_bytes(type, n) + 6;  // rows of a wider cache: not packed end to end
            std::vector<uint8_t> values(stride * rows);
            std::vector<float> dequantized(n * rows);
            for (size_t r = 0; r < rows; ++r) {
                quantize_row(type, test::normal_floats(n, uint32_t(200 + r)).data(), values.data() + r * stride, n);
                dequantize_row(type, values.data() + r * stride, dequantized.data() + r * n, n);
            }
            const auto weights = test::normal_floats(rows, 7);
            for (const size_t width : {n, size_t(32), size_t(96)}) {
                INFO("width " << width);
                std::vector<float> out(width);
                kernels.weighted_sum(type)(values.data(), stride, rows, width, weights.data(), out.data());
                for (size_t i = 0; i < width; ++i) {
                    double exact = 0, magnitude = 0;
                    for (size_t r = 0; r < rows; ++r) {
                        exact += double(weights[r]) * dequantized[r * n + i];
                        magnitude += std::abs(double(weights[r]) * dequantized[r * n + i]);
                    }
                    CHECK(std::abs(out[i] - exact) <= 1e-5 * magnitude);
                }
            }
        }
    }
}

TEST_CASE("the grouped-head attention kernels for float caches, on every path, equal exact arithmetic for every head count", "[kernels][kv]") {
    const size_t D = 64, rows = 29;  // rows not a multiple of any pass, so every tail runs
    for (const simd::KernelPath path : integer_paths()) {
        const simd::GemvKernels& kernels = simd::gemv_kernels(path);
        for (const TensorType type : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
            const size_t stride = row_bytes(type, D) * 3;  // a head inside a wider cache row
            std::vector<uint8_t> cache(stride * rows);
            std::vector<float> stored(D * rows);
            for (size_t r = 0; r < rows; ++r) {
                quantize_row(type, test::normal_floats(D, uint32_t(300 + r)).data(), cache.data() + r * stride, D);
                dequantize_row(type, cache.data() + r * stride, stored.data() + r * D, D);
            }
            for (int heads = 1; heads <= 8; ++heads) {
                INFO(simd::kernel_path_name(path) << " " << traits(type).name << " heads " << heads);
                const auto q = test::normal_floats(D * size_t(heads), 11);
                const size_t out_stride = rows + 3;
                std::vector<float> scores(out_stride * size_t(heads));
                kernels.dot_heads(type)(cache.data(), stride, rows, D, q.data(), heads, scores.data(), out_stride);
                const auto weights = test::normal_floats(out_stride * size_t(heads), 12);
                std::vector<float> sums(D * size_t(heads));
                kernels.weighted_sum_heads(type)(cache.data(), stride, rows, D, weights.data(), out_stride, heads, sums.data());
                for (int h = 0; h < heads; ++h) {
                    for (size_t r = 0; r < rows; ++r) {
                        double exact = 0, magnitude = 0;
                        for (size_t i = 0; i < D; ++i) {
                            exact += double(stored[r * D + i]) * q[size_t(h) * D + i];
                            magnitude += std::abs(double(stored[r * D + i]) * q[size_t(h) * D + i]);
                        }
                        CHECK(std::abs(scores[size_t(h) * out_stride + r] - exact) <= 1e-5 * magnitude);
                    }
                    for (size_t i = 0; i < D; ++i) {
                        double exact = 0, magnitude = 0;
                        for (size_t r = 0; r < rows; ++r) {
                            exact += double(weights[size_t(h) * out_stride + r]) * stored[r * D + i];
                            magnitude += std::abs(double(weights[size_t(h) * out_stride + r]) * stored[r * D + i]);
                        }
                        CHECK(std::abs(sums[size_t(h) * D + i] - exact) <= 1e-5 * magnitude);
                    }
                }
            }
        }
    }
}

TEST_CASE("a grouped-head score does not depend on how many heads or rows one call covers", "[kernels][kv]") {
    const size_t D = 128, rows = 13;
    for (const simd::KernelPath path : integer_paths()) {
        const simd::GemvKernels& kernels = simd::gemv_kernels(path);
        const size_t stride = row_bytes(TensorType::F16, D);
        std::vector<uint8_t> cache(stride * rows);
        for (size_t r = 0; r < rows; ++r) quantize_row(TensorType::F16, test::normal_floats(D, uint32_t(r)).data(), cache.data() + r * stride, D);
        const auto q = test::normal_floats(D * 8, 5);
        std::vector<float> all(8 * rows);
        kernels.dot_heads(TensorType::F16)(cache.data(), stride, rows, D, q.data(), 8, all.data(), rows);
        for (int h = 0; h < 8; ++h) {
            for (size_t r = 0; r < rows; ++r) {
                float one = 0;
                kernels.dot_heads(TensorType::F16)(cache.data() + r * stride, stride, 1, D, q.data() + size_t(h) * D, 1, &one, 1);
                INFO(simd::kernel_path_name(path) << " head " << h << " row " << r);
                CHECK(one == all[size_t(h) * rows + r]);
            }
        }
    }
}

TEST_CASE("a row's result does not depend on how many rows one call covers", "[kernels]") {
    const size_t cols = 512, rows = 7;
    for (const simd::KernelPath path : integer_paths()) {
        const simd::GemvKernels& kernels = simd::gemv_kernels(path);
        for (const TensorType type : {TensorType::Q4_0, TensorType::Q4_K, TensorType::F16}) {
            const size_t stride = row_bytes(type, cols);
            std::vector<uint8_t> weights(stride * rows);
            for (size_t r = 0; r < rows; ++r) quantize_row(type, test::normal_floats(cols, uint32_t(r)).data(), weights.data() + r * stride, cols);
            const auto x = test::normal_floats(cols, 9);
            const ActFormat format = simd::act_format(type, path);
            std::vector<uint8_t> act(simd::act_bytes(format, cols));
            kernels.prepare(format, x.data(), cols, act.data());
            std::vector<float> all(rows), one(rows);
            kernels.dot_rows(type)(weights.data(), stride, rows, cols, act.data(), all.data());
            for (size_t r = 0; r < rows; ++r) kernels.dot_rows(type)(weights.data() + r * stride, stride, 1, cols, act.data(), &one[r]);
            CHECK(std::memcmp(all.data(), one.data(), rows * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("the F16 and BF16 rows that ask for weights ahead give the plain rows' bits on every path", "[kernels]") {
    const size_t cols = 4096 + 48, rows = 5;  // long enough to ask ahead, with a tail past the last 64
    for (const simd::KernelPath path : integer_paths()) {
        const simd::GemvKernels& kernels = simd::gemv_kernels(path);
        for (const TensorType type : {TensorType::F16, TensorType::BF16}) {
            const size_t stride = row_bytes(type, cols);
            std::vector<uint8_t> weights(stride * rows);
            for (size_t r = 0; r < rows; ++r) quantize_row(type, test::normal_floats(cols, uint32_t(r + 3)).data(), weights.data() + r * stride, cols);
            const auto x = test::normal_floats(cols, 4);
            std::vector<float> plain(rows), ahead(rows);
            kernels.dot_rows(type, false)(weights.data(), stride, rows, cols, reinterpret_cast<const uint8_t*>(x.data()), plain.data());
            kernels.dot_rows(type, true)(weights.data(), stride, rows, cols, reinterpret_cast<const uint8_t*>(x.data()), ahead.data());
            CHECK(std::memcmp(plain.data(), ahead.data(), rows * sizeof(float)) == 0);
        }
        // The Avx512 path is the one with two forms (gemv_float_avx512.inl).
        CHECK(kernels.has_rows_ahead(TensorType::F16) == (path == simd::KernelPath::Avx512));
        CHECK_FALSE(kernels.has_rows_ahead(TensorType::Q4_0));
    }
}

TEST_CASE("interleaving rows and reading one back restores it byte for byte", "[kernels][interleave]") {
    for (const TensorType type : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K, TensorType::MXFP4}) {
        INFO(traits(type).name);
        const size_t cols = 512, rows = 19, stride = row_bytes(type, cols);  // two groups and three rows more
        std::vector<uint8_t> plain(stride * rows);
        for (size_t r = 0; r < rows; ++r) quantize_row(type, test::normal_floats(cols, uint32_t(r)).data(), plain.data() + r * stride, cols);
        std::vector<uint8_t> interleaved = plain;
        interleave_rows(type, interleaved.data(), rows, stride);
        CHECK(interleaved != plain);
        CHECK(std::equal(plain.begin() + 16 * long(stride), plain.end(), interleaved.begin() + 16 * long(stride)));
        std::vector<uint8_t> row(stride);
        for (size_t r = 0; r < 16; ++r) {
            plain_row(type, interleaved.data(), r, stride, row.data());
            CHECK(std::equal(row.begin(), row.end(), plain.begin() + long(r * stride)));
        }
    }
}

// A weight of 563 rows: 70 interleaved groups of eight, then three rows in ggml's layout, which
// matmul hands to the row kernel; big enough that two threads really split it. Every row must equal
// exact arithmetic, with one thread or two.
// Also rows of 1792 (LFM2-8B-A1B's expert width): seven super-blocks, an odd count for kernels that
// step two at a time.
TEST_CASE("matmul over an interleaved weight equals exact arithmetic for every row, with any thread count", "[kernels][interleave]") {
    const size_t rows = 563;
    for (const size_t cols : {size_t(512), size_t(1792)})
    for (const simd::KernelPath path : integer_paths()) {
        REQUIRE(rows * cols >= kMinParallelWork);
        for (const TensorType type : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K, TensorType::MXFP4}) {
            INFO(simd::kernel_path_name(path) << " " << traits(type).name << " " << cols << " columns");
            const test::RandomWeight random(type, rows, cols, 50);
            const std::vector<float>& dequantized = random.values;
            const Weight& weight = random.weight;
            const auto x = test::normal_floats(cols, 11);
            const ActFormat format = simd::act_format(type, path);
            std::vector<uint8_t> act(simd::act_bytes(format, cols));
            simd::gemv_kernels(path).prepare(format, x.data(), cols, act.data());
            const auto xv = prepared_values(format, act, cols);
            std::vector<float> one(rows), two(rows);
            MatmulScratch single(path, 1, cols), pair(path, 2, cols);
            matmul(weight, x.data(), one.data(), 1, single);
            matmul(weight, x.data(), two.data(), 1, pair);
            CHECK(std::memcmp(one.data(), two.data(), rows * sizeof(float)) == 0);
            for (size_t r = 0; r < rows; ++r) {
                double exact = 0, magnitude = 0;
                for (size_t i = 0; i < cols; ++i) {
                    exact += double(dequantized[r * cols + i]) * xv[i];
                    magnitude += std::abs(double(dequantized[r * cols + i]) * xv[i]);
                }
                INFO("row " << r);
                CHECK(std::abs(one[r] - exact) <= 1e-5 * magnitude);
            }
        }
    }
}

TEST_CASE("vector dequantization gives the scalar reference's floats bit for bit for every type", "[kernels][dequantize]") {
    const size_t cols = 1024;
    for (const TensorTypeTraits& t : all_tensor_types()) {
        INFO(t.name);
        std::vector<uint8_t> row(row_bytes(t.type, cols));
        test::random_row(t.type, cols, 3, row.data());
        std::vector<float> scalar(cols), vector(cols);
        dequantize_row(t.type, row.data(), scalar.data(), cols);
        simd::dequantize_row(t.type, row.data(), vector.data(), cols);
        CHECK(std::memcmp(scalar.data(), vector.data(), cols * sizeof(float)) == 0);
    }
}

TEST_CASE("the four-token Q8_0, Q4_K, Q6_K and MXFP4 group kernels give each token exactly its single-token results", "[kernels][interleave]") {
    const size_t cols = 512, rows = 16;
    for (const TensorType type : {TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K, TensorType::MXFP4}) {
        const size_t stride = row_bytes(type, cols);
        std::vector<uint8_t> bytes(stride * rows);
        for (size_t r = 0; r < rows; ++r) quantize_row(type, test::normal_floats(cols, uint32_t(90 + r)).data(), bytes.data() + r * stride, cols);
        interleave_rows(type, bytes.data(), rows, stride);
        for (const simd::KernelPath path : integer_paths()) {
            INFO(simd::kernel_path_name(path) << " " << traits(type).name);
            const simd::GemvKernels& k = simd::gemv_kernels(path);
            REQUIRE(k.dot_groups_quad(type) != nullptr);
            const ActFormat format = simd::act_format(type, path);
            std::vector<std::vector<uint8_t>> a(4, std::vector<uint8_t>(simd::act_bytes(format, cols)));
            std::vector<std::vector<float>> single(4, std::vector<float>(rows)), grouped(4, std::vector<float>(rows));
            const uint8_t* acts[4];
            float* outs[4];
            for (size_t t = 0; t < 4; ++t) {
                k.prepare(format, test::normal_floats(cols, uint32_t(5 + t)).data(), cols, a[t].data());
                k.dot_groups(type)(bytes.data(), rows / 8, cols, a[t].data(), single[t].data());
                acts[t] = a[t].data();
                outs[t] = grouped[t].data();
            }
            k.dot_groups_quad(type)(bytes.data(), rows / 8, cols, acts, outs);
            for (size_t t = 0; t < 4; ++t) CHECK(std::memcmp(single[t].data(), grouped[t].data(), rows * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("the 512-bit Q8_0, Q4_K and Q6_K group kernels sum the same integers as the 256-bit ones, so their results are bit for bit the same", "[kernels][interleave]") {
    if (!simd::cpu_supports(simd::KernelPath::Avx512)) {
        WARN("skipped: needs a CPU that runs the AVX-512 path (and so the AVX2 one)");
        return;
    }
    const size_t cols = 1024, rows = 24;
    for (const TensorType type : {TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K}) {
        INFO(traits(type).name);
        const size_t stride = row_bytes(type, cols);
        std::vector<uint8_t> bytes(stride * rows);
        for (size_t r = 0; r < rows; ++r) quantize_row(type, test::normal_floats(cols, uint32_t(300 + r)).data(), bytes.data() + r * stride, cols);
        interleave_rows(type, bytes.data(), rows, stride);
        const simd::GemvKernels& wide = simd::gemv_kernels(simd::KernelPath::Avx512);
        const simd::GemvKernels& narrow = simd::gemv_kernels(simd::KernelPath::Avx2);
        // Q8_0's -128 is the one weight whose magnitude is not a signed byte: make sure some are there.
        if (type == TensorType::Q8_0)
            for (size_t i = 40; i < bytes.size(); i += 97)
                if (i % 272 >= 16) bytes[i] = 0x80;  // a quant, not one of the group's eight scales
        const ActFormat format = simd::act_format(type, simd::KernelPath::Avx2);
        std::vector<uint8_t> act(simd::act_bytes(format, cols));
        narrow.prepare(format, test::normal_floats(cols, 41).data(), cols, act.data());
        std::vector<float> from_wide(rows), from_narrow(rows);
        wide.dot_groups(type)(bytes.data(), rows / 8, cols, act.data(), from_wide.data());
        narrow.dot_groups(type)(bytes.data(), rows / 8, cols, act.data(), from_narrow.data());
        CHECK(std::memcmp(from_wide.data(), from_narrow.data(), rows * sizeof(float)) == 0);
    }
}

TEST_CASE("the two- and four-token Q4_0 group kernels give each token exactly its single-token results", "[kernels][interleave]") {
    const size_t cols = 256, rows = 16;
    const size_t stride = row_bytes(TensorType::Q4_0, cols);
    std::vector<uint8_t> bytes(stride * rows);
    for (size_t r = 0; r < rows; ++r) quantize_row(TensorType::Q4_0, test::normal_floats(cols, uint32_t(70 + r)).data(), bytes.data() + r * stride, cols);
    interleave_rows(TensorType::Q4_0, bytes.data(), rows, stride);
    for (const simd::KernelPath path : integer_paths()) {
        INFO(simd::kernel_path_name(path));
        const simd::GemvKernels& k = simd::gemv_kernels(path);
        REQUIRE(k.dot_groups_pair(TensorType::Q4_0) != nullptr);
        REQUIRE(k.dot_groups_quad(TensorType::Q4_0) != nullptr);
        std::vector<std::vector<uint8_t>> a(4, std::vector<uint8_t>(simd::act_bytes(ActFormat::Q8x32, cols)));
        std::vector<std::vector<float>> single(4, std::vector<float>(rows)), grouped(4, std::vector<float>(rows));
        const uint8_t* acts[4];
        float* outs[4];
        for (size_t t = 0; t < 4; ++t) {
            k.prepare(ActFormat::Q8x32, test::normal_floats(cols, uint32_t(1 + t)).data(), cols, a[t].data());
            k.dot_groups(TensorType::Q4_0)(bytes.data(), rows / 8, cols, a[t].data(), single[t].data());
            acts[t] = a[t].data();
            outs[t] = grouped[t].data();
        }
        k.dot_groups_pair(TensorType::Q4_0)(bytes.data(), rows / 8, cols, acts, outs);
        for (size_t t = 0; t < 2; ++t) CHECK(std::memcmp(single[t].data(), grouped[t].data(), rows * sizeof(float)) == 0);
        k.dot_groups_quad(TensorType::Q4_0)(bytes.data(), rows / 8, cols, acts, outs);
        for (size_t t = 0; t < 4; ++t) CHECK(std::memcmp(single[t].data(), grouped[t].data(), rows * sizeof(float)) == 0);
    }
}

// A mixture's chosen experts go to the kernels as one call of several weights, each on its own
// tokens; what each gets must not depend on the company it is computed in.
TEST_CASE("matmul over tasks gives each task exactly what matmul gives it alone, with any thread count", "[kernels][moe]") {
    const test::RandomWeight a(TensorType::Q4_K, 136, 512, 1), b(TensorType::Q6_K, 72, 512, 300), c(TensorType::Q8_0, 40, 256, 500),
        d(TensorType::F16, 24, 256, 700);
    const auto x512 = test::normal_floats(5 * 512, 21), x256 = test::normal_floats(3 * 256, 22);
    for (const simd::KernelPath path : test::kernel_paths()) {
        INFO(simd::kernel_path_name(path));
        // a and b read the same three tokens, c one token, d three, b again five of its own.
        struct Case {
            const Weight& w;
            const float* in;
            int n;
        };
        const Case cases[] = {{a.weight, x512.data(), 3}, {b.weight, x512.data(), 3}, {c.weight, x256.data(), 1},
                              {d.weight, x256.data(), 3}, {b.weight, x512.data(), 5}};
        std::vector<std::vector<float>> alone;
        MatmulScratch single(path, 1, 512);
        for (const Case& k : cases) {
            alone.emplace_back(size_t(k.n) * size_t(k.w.rows()));
            matmul(k.w, k.in, alone.back().data(), k.n, single);
        }
        for (const int threads : {1, 2}) {
            INFO(threads << " threads");
            MatmulScratch scratch(path, threads, 512);
            std::vector<std::vector<float>> together;
            std::vector<MatmulTask> tasks;
            for (const Case& k : cases) together.emplace_back(size_t(k.n) * size_t(k.w.rows()), -1.0f);
            for (size_t i = 0; i < std::size(cases); ++i) tasks.push_back({cases[i].w, cases[i].in, cases[i].n, together[i].data()});
            matmul(tasks, scratch);
            for (size_t i = 0; i < std::size(cases); ++i) {
                INFO("task " << i);
                CHECK(std::memcmp(alone[i].data(), together[i].data(), alone[i].size() * sizeof(float)) == 0);
            }
        }
    }
}

// Float arithmetic rounds the exponent's argument z too, and exp turns an absolute error in z into that
// relative error in the result: a few roundings of the result plus |z| of the argument, in units of 2^-23.
TEST_CASE("the gated activations equal their formulas to within a few float roundings of the argument and the result", "[kernels][activation]") {
    std::vector<float> x(301), u(301);
    for (size_t i = 0; i < x.size(); ++i) {
        x[i] = -30.0f + 0.2f * float(i);  // both tails of the sigmoid and the middle
        u[i] = 0.5f + 0.01f * float(i % 17);
    }
    for (const bool gelu : {false, true}) {
        INFO((gelu ? "geglu" : "swiglu"));
        std::vector<float> g = x;
        if (gelu) simd::geglu(g.data(), u.data(), g.size());
        else simd::swiglu(g.data(), u.data(), g.size());
        for (size_t i = 0; i < x.size(); ++i) {
            const double v = x[i];
            const double z = gelu ? 2.0 * std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v) : v;
            const double want = v / (1.0 + std::exp(-z)) * u[i];
            INFO("x = " << x[i]);
            CHECK(std::abs(double(g[i]) - want) <= (8.0 + std::abs(z)) * 0x1p-23 * std::abs(want) + 1e-30);
        }
    }
}

TEST_CASE("a gated activation's value depends on its own element alone, not on the length or its place", "[kernels][activation]") {
    const std::vector<float> x = test::normal_floats(45, 3), u = test::normal_floats(45, 4);
    std::vector<float> all = x;
    simd::swiglu(all.data(), u.data(), all.size());
    for (size_t i = 0; i < x.size(); ++i) {
        float one = x[i];
        simd::swiglu(&one, &u[i], 1);
        CHECK(std::memcmp(&one, &all[i], sizeof(float)) == 0);
    }
}
