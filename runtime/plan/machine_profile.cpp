#include "runtime/plan/machine_profile.h"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <sstream>

#include "runtime/compute/attention_batch.h"
#include "runtime/compute/attention_decode.h"
#include "runtime/plan/bandwidth.h"
#include "runtime/plan/gemm_calibration.h"
#include "runtime/plan/json_field.h"
#include "runtime/plan/probe_matrix.h"
#include "runtime/base/error.h"
#include "runtime/compute/matmul.h"
#include "quant/interleave.h"
#include "runtime/session/session.h"
#include "simd/peak_flops.h"

namespace rill {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

// The prompt probe's two row lengths (gemm_gflops and gemm_wide_gflops).
constexpr int kNarrowCols = 2048, kWideCols = 8192;

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    std::string text = s.str();
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return text;
}

// sysfs writes sizes like "32768K".
uint64_t parse_size(const std::string& text) {
    if (text.empty()) return 0;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
    if (end != nullptr && (*end == 'K' || *end == 'k')) return n << 10;
    if (end != nullptr && *end == 'M') return n << 20;
    return n;
}

// "0-3,8-11" → 8
int count_cpu_list(const std::string& list) {
    int n = 0;
    std::stringstream s(list);
    std::string part;
    while (std::getline(s, part, ',')) {
        const size_t dash = part.find('-');
        const int a = std::atoi(part.c_str()), b = dash == std::string::npos ? a : std::atoi(part.c_str() + dash + 1);
        n += std::max(0, b - a + 1);
    }
    return std::max(1, n);
}

// x86's "model name"; ARM64 kernels print no name, only the core's implementer and part numbers
// (0x41 0xd0c: an Arm Neoverse N1), which name it as well.
std::string cpu_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line, implementer, part;
    const auto value = [&]() {
        const size_t colon = line.find(':');
        const size_t start = colon == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? std::string() : line.substr(start);
    };
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) return value();
        if (line.rfind("CPU implementer", 0) == 0 && implementer.empty()) implementer = value();
        if (line.rfind("CPU part", 0) == 0 && part.empty()) part = value();
    }
    if (!implementer.empty()) return "ARM implementer " + implementer + " part " + part;
    return "unknown CPU";
}

// Distinct (package, core) pairs among the CPUs this process may run on.
int physical_core_count(int logical) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return logical;
    std::set<std::pair<int, int>> cores;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &set)) continue;
        const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
        const std::string package = read_text(base + "physical_package_id"), core = read_text(base + "core_id");
        if (package.empty() || core.empty()) return logical;
        cores.insert({std::atoi(package.c_str()), std::atoi(core.c_str())});
    }
    return cores.empty() ? logical : std::min(logical, int(cores.size()));
}

std::vector<CacheLevel> cache_levels() {
    std::vector<CacheLevel> levels;
    for (int index = 0; index < 16; ++index) {
        const std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
        const std::string level = read_text(base + "level");
        if (level.empty()) break;
        CacheLevel c;
        c.level = std::atoi(level.c_str());
        c.kind = read_text(base + "type");
        c.bytes = parse_size(read_text(base + "size"));
        c.shared_by = count_cpu_list(read_text(base + "shared_cpu_list"));
        levels.push_back(c);
    }
    return levels;
}

// 1, 2, 4, … below the logical count, then the physical and logical counts: decode usually peaks
// early, prompts at the physical count.
std::vector<int> thread_counts(int physical, int logical) {
    std::set<int> counts;
    for (int t = 1; t < logical; t *= 2) counts.insert(t);
    counts.insert(physical);
    counts.insert(logical);
    return {counts.begin(), counts.end()};
}

double interpolate(const std::vector<int>& xs, const std::vector<double>& ys, int x) {
    if (xs.empty() || ys.size() != xs.size()) return 0;
    if (x <= xs.front()) return ys.front();
    for (size_t i = 1; i < xs.size(); ++i)
        if (x <= xs[i]) {
            const double f = double(x - xs[i - 1]) / double(xs[i] - xs[i - 1]);
            return ys[i - 1] + f * (ys[i] - ys[i - 1]);
        }
    return ys.back();
}

