// Auto's prompt backends as measured on this machine: which choice a batch size takes, when a
// measured choice is overruled, and the cache that keeps the measurements per machine.
#include <unistd.h>

#include "catch.h"
#include <filesystem>
#include <fstream>

#include "runtime/compute/matmul.h"
#include "runtime/plan/gemm_calibration.h"
#include "simd/gemm_q8.h"

using namespace rill;

namespace {

GemmTable table_of(TensorType type, std::array<GemmBackend, kCalibrationBatches.size()> best) {
    GemmTable t;
    t.n_threads = 2;
    t.types.push_back({type, best, {1, 2, 3, 4, 5}, {3, 3, 3, 3, 3}});
    return t;
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("rill-calibration-" + std::to_string(::getpid()) + "-" + name)).string();
}

using B = GemmBackend;

}  // namespace

TEST_CASE("a batch takes the choice measured at the largest calibrated size it reaches", "[calibration]") {
    const GemmTable t = table_of(TensorType::Q4_K, {B::Native, B::Native, B::Onednn, B::OnednnBf16, B::Openblas});
    CHECK_FALSE(t.choice(TensorType::Q4_K, 15).has_value());
    CHECK(t.choice(TensorType::Q4_K, 16) == B::Native);
    CHECK(t.choice(TensorType::Q4_K, 63) == B::Native);
    CHECK(t.choice(TensorType::Q4_K, 64) == B::Onednn);
    CHECK(t.choice(TensorType::Q4_K, 511) == B::OnednnBf16);
    CHECK(t.choice(TensorType::Q4_K, 4096) == B::Openblas);
    CHECK_FALSE(t.choice(TensorType::Q6_K, 512).has_value());
}

TEST_CASE("auto takes a measured choice only where that backend runs here, and the rule elsewhere", "[calibration]") {
    const GemmTable t = table_of(TensorType::Q4_K, {B::Openblas, B::Openblas, B::OnednnBf16, B::OnednnBf16, B::OnednnBf16});
    const auto avx512 = simd::KernelPath::Avx512;
    CHECK(choose_gemm(B::Auto, TensorType::Q4_K, 32, kGemmMinTokens, avx512, true, &t) == B::Openblas);
    CHECK(choose_gemm(B::Auto, TensorType::Q4_K, 512, kGemmMinTokens, avx512, true, &t) == B::OnednnBf16);
    // No bf16 matmul here (ONEDNN_MAX_CPU_ISA below AVX-512): the rule decides.
    CHECK(choose_gemm(B::Auto, TensorType::Q4_K, 512, kGemmMinTokens, avx512, false, &t) ==
          choose_gemm(B::Auto, TensorType::Q4_K, 512, kGemmMinTokens, avx512, false, nullptr));
    // A forced backend and the decode-sized batches ignore the table.
    CHECK(choose_gemm(B::Onednn, TensorType::Q4_K, 512, kGemmMinTokens, avx512, true, &t) == B::Onednn);
    CHECK(choose_gemm(B::Auto, TensorType::Q4_K, 8, kGemmMinTokens, avx512, true, &t) == B::Native);
}

TEST_CASE("the int8 GEMM is a candidate only for its types on a path with its kernel", "[calibration]") {
    const auto has = [](TensorType type, simd::KernelPath path) {
        const auto c = calibration_candidates(type, path, true);
        return std::find(c.begin(), c.end(), B::Int8) != c.end();
    };
    // The kernel is built into x86-64 builds only (an ARM64 build has no avx512 path to offer it).
    const bool built = simd::q8_gemm_kernel(simd::KernelPath::Avx512) != nullptr;
    CHECK(has(TensorType::Q4_0, simd::KernelPath::Avx512) == built);
    CHECK(has(TensorType::Q4_K, simd::KernelPath::Avx512) == built);
    CHECK_FALSE(has(TensorType::Q6_K, simd::KernelPath::Avx512));
    CHECK_FALSE(has(TensorType::Q4_0, simd::KernelPath::Avx2));
    CHECK_FALSE(has(TensorType::Q4_0, simd::KernelPath::NeonI8mm));
    const auto no_bf16 = calibration_candidates(TensorType::F16, simd::KernelPath::Avx2, false);
    CHECK(std::find(no_bf16.begin(), no_bf16.end(), B::OnednnBf16) == no_bf16.end());
}

