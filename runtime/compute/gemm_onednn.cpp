// The oneDNN backend: a matmul primitive per shape and precision, float32 out; inputs float32, or
// bfloat16 (AVX-512 BF16 or AMX kernels where the CPU has them). Each thread keeps its own
// stream, primitives and scratchpad, and runs them on itself: oneDNN's OpenMP runtime runs a
// primitive called inside a parallel region on the calling thread.
#include <dnnl.hpp>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/base/error.h"
#include "runtime/compute/gemm.h"

namespace rill {

namespace {

struct Primitive {
    dnnl::matmul matmul;
    dnnl::memory a, b, c, scratchpad;
    std::vector<uint8_t> scratchpad_bytes;
    std::string impl;  // oneDNN's name for the kernel it chose, e.g. brg:avx512_core_bf16
};

// Different prompt lengths give different shapes; past this many a thread forgets the ones it has.
constexpr size_t kMaxShapes = 64;

}  // namespace

struct OnednnGemm {
    dnnl::engine engine;
    struct PerThread {
        dnnl::stream stream;
        std::map<std::tuple<int, int, int, int, int, int, bool>, Primitive> primitives;
    };
    std::vector<PerThread> threads;
};

void OnednnGemmDeleter::operator()(OnednnGemm* p) const { delete p; }

OnednnGemmPtr make_onednn_gemm(int n_threads) {
    try {
        OnednnGemmPtr state(new OnednnGemm);
        state->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
        state->threads.resize(size_t(n_threads));
        for (auto& t : state->threads) t.stream = dnnl::stream(state->engine);
        return state;
    } catch (const dnnl::error& e) {
        throw Error(std::string("oneDNN could not start: ") + e.what());
    }
}

namespace {

// The one place oneDNN's two APIs differ for rill: v2 (Debian 12's 2.6) describes the operation first
// and builds its primitive descriptor from that; v3 (Debian 13's 3.x) dropped the operation
// descriptors and takes the memory descriptors directly.
dnnl::matmul::primitive_desc matmul_descriptor(const dnnl::engine& engine, const dnnl::memory::desc& a, const dnnl::memory::desc& b,
                                               const dnnl::memory::desc& c, const dnnl::primitive_attr& attr) {
#if DNNL_VERSION_MAJOR >= 3
    return dnnl::matmul::primitive_desc(engine, a, b, c, attr);
#else
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine);
#endif
}

Primitive make_primitive(const dnnl::engine& engine, const GemmShape& s, bool bf16) {
    using dt = dnnl::memory::data_type;
    using dims = dnnl::memory::dims;
    const dt in = bf16 ? dt::bf16 : dt::f32;
    // B is n rows of ldb values; oneDNN's weights are k × n, so element (p, j) sits at j * ldb + p.
    const dnnl::memory::desc a_md(dims{s.m, s.k}, in, dims{s.row_a(), 1});
    const dnnl::memory::desc b_md(dims{s.k, s.n}, in, dims{1, s.row_b()});
    const dnnl::memory::desc c_md(dims{s.m, s.n}, dt::f32, dims{s.row_c(), 1});
    dnnl::primitive_attr attr;
    // The library's own scratchpad is shared between primitives and unsafe when threads run at once.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::matmul::primitive_desc pd = matmul_descriptor(engine, a_md, b_md, c_md, attr);
    Primitive p;
    p.matmul = dnnl::matmul(pd);
    p.a = dnnl::memory(a_md, engine, DNNL_MEMORY_NONE);
    p.b = dnnl::memory(b_md, engine, DNNL_MEMORY_NONE);
    p.c = dnnl::memory(c_md, engine, DNNL_MEMORY_NONE);
    p.impl = pd.impl_info_str();
    p.scratchpad_bytes.resize(pd.scratchpad_desc().get_size());
    p.scratchpad = dnnl::memory(pd.scratchpad_desc(), engine, p.scratchpad_bytes.data());
    return p;
}

}  // namespace

namespace {

Primitive& primitive(OnednnGemm& state, int thread, const GemmShape& s, bool bf16) {
    OnednnGemm::PerThread& me = state.threads.at(size_t(thread));
    const auto key = std::make_tuple(s.m, s.n, s.k, s.row_a(), s.row_b(), s.row_c(), bf16);
    auto it = me.primitives.find(key);
    if (it == me.primitives.end()) {
        if (me.primitives.size() >= kMaxShapes) me.primitives.clear();
        try {
            it = me.primitives.emplace(key, make_primitive(state.engine, s, bf16)).first;
        } catch (const dnnl::error& e) {
            throw Error(std::string("oneDNN has no ") + (bf16 ? "bf16" : "f32") + " matmul for this CPU: " + e.what());
        }
    }
    return it->second;
}

void run(OnednnGemm& state, int thread, Primitive& p, const void* a, const void* b, float* c) {
    p.a.set_data_handle(const_cast<void*>(a));
    p.b.set_data_handle(const_cast<void*>(b));
    p.c.set_data_handle(c);
    dnnl::stream& stream = state.threads[size_t(thread)].stream;
    p.matmul.execute(stream, {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c},
                              {DNNL_ARG_SCRATCHPAD, p.scratchpad}});
    stream.wait();
}

}  // namespace

void onednn_gemm(OnednnGemm& state, int thread, const GemmShape& s, const float* a, const float* b, float* c) {
    run(state, thread, primitive(state, thread, s, false), a, b, c);
}

void onednn_gemm_bf16(OnednnGemm& state, int thread, const GemmShape& s, const uint16_t* a, const uint16_t* b, float* c) {
    run(state, thread, primitive(state, thread, s, true), a, b, c);
}

std::string onednn_version() {
    const dnnl_version_t* v = dnnl_version();
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

bool onednn_has_bf16(OnednnGemm& state) {
    try {
        return onednn_kernel_name(state, 0, GemmShape{16, 16, 16}, true).find("ref") == std::string::npos;
    } catch (const Error&) {
        return false;
    }
}

std::string onednn_kernel_name(OnednnGemm& state, int thread, const GemmShape& s, bool bf16) {
    return primitive(state, thread, s, bf16).impl;
}

}  // namespace rill