// GB/s of a mixture's decode: per layer, one token times kExpertsPerCall experts' gate and up
// matrices in one call, then their down matrices (each on its own input) in a second, the layers
// walking through `stream` so every expert comes from memory, as chosen experts do.
double expert_decode_gbps(TensorType type, const std::vector<uint8_t>& stream, const float* in, float* out,
                          MatmulScratch& scratch, bool warm_up) {
    const size_t expert_bytes = row_bytes(type, kExpertCols) * kExpertRows;
    constexpr int kPerLayer = 3 * kExpertsPerCall;
    const size_t n_layers = std::max<size_t>(1, stream.size() / (expert_bytes * kPerLayer));
    std::vector<TestMatrix> matrices;
    matrices.reserve(n_layers * kPerLayer);
    for (size_t i = 0; i < n_layers * kPerLayer; ++i) {
        const bool down = i % kPerLayer >= 2 * kExpertsPerCall;
        const size_t offset = (i * expert_bytes) % (stream.size() - expert_bytes + 1);
        matrices.push_back(down ? make_matrix(type, stream, kExpertCols, kExpertRows, offset)
                                : make_matrix(type, stream, kExpertRows, kExpertCols, offset));
    }
    // Per layer two calls: the experts' gate and up on the one input, then each down on its own.
    std::vector<std::vector<MatmulTask>> calls(2 * n_layers);
    for (size_t layer = 0; layer < n_layers; ++layer) {
        const TestMatrix* m = &matrices[layer * kPerLayer];
        for (int e = 0; e < 2 * kExpertsPerCall; ++e) calls[2 * layer].push_back({m[e].weight, in, 1, out + size_t(e) * kExpertRows});
        for (int e = 0; e < kExpertsPerCall; ++e)
            calls[2 * layer + 1].push_back({m[2 * kExpertsPerCall + e].weight, in + size_t(e) * kExpertRows, 1, out + size_t(e) * kExpertCols});
    }
    const double seconds = best_seconds(2, warm_up, [&] {
        for (const std::vector<MatmulTask>& call : calls) matmul(call, scratch);
    });
    return double(expert_bytes) * double(n_layers * kPerLayer) / seconds / 1e9;
}

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

template <class T>
T field(const json& j, const char* key) {
    return json_field<T>(j, key, "machine profile");
}

}  // namespace

double MachineProfile::read_bandwidth(int n) const { return interpolate(thread_counts, read_gbps, n); }
double MachineProfile::peak(int n) const { return interpolate(thread_counts, peak_gflops, n); }

const TypeRates* MachineProfile::rates_of(TensorType type) const {
    for (const TypeRates& r : types)
        if (r.type == type) return &r;
    return nullptr;
}

double MachineProfile::gemv_gbps(TensorType type, int n) const {
    const TypeRates* r = rates_of(type);
    return r ? interpolate(thread_counts, r->gemv_gbps, n) : 0;
}

double MachineProfile::expert_gemv_gbps(TensorType type, int n) const {
    const TypeRates* r = rates_of(type);
    return r ? interpolate(thread_counts, r->expert_gemv_gbps, n) : 0;
}

double MachineProfile::gemm_gflops(TensorType type, int n, int cols) const {
    const TypeRates* r = rates_of(type);
    if (!r) return 0;
    const double narrow = interpolate(thread_counts, r->gemm_gflops, n);
    const double wide = interpolate(thread_counts, r->gemm_wide_gflops, n);
    // Between the two measured widths, linear in log2 of the row length; outside, the nearer.
    const double f = std::clamp(std::log2(double(std::max(cols, 1)) / kNarrowCols) / std::log2(double(kWideCols) / kNarrowCols), 0.0, 1.0);
    return narrow + f * (wide - narrow);
}

