#include "runtime/plan/gemm_calibration.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "runtime/base/error.h"
#include "runtime/compute/matmul.h"
#include "runtime/plan/machine_profile.h"
#include "runtime/plan/json_field.h"
#include "runtime/plan/probe_matrix.h"
#include "runtime/session/session.h"

namespace rill {
namespace {

using json = nlohmann::json;

bool has_bf16_matmul() {
    static const bool here = [] {
        try {
            return onednn_has_bf16(*make_onednn_gemm(1));
        } catch (const Error&) {
            return false;
        }
    }();
    return here;
}

template <class T>
T field(const json& j, const char* key) {
    return json_field<T>(j, key, "calibration");
}

TensorType type_named(const std::string& name) {
    for (const TensorTypeTraits& t : all_tensor_types())
        if (t.name == name) return t.type;
    throw Error("calibration: unknown weight type \"" + name + "\"");
}

// Activations in [-1, 1] in steps of a thousandth.
std::vector<float> random_inputs(size_t n, uint64_t seed) {
    std::vector<float> in(n);
    for (float& x : in) x = float(int64_t(splitmix(seed) % 2001) - 1000) * 1e-3f;
    return in;
}

// Decode streams each weight once from memory, so the two row forms are timed on a matrix twice the
// last-level cache (at least 256 MiB), alternating, each keeping its best of kRounds: a product is
// tens of milliseconds, and the two forms differed by 1.5-2x where they differed at all.
bool rows_ahead_streams_faster(TensorType type, simd::KernelPath path, int n_threads) {
    constexpr int kCols = 4096, kRounds = 4;
    const size_t bytes = std::max<size_t>(size_t(256) << 20, 2 * describe_machine().last_level_cache_bytes());
    const size_t stride = row_bytes(type, kCols);
    std::vector<uint8_t> stream(bytes / stride * stride);
    fill_weights(stream, 29);
    const TestMatrix m = make_matrix(type, stream, int(stream.size() / stride), kCols);
    const std::vector<float> in = random_inputs(kCols, 7);
    std::vector<float> out(size_t(m.weight.rows()));
    std::array<double, 2> seconds = {1e30, 1e30};
    std::array<MatmulScratch, 2> scratch;
    for (int ahead = 0; ahead < 2; ++ahead) {
        scratch[size_t(ahead)] = MatmulScratch(path, n_threads, kCols, GemmBackend::Native);
        GemmTable only{n_threads, {}};
        only.types.push_back(GemmCalibration{type, {}, {}, {}, ahead == 1});
        scratch[size_t(ahead)].table = std::make_shared<const GemmTable>(std::move(only));
    }
    for (int round = 0; round < kRounds; ++round)
        for (size_t k = 0; k < 2; ++k)
            seconds[k] = std::min(seconds[k], best_seconds(1, round == 0, [&] { matmul(m.weight, in.data(), out.data(), 1, scratch[k]); }));
    return seconds[1] < seconds[0];
}

}  // namespace

CalibrationKey calibration_key_here() {
    const MachineProfile here = describe_machine();
    return {kGemmCalibrationVersion, here.cpu, here.logical_cores, here.kernels,
            "oneDNN " + onednn_version() + "; " + openblas_version()};
}

std::vector<GemmBackend> calibration_candidates(TensorType type, simd::KernelPath path, bool bf16) {
    std::vector<GemmBackend> out;
    for (const GemmBackend b : {GemmBackend::Native, GemmBackend::Int8, GemmBackend::Amx, GemmBackend::OnednnBf16, GemmBackend::Onednn, GemmBackend::Openblas})
        if (gemm_runs_here(b, type, path, bf16)) out.push_back(b);
    return out;
}

GemmCalibration calibrate_gemm_type(TensorType type, simd::KernelPath path, int n_threads, int rows, int cols) {
    std::vector<uint8_t> bytes(row_bytes(type, size_t(cols)) * size_t(rows));
    fill_weights(bytes, 23);
    const TestMatrix m = make_matrix(type, bytes, rows, cols);
    const int widest = kCalibrationBatches.back();
    const std::vector<float> in = random_inputs(size_t(widest) * size_t(cols), 5);
    std::vector<float> out(size_t(widest) * size_t(rows));
    GemmCalibration c{type, {}, {}, {}};
    const std::vector<GemmBackend> candidates = calibration_candidates(type, path, has_bf16_matmul());
    std::vector<MatmulScratch> scratch;
    scratch.reserve(candidates.size());
    for (const GemmBackend b : candidates) {
        scratch.emplace_back(path, n_threads, size_t(cols), b);
        scratch.back().gemm_min_tokens = 1;
    }
    // The host may be shared: rounds go over every backend in turn, so a burst of someone else's work
    // slows one sample of each rather than every sample of one (a single Q6_K calibration on a busy
    // Zen 5 once crowned OpenBLAS at 34 GFLOP/s where the kernels do 170), and each keeps its best.
    constexpr int kRounds = 3;
    for (size_t i = 0; i < kCalibrationBatches.size(); ++i) {
        const int n = kCalibrationBatches[i];
        std::vector<double> seconds(candidates.size(), 1e30);
        for (int round = 0; round < kRounds; ++round)
            for (size_t k = 0; k < candidates.size(); ++k)
                // Warmed up in the first round (panels allocated, primitives made).
                seconds[k] = std::min(seconds[k], best_seconds(1, round == 0, [&] { matmul(m.weight, in.data(), out.data(), n, scratch[k]); }));
        const size_t best = size_t(std::min_element(seconds.begin(), seconds.end()) - seconds.begin());
        c.best[i] = candidates[best];
        c.candidates[i] = int(candidates.size());
        c.gflops[i] = 2.0 * double(rows) * double(cols) * double(n) / seconds[best] / 1e9;
    }
    if (path != simd::KernelPath::Reference && simd::gemv_kernels(path).has_rows_ahead(type)) c.rows_ahead = rows_ahead_streams_faster(type, path, n_threads);
    return c;
}

std::vector<TensorType> matmul_types(const Model& model) {
    std::vector<TensorType> types;
    const auto add = [&](const Weight& w) {
        if (w && std::find(types.begin(), types.end(), w.type()) == types.end()) types.push_back(w.type());
    };
    add(model.output);
    for (const LayerWeights& l : model.layers) {
        for (const Weight* w : {&l.wq, &l.wk, &l.wv, &l.wqkv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) add(*w);
        for (const std::vector<Weight>* experts : {&l.gate_exps, &l.up_exps, &l.down_exps})
            if (!experts->empty()) add(experts->front());
    }
    return types;
}

json to_json(const GemmCalibrationCache& cache) {
    json tables = json::array();
    for (const GemmTable& t : cache.tables) {
        json types = json::array();
        for (const GemmCalibration& c : t.types) {
            json best = json::array();
            for (const GemmBackend b : c.best) best.push_back(std::string(gemm_backend_name(b)));
            types.push_back({{"type", std::string(traits(c.type).name)}, {"best", best}, {"gflops", c.gflops}, {"candidates", c.candidates},
                             {"rows_ahead", c.rows_ahead}});
        }
        tables.push_back({{"n_threads", t.n_threads}, {"types", types}});
    }
    return {{"version", cache.key.version}, {"cpu", cache.key.cpu}, {"logical_cores", cache.key.logical_cores},
            {"kernels", cache.key.kernels}, {"libraries", cache.key.libraries},
            {"batches", kCalibrationBatches}, {"tables", tables}};
}

GemmCalibrationCache calibration_from_json(const json& j) {
    GemmCalibrationCache cache;
    cache.key.version = field<int>(j, "version");
    cache.key.cpu = field<std::string>(j, "cpu");
    cache.key.logical_cores = field<int>(j, "logical_cores");
    cache.key.kernels = field<std::string>(j, "kernels");
    cache.key.libraries = field<std::string>(j, "libraries");
    if (field<std::vector<int>>(j, "batches") != std::vector<int>(kCalibrationBatches.begin(), kCalibrationBatches.end()))
        throw Error("calibration: measured at other batch sizes");
    for (const json& t : field<json>(j, "tables")) {
        GemmTable table;
        table.n_threads = field<int>(t, "n_threads");
        for (const json& e : field<json>(t, "types")) {
            GemmCalibration c{type_named(field<std::string>(e, "type")), {}, {}, {}};
            const auto best = field<std::vector<std::string>>(e, "best");
            const auto gflops = field<std::vector<double>>(e, "gflops");
            const auto candidates = field<std::vector<int>>(e, "candidates");
            if (best.size() != c.best.size() || gflops.size() != c.gflops.size() || candidates.size() != c.candidates.size())
                throw Error("calibration: a type has the wrong number of batch sizes");
            for (size_t i = 0; i < c.best.size(); ++i) {
                c.best[i] = parse_gemm_backend(best[i]);
                if (c.best[i] == GemmBackend::Auto) throw Error("calibration: \"auto\" is not a measured backend");
                c.gflops[i] = gflops[i];
                c.candidates[i] = candidates[i];
            }
            c.rows_ahead = field<bool>(e, "rows_ahead");
            table.types.push_back(c);
        }
        cache.tables.push_back(std::move(table));
    }
    return cache;
}

std::string gemm_calibration_path() {
    std::string path = machine_profile_path();
    return path.substr(0, path.rfind('/') + 1) + "gemm.json";
}

std::shared_ptr<const GemmTable> obtain_gemm_table(std::span<const TensorType> types, int n_threads, const std::string& path,
                                                   const std::function<void(const std::string&)>& status, bool measure_missing) {
    const auto say = [&](const std::string& line) {
        if (status) status(line);
    };
    const CalibrationKey here = calibration_key_here();
    GemmCalibrationCache cache{here, {}};
    if (std::ifstream in(path); in) {
        const json j = json::parse(in, nullptr, false);
        try {
            if (!j.is_discarded()) {
                GemmCalibrationCache cached = calibration_from_json(j);
                if (cached.key == here) cache = std::move(cached);
            }
        } catch (const Error&) {
            // Unreadable or another version's: measured again below and replaced.
        }
    }
    GemmTable* table = nullptr;
    for (GemmTable& t : cache.tables)
        if (t.n_threads == n_threads) table = &t;
    if (table == nullptr) {
        cache.tables.push_back(GemmTable{n_threads, {}});
        table = &cache.tables.back();
    }
    const simd::KernelPath path_here = simd::default_kernel_path();
    bool measured = false;
    for (const TensorType type : types) {
        if (table->find(type) != nullptr || !measure_missing) continue;
        say("calibrating prompt matrix products for " + std::string(traits(type).name) + " (" + std::to_string(n_threads) +
            (n_threads == 1 ? " thread" : " threads") + "; once per machine, cached in " + path + ")");
        table->types.push_back(calibrate_gemm_type(type, path_here, n_threads));
        measured = true;
    }
    if (measured) {
        for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1))
            ::mkdir(path.substr(0, slash).c_str(), 0755);
        const std::string temporary = path + ".tmp" + std::to_string(::getpid());
        bool saved = false;
        {
            std::ofstream out(temporary);
            out << to_json(cache).dump(2) << '\n';
            saved = bool(out.flush());
        }
        saved = saved && std::rename(temporary.c_str(), path.c_str()) == 0;
        if (!saved) {
            std::remove(temporary.c_str());
            say("warning: cannot write " + path + "; the calibration is used for this run only");
        }
    }
    return std::make_shared<const GemmTable>(*table);
}

}  // namespace rill
