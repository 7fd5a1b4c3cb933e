#include "runtime/compute/gemm.h"

#include <string>

#include "runtime/base/error.h"

namespace rill {

std::string_view gemm_backend_name(GemmBackend backend) {
    switch (backend) {
        case GemmBackend::Auto: return "auto";
        case GemmBackend::Native: return "native";
        case GemmBackend::Onednn: return "onednn";
        case GemmBackend::Openblas: return "openblas";
        case GemmBackend::OnednnBf16: return "onednn-bf16";
        case GemmBackend::Int8: return "int8";
        case GemmBackend::Amx: return "amx";
    }
    return "?";
}

GemmBackend parse_gemm_backend(std::string_view name) {
    for (const GemmBackend b : {GemmBackend::Auto, GemmBackend::Native, GemmBackend::Onednn, GemmBackend::Openblas,
                                GemmBackend::OnednnBf16, GemmBackend::Int8, GemmBackend::Amx})
        if (name == gemm_backend_name(b)) return b;
    throw Error("unknown GEMM backend '" + std::string(name) + "' (choose auto, amx, int8, onednn, onednn-bf16, openblas or native)");
}

}  // namespace rill