namespace {

double by_head_dim(const std::vector<int>& counts, const std::vector<double> (&rates)[2], int head_dim, int n_threads) {
    if (rates[0].size() != counts.size() || rates[1].size() != counts.size()) return 0;
    const double a = interpolate(counts, rates[0], n_threads), b = interpolate(counts, rates[1], n_threads);
    const double f = double(head_dim - kAttentionHeadDims[0]) / double(kAttentionHeadDims[1] - kAttentionHeadDims[0]);
    return std::max(0.0, a + f * (b - a));
}

// A decode step of one token at position n_ctx - 1 over 32 query heads sharing 8 key/value heads.
double time_decode_attention(int head_dim, int n_threads, int n_ctx, bool warm_up) {
    Hparams hp;
    hp.n_layer = 1, hp.n_head = 32, hp.n_head_kv = 8, hp.head_dim = head_dim;
    KvCache cache(KvType::F16, 1, n_ctx, hp.kv_dim(), hp.head_dim);
    std::vector<float> q(size_t(hp.q_dim()), 0.01f), out(size_t(hp.q_dim()));
    DecodeAttentionScratch scratch(n_threads, n_ctx, head_dim);
    const KvPlace place[] = {{&cache, n_ctx - 1}};
    return best_seconds(3, warm_up, [&] {
        decode_attention(hp, 0, place, q.data(), out.data(), simd::default_kernel_path(), n_threads, scratch);
    });
}

// A prompt of n_tokens over 8 query heads sharing 2 key/value heads, as batch_attention runs it.
double time_prompt_attention(int head_dim, int n_threads, int n_tokens, bool warm_up) {
    Hparams hp;
    hp.n_layer = 1, hp.n_head = 8, hp.n_head_kv = 2, hp.head_dim = head_dim;
    KvCache cache(KvType::F16, 1, n_tokens, hp.kv_dim(), hp.head_dim);
    std::vector<float> q(size_t(n_tokens) * size_t(hp.q_dim()), 0.01f), out(q.size());
    AttentionScratch scratch;
    // The library a session's prompt attention uses here (session.cpp): oneDNN on the avx512 path.
    const OnednnGemmPtr onednn = simd::default_kernel_path() == simd::KernelPath::Avx512 ? make_onednn_gemm(n_threads) : nullptr;
    const GemmBackend backend = onednn ? GemmBackend::Onednn : GemmBackend::Openblas;
    return best_seconds(1, warm_up, [&] {
        batch_attention(hp, cache, 0, 0, n_tokens, q.data(), out.data(), backend, onednn.get(), n_threads, scratch);
    });
}

}  // namespace

double MachineProfile::decode_attention_seconds_per_head_position(int head_dim, int n_threads) const {
    return by_head_dim(thread_counts, decode_attention_ns, head_dim, n_threads) * 1e-9;
}

double MachineProfile::decode_call_seconds(int n_threads) const {
    if (decode_call_us.size() != thread_counts.size()) return 0;
    const double call = interpolate(thread_counts, decode_call_us, n_threads) * 1e-6;
    const double rate = std::min(gemv_gbps(TensorType::Q8_0, n_threads), read_bandwidth(n_threads));
    const double bytes = double(row_bytes(TensorType::Q8_0, kCallProbeCols)) * kCallProbeRows;
    return rate > 0 ? std::max(0.0, call - bytes / (rate * 1e9)) : call;
}

double MachineProfile::prompt_attention_gflops_at(int head_dim, int n_threads) const {
    return by_head_dim(thread_counts, prompt_attention_gflops, head_dim, n_threads);
}

uint64_t MachineProfile::last_level_cache_bytes() const {
    uint64_t bytes = 0;
    int level = 0;
    for (const CacheLevel& c : caches)
        if (c.kind != "Instruction" && c.level >= level) level = c.level, bytes = c.bytes;
    return bytes;
}

MachineProfile describe_machine() {
    MachineProfile p;
    p.cpu = cpu_name();
    p.kernels = std::string(simd::kernel_path_name(simd::default_kernel_path()));
    p.logical_cores = default_thread_count();
    p.physical_cores = physical_core_count(p.logical_cores);
    p.caches = cache_levels();
    p.thread_counts = thread_counts(p.physical_cores, p.logical_cores);
    return p;
}

