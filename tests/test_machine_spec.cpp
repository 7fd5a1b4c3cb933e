// `rill plan --machine`: a machine described by a few figures becomes a profile the planner reads as
// if it had been measured, with the shares of each figure rill reaches (machine_spec.h).
#include <unistd.h>

#include "catch.h"
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/base/error.h"
#include "runtime/plan/machine_spec.h"
#include "runtime/plan/plan.h"

using namespace rill;

namespace {

nlohmann::json laptop() {
    return {{"name", "test laptop"}, {"cores", 8}, {"read_gbps", 70}, {"peak_gflops", {{"f32", 900}, {"bf16", 1800}, {"int8", 3600}}},
            {"kernels", "avx512"}};
}

}  // namespace

TEST_CASE("a spec becomes a profile at its core count with its bandwidth and float peak", "[plan][spec]") {
    const MachineProfile p = profile_from_spec(laptop());
    CHECK(p.cpu == "test laptop");
    CHECK(p.thread_counts == std::vector<int>{8});
    CHECK(p.read_bandwidth(8) == 70);
    CHECK(p.peak(8) == 900);
    CHECK(p.gemv_gbps(TensorType::Q4_K, 8) == Approx(kSpecDecodeShare * 70));
}

TEST_CASE("a spec's prompt rate follows the precision auto would use for each type", "[plan][spec]") {
    const MachineProfile p = profile_from_spec(laptop());
    CHECK(p.gemm_gflops(TensorType::Q4_0, 8) == Approx(kSpecInt8Share * 3600));
    CHECK(p.gemm_gflops(TensorType::Q4_K, 8) == Approx(kSpecBf16Share * 1800));
    CHECK(p.gemm_gflops(TensorType::MXFP4, 8) == Approx(kSpecF32Share * 900));
    nlohmann::json avx2 = laptop();
    avx2["kernels"] = "avx2";
    CHECK(profile_from_spec(avx2).gemm_gflops(TensorType::Q4_0, 8) == Approx(kSpecF32Share * 900));
}

TEST_CASE("a spec with a missing or impossible figure is refused naming it", "[plan][spec]") {
    nlohmann::json j = laptop();
    j.erase("read_gbps");
    CHECK_THROWS_WITH(profile_from_spec(j), rill::test::contains("\"read_gbps\""));
    j = laptop();
    j["cores"] = 0;
    CHECK_THROWS_WITH(profile_from_spec(j), rill::test::contains("\"cores\""));
    j = laptop();
    j["peak_gflops"]["f32"] = "fast";
    CHECK_THROWS_WITH(profile_from_spec(j), rill::test::contains("\"f32\""));
    j = laptop();
    j["kernels"] = "neon9";
    CHECK_THROWS_WITH(profile_from_spec(j), rill::test::contains("\"kernels\""));
    CHECK_THROWS_AS(profile_from_spec(nlohmann::json::array()), Error);
}

TEST_CASE("a machine file is read as a measured profile when it is one, as a spec otherwise", "[plan][spec]") {
    const std::string path = (std::filesystem::temp_directory_path() / ("rill-spec-" + std::to_string(::getpid()) + ".json")).string();
    std::ofstream(path) << laptop().dump();
    const MachineProfile from_spec = profile_from_file(path);
    CHECK(from_spec.source == path);
    CHECK(from_spec.measured_at == "spec");
    std::ofstream(path) << to_json(from_spec).dump();
    const MachineProfile measured = profile_from_file(path);
    CHECK(measured.read_bandwidth(8) == 70);
    CHECK(measured.gemm_gflops(TensorType::Q4_0, 8) == Approx(kSpecInt8Share * 3600));
    std::ofstream(path) << "{ nope";
    CHECK_THROWS_WITH(profile_from_file(path), rill::test::contains("not valid JSON"));
    std::filesystem::remove(path);
}

// Not exactly twice: each product's fixed cost and attention's arithmetic do not scale with bandwidth.
TEST_CASE("a spec predicts decode from its bandwidth: twice the bandwidth, nearly twice the tokens", "[plan][spec]") {
    const ModelShape shape = shape_of_preset(*find_preset("llama-3.1-8b"), *find_recipe("Q4_K_M"));
    nlohmann::json fast = laptop();
    fast["read_gbps"] = 140;
    const double slow_tps = predict_decode(shape, profile_from_spec(laptop()), 8, 0).tokens_per_second;
    const double fast_tps = predict_decode(shape, profile_from_spec(fast), 8, 0).tokens_per_second;
    CHECK(fast_tps / slow_tps > 1.9);
    CHECK(fast_tps / slow_tps < 2.0);
}