TEST_CASE("calibrating a type keeps, at every batch size, one of the backends it timed", "[calibration]") {
    const simd::KernelPath path = simd::default_kernel_path();
    if (path == simd::KernelPath::Reference) return;
    const GemmCalibration c = calibrate_gemm_type(TensorType::Q8_0, path, 1, 64, 256);
    const auto candidates = calibration_candidates(TensorType::Q8_0, path, onednn_has_bf16(*make_onednn_gemm(1)));
    for (size_t i = 0; i < kCalibrationBatches.size(); ++i) {
        CHECK(std::find(candidates.begin(), candidates.end(), c.best[i]) != candidates.end());
        CHECK(c.gflops[i] > 0);
        CHECK(c.candidates[i] == int(candidates.size()));
    }
}

TEST_CASE("calibrating F16 decides which form of the decode rows streams it, and Q8_0 has no such choice", "[calibration]") {
    const simd::KernelPath path = simd::default_kernel_path();
    if (path == simd::KernelPath::Reference) return;
    CHECK_FALSE(calibrate_gemm_type(TensorType::Q8_0, path, 1, 64, 256).rows_ahead);
    // Either answer is a measurement; where the path has one form there is nothing to choose.
    const GemmCalibration f16 = calibrate_gemm_type(TensorType::F16, path, 1, 64, 256);
    if (!simd::gemv_kernels(path).has_rows_ahead(TensorType::F16)) CHECK_FALSE(f16.rows_ahead);
}

TEST_CASE("a calibration survives a round trip through its JSON", "[calibration]") {
    GemmCalibrationCache cache{calibration_key_here(), {table_of(TensorType::Q4_0, {B::Native, B::Int8, B::Int8, B::Int8, B::Int8})}};
    const GemmCalibrationCache back = calibration_from_json(to_json(cache));
    CHECK(back.key == cache.key);
    REQUIRE(back.tables.size() == 1);
    CHECK(back.tables[0].n_threads == 2);
    CHECK(back.tables[0].choice(TensorType::Q4_0, 100) == B::Int8);
    CHECK_FALSE(back.tables[0].types[0].rows_ahead);
    cache.tables[0].types[0].rows_ahead = true;
    CHECK(calibration_from_json(to_json(cache)).tables[0].types[0].rows_ahead);
    CHECK_THROWS_WITH(calibration_from_json(nlohmann::json::object()), rill::test::contains("'version'"));
    nlohmann::json bad = to_json(cache);
    bad["tables"][0]["types"][0]["best"][1] = "cublas";
    CHECK_THROWS_WITH(calibration_from_json(bad), rill::test::contains("cublas"));
}

TEST_CASE("a cached calibration is used only on the machine and libraries that measured it", "[calibration]") {
    const std::string path = temp_path("key.json");
    const TensorType q4[] = {TensorType::Q4_0};
    GemmCalibrationCache mine{calibration_key_here(), {table_of(TensorType::Q4_0, {B::Native, B::Native, B::Openblas, B::Openblas, B::Openblas})}};
    std::ofstream(path) << to_json(mine).dump();
    CHECK(obtain_gemm_table(q4, 2, path, {}, false)->choice(TensorType::Q4_0, 512) == B::Openblas);
    GemmCalibrationCache other = mine;
    other.key.libraries = "oneDNN 0.1; OpenBLAS 0.0.1";
    std::ofstream(path) << to_json(other).dump();
    CHECK(obtain_gemm_table(q4, 2, path, {}, false)->find(TensorType::Q4_0) == nullptr);
    std::ofstream(path) << "{ not json";
    CHECK(obtain_gemm_table(q4, 2, path, {}, false)->find(TensorType::Q4_0) == nullptr);
    // Another thread count is another table.
    std::ofstream(path) << to_json(mine).dump();
    CHECK(obtain_gemm_table(q4, 1, path, {}, false)->find(TensorType::Q4_0) == nullptr);
    std::filesystem::remove(path);
}

TEST_CASE("a missing type is measured once, saved, and read back from the cache after", "[calibration]") {
    if (simd::default_kernel_path() == simd::KernelPath::Reference) return;
    const std::string path = temp_path("measure.json");
    std::filesystem::remove(path);
    const TensorType types[] = {TensorType::Q8_0};
    int lines = 0;
    const auto first = obtain_gemm_table(types, 1, path, [&](const std::string&) { ++lines; });
    CHECK(lines == 1);
    REQUIRE(first->find(TensorType::Q8_0) != nullptr);
    CHECK(std::filesystem::exists(path));
    lines = 0;
    const auto again = obtain_gemm_table(types, 1, path, [&](const std::string&) { ++lines; });
    CHECK(lines == 0);
    CHECK(again->find(TensorType::Q8_0)->best == first->find(TensorType::Q8_0)->best);
    std::filesystem::remove(path);
}