namespace {

// Each figure's value from every round, and in the end their median. The median, not the best: on a
// shared host `rill bench` meets a typical moment, and it averages its repetitions; predictions from
// the best of three rounds ran 20-40% fast against it (tinyllama decode, Zen 5, 2 cores).
class RoundSamples {
public:
    void add(double& figure, double value) { samples_[&figure].push_back(value); }
    void settle() {
        for (auto& [figure, values] : samples_) {
            std::sort(values.begin(), values.end());
            const size_t n = values.size();
            *figure = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
        }
    }

private:
    std::map<double*, std::vector<double>> samples_;
};

}  // namespace

MachineProfile measure_machine(const std::function<void(const std::string&)>& status) {
    const auto started = Clock::now();
    const auto say = [&](const std::string& s) {
        if (status) status(s);
    };
    MachineProfile p = describe_machine();
    p.measured_at = utc_now();
    const size_t n_counts = p.thread_counts.size();
    const std::span<const TensorTypeTraits> types = all_tensor_types();
    p.read_gbps.assign(n_counts, 0);
    p.peak_gflops.assign(n_counts, 0);
    for (int d = 0; d < 2; ++d) {
        p.decode_attention_ns[d].assign(n_counts, 1e300);
        p.prompt_attention_gflops[d].assign(n_counts, 0);
    }
    p.decode_call_us.assign(n_counts, 1e300);
    for (const TensorTypeTraits& t : types)
        p.types.push_back({t.type, std::vector<double>(n_counts, 0), std::vector<double>(n_counts, 0),
                           std::vector<double>(n_counts, 0), std::vector<double>(n_counts, 0)});

    // Decode: one token times a matrix 2× the last-level cache (at least 64 MiB), so the weights
    // stream from memory as a model's do. Rows of 4096, a whole number of blocks for every type.
    // Every type reads the same random bytes: the kernels' speed does not depend on the values, only
    // on their being ordinary numbers. Interleaved types are only told their rows are interleaved.
    constexpr int kCols = 4096;
    std::vector<TensorType> calibrated_types;
    for (const TensorTypeTraits& t : types) calibrated_types.push_back(t.type);
    // Enough rows for several panels even at the bf16 backend's 2 MiB of bfloat16 (512 rows of 2048),
    // so every thread gets work, as in a real model's matrices.
    constexpr size_t kGemmElements = size_t(4) << 20;
    const size_t stream_bytes = std::max<size_t>(size_t(64) << 20, 2 * p.last_level_cache_bytes());
    std::vector<uint8_t> stream(stream_bytes);
    fill_weights(stream, 11);
    // Prompt: kProfileBatch tokens times a narrow and a wide matrix (rows of 2048 and of 8192, the same
    // FLOPs) from the start of the same bytes; they stay in cache, so they measure compute. The GEMM
    // backends dequantize panels of fewer, longer rows for wide matrices, and run slower on them.
    const size_t probe_bytes = std::max<size_t>(size_t(256) << 20, 4 * p.last_level_cache_bytes());  // far past the cache
    std::vector<float> in(size_t(kProfileBatch) * std::max(kCols, kWideCols));  // every token's row, at the widest
    std::vector<float> out(std::max(size_t(kProfileBatch) * (kGemmElements / kNarrowCols), stream_bytes / row_bytes(TensorType::Q2_K, kCols)));
    uint64_t seed = 7;
    for (float& x : in) x = float(int64_t(splitmix(seed) % 2001) - 1000) * 1e-3f;

    // The host may be shared: each figure is the median of rounds spread over the whole measurement,
    // so a burst of someone else's work, or a quiet spell, moves one round, not the figure. The
    // multiply-add peak stays the best round's: it is a ceiling.
    constexpr int kRounds = 3;
    RoundSamples rounds;
    for (int round = 0; round < kRounds; ++round) {
        const std::string of = " (round " + std::to_string(round + 1) + " of " + std::to_string(kRounds) + ")";
        for (size_t c = 0; c < n_counts; ++c) {
            const int t = p.thread_counts[c];
            const std::string with = ", " + std::to_string(t) + (t == 1 ? " thread" : " threads") + of;
            say("memory bandwidth" + with);
            rounds.add(p.read_gbps[c], measure_read_bandwidth(t, probe_bytes));
            say("multiply-add peak" + with);
            p.peak_gflops[c] = std::max(p.peak_gflops[c], simd::measure_peak_gflops(t));
            say("attention" + with);
            for (int d = 0; d < 2; ++d) {
                constexpr int kDecodeContext = 2048, kPromptTokens = 512;
                const double decode = time_decode_attention(kAttentionHeadDims[d], t, kDecodeContext, round == 0);
                rounds.add(p.decode_attention_ns[d][c], decode / (32.0 * kDecodeContext) * 1e9);
                const double prompt = time_prompt_attention(kAttentionHeadDims[d], t, kPromptTokens, round == 0);
                const double flops = 4.0 * kAttentionHeadDims[d] * 8 * (double(kPromptTokens) * (kPromptTokens + 1) / 2);
                rounds.add(p.prompt_attention_gflops[d][c], flops / prompt / 1e9);
            }
            MatmulScratch scratch(simd::default_kernel_path(), t, size_t(kCols), GemmBackend::Auto);
            // The prompt probe runs the backend a session would: the calibrated choice where this
            // machine's calibration is cached (nothing is measured for it here), the rule elsewhere.
            // Without it a Xeon's profile timed the int8 GEMM for Q4_0 while sessions ran the amx
            // backend, and the plan under-predicted pp512 by a third.
            scratch.table = obtain_gemm_table(calibrated_types, t, gemm_calibration_path(), {}, false);
            say("decode step overhead" + with);
            {
                // kCallProbes matrices spread over the stream, one product each in turn, as a layer's
                // products follow each other: each starts cold, from memory, and costs the team a meeting.
                std::vector<TestMatrix> probes;
                const size_t spacing = stream_bytes / kCallProbes;
                for (int i = 0; i < kCallProbes; ++i)
                    probes.push_back(make_matrix(TensorType::Q8_0, stream, kCallProbeRows, kCallProbeCols, size_t(i) * spacing));
                const double s = best_seconds(3, round == 0, [&] {
                    for (const TestMatrix& m : probes) matmul(m.weight, in.data(), out.data(), 1, scratch);
                });
                rounds.add(p.decode_call_us[c], s / kCallProbes * 1e6);
            }
            for (size_t k = 0; k < types.size(); ++k) {
                say("kernels for " + std::string(types[k].name) + with);
                TypeRates& rates = p.types[k];
                const TestMatrix gemv = make_matrix(types[k].type, stream, int(stream_bytes / row_bytes(types[k].type, kCols)), kCols);
                const double s1 = best_seconds(2, round == 0, [&] { matmul(gemv.weight, in.data(), out.data(), 1, scratch); });
                rounds.add(rates.gemv_gbps[c], double(gemv.tensor.n_bytes) / s1 / 1e9);
                rounds.add(rates.expert_gemv_gbps[c], expert_decode_gbps(types[k].type, stream, in.data(), out.data(), scratch, round == 0));
                for (const bool wide : {false, true}) {
                    const int cols = wide ? kWideCols : kNarrowCols, rows = int(kGemmElements / size_t(cols));
                    const TestMatrix gemm = make_matrix(types[k].type, stream, rows, cols);
                    // Warmed up in the first round only: later rounds find the panels allocated.
                    const double s2 = best_seconds(1, round == 0, [&] { matmul(gemm.weight, in.data(), out.data(), kProfileBatch, scratch); });
                    std::vector<double>& rate = wide ? rates.gemm_wide_gflops : rates.gemm_gflops;
                    rounds.add(rate[c], 2.0 * double(kGemmElements) * kProfileBatch / s2 / 1e9);
                }
            }
        }
    }
    rounds.settle();
    p.measure_seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return p;
}

