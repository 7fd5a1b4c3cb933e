#include "runtime/plan/machine_spec.h"

#include <fstream>

#include "runtime/base/error.h"
#include "simd/gemv.h"

namespace rill {
namespace {

using json = nlohmann::json;

double positive(const json& j, const char* name, bool required) {
    if (!j.contains(name)) {
        if (required) throw Error(std::string("machine spec: missing \"") + name + "\"");
        return 0;
    }
    if (!j.at(name).is_number() || !(j.at(name).get<double>() >= 0) || j.at(name).get<double>() > 1e9)
        throw Error(std::string("machine spec: \"") + name + "\" must be a number from 0 to 1e9");
    return j.at(name).get<double>();
}

// The precision auto's prompt backends would use for a type with these peaks: the int8 GEMM for
// Q4_0 and Q8_0 on the avx512 path, bf16 for the rest where the CPU has it, float32 otherwise.
double prompt_gflops(TensorType type, double f32, double bf16, double int8, bool avx512) {
    if (avx512 && int8 > 0 && (type == TensorType::Q4_0 || type == TensorType::Q8_0)) return kSpecInt8Share * int8;
    if (avx512 && bf16 > 0 && type != TensorType::MXFP4) return kSpecBf16Share * bf16;
    return kSpecF32Share * f32;
}

}  // namespace

MachineProfile profile_from_spec(const json& spec) {
    if (!spec.is_object()) throw Error("machine spec: not a JSON object");
    const int cores = int(positive(spec, "cores", true));
    if (cores < 1 || cores > 4096) throw Error("machine spec: \"cores\" must be from 1 to 4096");
    const double read = positive(spec, "read_gbps", true);
    if (!(read > 0)) throw Error("machine spec: \"read_gbps\" must be above 0");
    if (!spec.contains("peak_gflops") || !spec.at("peak_gflops").is_object()) throw Error("machine spec: missing \"peak_gflops\" object");
    const json& peaks = spec.at("peak_gflops");
    const double f32 = positive(peaks, "f32", true), bf16 = positive(peaks, "bf16", false), int8 = positive(peaks, "int8", false);
    if (!(f32 > 0)) throw Error("machine spec: \"peak_gflops.f32\" must be above 0");
    std::string kernels = "avx2";
    if (spec.contains("kernels")) {
        if (!spec.at("kernels").is_string() || !simd::parse_kernel_path(spec.at("kernels").get<std::string>()))
            throw Error("machine spec: \"kernels\" must name a kernel path (reference, generic, sse41, avx2, avx512)");
        kernels = spec.at("kernels").get<std::string>();
    }
    MachineProfile p;
    p.cpu = spec.contains("name") && spec.at("name").is_string() ? spec.at("name").get<std::string>() : "machine spec";
    p.kernels = kernels;
    p.logical_cores = p.physical_cores = cores;
    p.measured_at = "spec";
    // One thread count, every core: a spec says nothing about how the machine scales below it.
    p.thread_counts = {cores};
    p.read_gbps = {read};
    p.peak_gflops = {f32};
    const bool avx512 = kernels == "avx512";
    for (const TensorTypeTraits& t : all_tensor_types()) {
        const double gemm = prompt_gflops(t.type, f32, bf16, int8, avx512);
        p.types.push_back({t.type, {kSpecDecodeShare * read}, {gemm}, {gemm}, {kSpecDecodeShare * read}});
    }
    for (int d = 0; d < 2; ++d) {
        // Per query head and cached position: a dot product and a weighted add of head_dim each.
        const double head_dim = kAttentionHeadDims[d];
        p.decode_attention_ns[d] = {4.0 * head_dim / (kSpecDecodeAttentionShare * f32)};
        p.prompt_attention_gflops[d] = {kSpecAttentionShare * f32};
    }
    // The call probe's time: its bytes at the decode rate, plus the fixed cost of a product.
    const double probe_bytes = double(row_bytes(TensorType::Q8_0, kCallProbeCols)) * kCallProbeRows;
    p.decode_call_us = {probe_bytes / (kSpecDecodeShare * read * 1e9) * 1e6 + kSpecDecodeCallUs};
    return p;
}

MachineProfile profile_from_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Error("cannot read the machine file " + path);
    const json j = json::parse(in, nullptr, false);
    if (j.is_discarded()) throw Error(path + " is not valid JSON");
    try {
        // A measured profile has its version and per-type rates; anything else is read as a spec.
        MachineProfile p = j.is_object() && j.contains("version") && j.contains("types") ? profile_from_json(j) : profile_from_spec(j);
        p.source = path;
        return p;
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    }
}

}  // namespace rill
