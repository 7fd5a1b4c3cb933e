#include "gemv.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace rill::simd {

namespace generic { const GemvKernels& kernels(); }
#if defined(__x86_64__)
namespace sse41 { const GemvKernels& kernels(); }
namespace avx2 { const GemvKernels& kernels(); }
namespace avx512 { const GemvKernels& kernels(); }
#endif
#if defined(__aarch64__)
namespace neon { const GemvKernels& kernels(); }
namespace neon_dotprod { const GemvKernels& kernels(); }
namespace neon_i8mm { const GemvKernels& kernels(); }
#endif

namespace {
struct PathName {
    KernelPath path;
    std::string_view name;
};
constexpr PathName kNames[] = {{KernelPath::Reference, "reference"}, {KernelPath::Generic, "generic"},
                               {KernelPath::Sse41, "sse41"},         {KernelPath::Avx2, "avx2"},
                               {KernelPath::Avx512, "avx512"},       {KernelPath::Neon, "neon"},
                               {KernelPath::NeonDotprod, "dotprod"}, {KernelPath::NeonI8mm, "i8mm"}};

#if defined(__x86_64__)
// Straight from CPUID for the features clang's __builtin_cpu_supports cannot name (F16C, AVX512-BF16),
// so the library also builds with clang (the fuzz harnesses). Only asked after the AVX2 or AVX-512
// check, which includes the OS saving the wide registers.
bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, int bit) {
    unsigned r[4] = {};
    if (!__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3])) return false;
    return (r[reg] >> bit) & 1u;
}
constexpr int kEax = 0, kEcx = 2;
bool has_f16c() { return cpuid_bit(1, 0, kEcx, 29); }
bool has_avx512_bf16() { return cpuid_bit(7, 1, kEax, 5); }
#endif
}  // namespace

std::string_view kernel_path_name(KernelPath path) {
    for (const auto& n : kNames)
        if (n.path == path) return n.name;
    return "unknown";
}

std::optional<KernelPath> parse_kernel_path(std::string_view name) {
    for (const auto& n : kNames)
        if (n.name == name) return n.path;
    return std::nullopt;
}