json to_json(const MachineProfile& p) {
    json caches = json::array();
    for (const CacheLevel& c : p.caches)
        caches.push_back({{"level", c.level}, {"kind", c.kind}, {"bytes", c.bytes}, {"shared_by", c.shared_by}});
    json types = json::object();
    for (const TypeRates& r : p.types)
        types[std::string(traits(r.type).name)] = {
            {"gemv_gbps", r.gemv_gbps}, {"gemm_gflops", r.gemm_gflops}, {"gemm_wide_gflops", r.gemm_wide_gflops},
            {"expert_gemv_gbps", r.expert_gemv_gbps}};
    return {{"version", p.version},
            {"cpu", p.cpu},
            {"kernels", p.kernels},
            {"logical_cores", p.logical_cores},
            {"physical_cores", p.physical_cores},
            {"caches", caches},
            {"measured_at", p.measured_at},
            {"measure_seconds", p.measure_seconds},
            {"thread_counts", p.thread_counts},
            {"read_gbps", p.read_gbps},
            {"peak_gflops", p.peak_gflops},
            {"gemm_batch", kProfileBatch},
            {"attention_head_dims", {kAttentionHeadDims[0], kAttentionHeadDims[1]}},
            {"decode_attention_ns", {p.decode_attention_ns[0], p.decode_attention_ns[1]}},
            {"prompt_attention_gflops", {p.prompt_attention_gflops[0], p.prompt_attention_gflops[1]}},
            {"decode_call_us", p.decode_call_us},
            {"types", types}};
}