bool cpu_supports(KernelPath path) {
    switch (path) {
        case KernelPath::Reference:
        case KernelPath::Generic: return true;
#if defined(__x86_64__)
        case KernelPath::Sse41: return __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("ssse3");
        case KernelPath::Avx2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
        case KernelPath::Avx512:
            return cpu_supports(KernelPath::Avx2) && __builtin_cpu_supports("avx512f") &&
                   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                   __builtin_cpu_supports("avx512vnni") && has_avx512_bf16();
#endif
#if defined(__aarch64__) && defined(__linux__)
        // The kernel's hardware capability bits: what the core has and the kernel lets programs use
        // (under qemu-aarch64, what the emulated CPU model has).
        case KernelPath::Neon: return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
        case KernelPath::NeonDotprod: return cpu_supports(KernelPath::Neon) && (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
        case KernelPath::NeonI8mm: return cpu_supports(KernelPath::NeonDotprod) && (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
#endif
        default: return false;
    }
}

std::vector<KernelPath> supported_kernel_paths() {
    std::vector<KernelPath> paths;
    for (const auto& n : kNames)
        if (cpu_supports(n.path)) paths.push_back(n.path);
    return paths;
}

KernelPath default_kernel_path() {
    if (const char* env = std::getenv("RILL_KERNELS"); env != nullptr && *env != '\0') {
        const auto path = parse_kernel_path(env);
        if (!path) throw std::invalid_argument(std::string("RILL_KERNELS=") + env + ": unknown kernel path (reference, generic, sse41, avx2, avx512, neon, dotprod, i8mm)");
        if (!cpu_supports(*path)) throw std::invalid_argument(std::string("RILL_KERNELS=") + env + ": this CPU cannot run that path");
        return *path;
    }
    return supported_kernel_paths().back();
}

ActFormat act_format(TensorType type, KernelPath path) {
    if (path == KernelPath::Reference) return ActFormat::F32;
    switch (type) {
        case TensorType::F32:
        case TensorType::F16:
        case TensorType::BF16: return ActFormat::F32;
        case TensorType::Q2_K:
        case TensorType::Q3_K:
        case TensorType::Q4_K:
        case TensorType::Q5_K:
        case TensorType::Q6_K:
        case TensorType::IQ4_XS:
        case TensorType::IQ2_XXS:
        case TensorType::IQ2_XS:
        case TensorType::IQ2_S:
        case TensorType::IQ3_XXS:
        case TensorType::IQ3_S:
        case TensorType::IQ1_S:
        case TensorType::IQ1_M:
        case TensorType::TQ1_0:
        case TensorType::TQ2_0: return ActFormat::Q8x256;
        default: return ActFormat::Q8x32;
    }
}

size_t act_bytes(ActFormat format, size_t n) {
    switch (format) {
        case ActFormat::F32: return n * sizeof(float);
        case ActFormat::Q8x32: return n + 2 * (n / 32) * sizeof(float);
        case ActFormat::Q8x256: return n + (n / 256) * sizeof(float) + (n / 16) * sizeof(int16_t);
    }
    return 0;
}

DotRowsFn GemvKernels::dot_rows(TensorType type, bool ahead) const {
    if (ahead && type == TensorType::F16 && f16_ahead) return f16_ahead;
    if (ahead && type == TensorType::BF16 && bf16_ahead) return bf16_ahead;
    switch (type) {
        case TensorType::F32: return f32;
        case TensorType::F16: return f16;
        case TensorType::BF16: return bf16;
        case TensorType::Q4_0: return q4_0;
        case TensorType::Q4_1: return q4_1;
        case TensorType::Q5_0: return q5_0;
        case TensorType::Q5_1: return q5_1;
        case TensorType::Q8_0: return q8_0;
        case TensorType::IQ4_NL: return iq4_nl;
        case TensorType::Q2_K: return q2_k;
        case TensorType::Q3_K: return q3_k;
        case TensorType::Q4_K: return q4_k;
        case TensorType::Q5_K: return q5_k;
        case TensorType::Q6_K: return q6_k;
        case TensorType::IQ4_XS: return iq4_xs;
        case TensorType::MXFP4: return mxfp4;
        case TensorType::IQ2_XXS: return iq2_xxs;
        case TensorType::IQ2_XS: return iq2_xs;
        case TensorType::IQ2_S: return iq2_s;
        case TensorType::IQ3_XXS: return iq3_xxs;
        case TensorType::IQ3_S: return iq3_s;
        case TensorType::IQ1_S: return iq1_s;
        case TensorType::IQ1_M: return iq1_m;
        case TensorType::TQ1_0: return tq1_0;
        case TensorType::TQ2_0: return tq2_0;
    }
    return nullptr;
}

DotGroupsFn GemvKernels::dot_groups(TensorType type) const {
    if (type == TensorType::Q4_0) return q4_0_x8;
    if (type == TensorType::Q8_0) return q8_0_x8;
    if (type == TensorType::Q4_K) return q4_k_x8;
    if (type == TensorType::Q6_K) return q6_k_x8;
    if (type == TensorType::MXFP4) return mxfp4_x8;
    return nullptr;
}

WeightedSumFn GemvKernels::weighted_sum(TensorType type) const {
    switch (type) {
        case TensorType::F32: return weighted_sum_f32;
        case TensorType::F16: return weighted_sum_f16;
        case TensorType::BF16: return weighted_sum_bf16;
        case TensorType::Q8_0: return weighted_sum_q8_0;
        case TensorType::Q4_0: return weighted_sum_q4_0;
        default: return nullptr;
    }
}

void GemvKernels::prepare(ActFormat format, const float* x, size_t n, uint8_t* out) const {
    switch (format) {
        case ActFormat::F32: std::memcpy(out, x, n * sizeof(float)); break;
        case ActFormat::Q8x32: quantize_q8x32(x, n, out); break;
        case ActFormat::Q8x256: quantize_q8x256(x, n, out); break;
    }
}

const GemvKernels& gemv_kernels(KernelPath path) {
    switch (path) {
        case KernelPath::Generic: return generic::kernels();
#if defined(__x86_64__)
        case KernelPath::Sse41: return sse41::kernels();
        case KernelPath::Avx2: return avx2::kernels();
        case KernelPath::Avx512: return avx512::kernels();
#endif
#if defined(__aarch64__)
        case KernelPath::Neon: return neon::kernels();
        case KernelPath::NeonDotprod: return neon_dotprod::kernels();
        case KernelPath::NeonI8mm: return neon_i8mm::kernels();
#endif
        default: throw std::invalid_argument("no integer kernels for path " + std::string(kernel_path_name(path)));
    }
}

}  // namespace rill::simd