MachineProfile profile_from_json(const json& j) {
    MachineProfile p;
    p.version = field<int>(j, "version");
    p.cpu = field<std::string>(j, "cpu");
    p.kernels = field<std::string>(j, "kernels");
    p.logical_cores = field<int>(j, "logical_cores");
    p.physical_cores = field<int>(j, "physical_cores");
    for (const json& c : field<json>(j, "caches"))
        p.caches.push_back({field<int>(c, "level"), field<std::string>(c, "kind"), field<uint64_t>(c, "bytes"),
                            field<int>(c, "shared_by")});
    p.measured_at = field<std::string>(j, "measured_at");
    p.measure_seconds = field<double>(j, "measure_seconds");
    p.thread_counts = field<std::vector<int>>(j, "thread_counts");
    p.read_gbps = field<std::vector<double>>(j, "read_gbps");
    p.peak_gflops = field<std::vector<double>>(j, "peak_gflops");
    const size_t n = p.thread_counts.size();
    if (n == 0 || p.read_gbps.size() != n || p.peak_gflops.size() != n)
        throw Error("machine profile: thread_counts, read_gbps and peak_gflops differ in length");
    for (size_t i = 0; i < n; ++i)
        if (p.thread_counts[i] < 1 || (i > 0 && p.thread_counts[i] <= p.thread_counts[i - 1]) || !(p.read_gbps[i] > 0) ||
            !(p.peak_gflops[i] > 0))
            throw Error("machine profile: thread counts must ascend and every rate must be positive");
    const auto pair = [&](const char* key, std::vector<double> (&out)[2]) {
        const auto both = field<std::vector<std::vector<double>>>(j, key);
        if (both.size() != 2 || both[0].size() != n || both[1].size() != n)
            throw Error(std::string("machine profile: field '") + key + "' does not match thread_counts");
        for (int d = 0; d < 2; ++d) {
            for (const double x : both[size_t(d)])
                if (!(x > 0) || !std::isfinite(x)) throw Error(std::string("machine profile: a value of '") + key + "' is not positive");
            out[d] = both[size_t(d)];
        }
    };
    pair("decode_attention_ns", p.decode_attention_ns);
    pair("prompt_attention_gflops", p.prompt_attention_gflops);
    p.decode_call_us = field<std::vector<double>>(j, "decode_call_us");
    if (p.decode_call_us.size() != n) throw Error("machine profile: field 'decode_call_us' does not match thread_counts");
    for (const double x : p.decode_call_us)
        if (!(x >= 0) || !std::isfinite(x)) throw Error("machine profile: a value of 'decode_call_us' is negative");
    const json types = field<json>(j, "types");
    if (!types.is_object()) throw Error("machine profile: field 'types' has the wrong type");
    for (const TensorTypeTraits& t : all_tensor_types()) {
        if (!types.contains(std::string(t.name))) continue;
        const json& r = types[std::string(t.name)];
        TypeRates rates{t.type, field<std::vector<double>>(r, "gemv_gbps"), field<std::vector<double>>(r, "gemm_gflops"),
                        field<std::vector<double>>(r, "gemm_wide_gflops"), field<std::vector<double>>(r, "expert_gemv_gbps")};
        if (rates.gemv_gbps.size() != n || rates.gemm_gflops.size() != n || rates.gemm_wide_gflops.size() != n ||
            rates.expert_gemv_gbps.size() != n)
            throw Error("machine profile: the rates of " + std::string(t.name) + " do not match thread_counts");
        for (size_t i = 0; i < n; ++i)
            if (!(rates.gemv_gbps[i] > 0) || !(rates.gemm_gflops[i] > 0) || !(rates.gemm_wide_gflops[i] > 0) ||
                !(rates.expert_gemv_gbps[i] > 0))
                throw Error("machine profile: a rate of " + std::string(t.name) + " is not positive");
        p.types.push_back(std::move(rates));
    }
    return p;
}

std::string machine_profile_path() {
    const auto env = [](const char* name) -> std::string {
        const char* v = std::getenv(name);
        return v != nullptr ? v : "";
    };
    std::string dir = env("RILL_CACHE_DIR");
    if (dir.empty() && !env("XDG_CACHE_HOME").empty()) dir = env("XDG_CACHE_HOME") + "/rill";
    if (dir.empty() && !env("HOME").empty()) dir = env("HOME") + "/.cache/rill";
    if (dir.empty()) dir = ".rill-cache";
    return dir + "/machine.json";
}

std::optional<MachineProfile> load_machine_profile(const std::string& path, std::string* why) {
    const auto fail = [&](const std::string& reason) -> std::optional<MachineProfile> {
        if (why != nullptr) *why = reason;
        return std::nullopt;
    };
    std::ifstream in(path);
    if (!in) return fail("no profile at " + path);
    const json j = json::parse(in, nullptr, false);
    if (j.is_discarded()) return fail(path + " is not valid JSON");
    MachineProfile p;
    try {
        p = profile_from_json(j);
    } catch (const Error& e) {
        return fail(path + ": " + e.what());
    }
    const MachineProfile here = describe_machine();
    if (p.version != kMachineProfileVersion) return fail(path + " was measured by another version of rill");
    if (p.cpu != here.cpu || p.logical_cores != here.logical_cores)
        return fail(path + " was measured on another CPU (" + p.cpu + ", " + std::to_string(p.logical_cores) + " threads)");
    if (p.kernels != here.kernels) return fail(path + " was measured with the " + p.kernels + " kernels, not " + here.kernels);
    if (p.types.empty()) return fail(path + " has no kernel rates");
    return p;
}

void save_machine_profile(const MachineProfile& profile, const std::string& path) {
    // Each missing directory in turn, like mkdir -p.
    for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1))
        ::mkdir(path.substr(0, slash).c_str(), 0755);
    // Written beside and renamed, so a reader never sees half a file.
    const std::string temporary = path + ".tmp" + std::to_string(::getpid());
    {
        std::ofstream out(temporary);
        out << to_json(profile).dump(2) << '\n';
        if (!out.flush()) throw Error("cannot write the machine profile to " + temporary);
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
        std::remove(temporary.c_str());
        throw Error("cannot write the machine profile to " + path + ": " + std::strerror(errno));
    }
}

}  // namespace rill
