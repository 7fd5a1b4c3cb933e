// Flags every subcommand that runs a model shares: threads, context, KV cache type, and how the
// prompt is evaluated (GEMM backend and micro-batch).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "kv_flags.h"
#include "machine_threads.h"
#include "runtime/session/session.h"

namespace rill::cli {

struct SessionFlags {
    int threads = 0;
    int ctx = 0;
    KvFlags kv;
    std::string gemm = "auto";
    int ubatch = 512;

    void add_to(CLI::App& cmd, const std::string& ctx_help = "context length in tokens (default: the model's, at most 4096)") {
        cmd.add_option("-t,--threads", threads,
                       "threads for prompt and decode (default: the counts `rill plan` predicts best, from the cached "
                       "machine profile; without one, every core)")
            ->check(CLI::Range(1, 1024));
        cmd.add_option("-c,--ctx-size,--ctx", ctx, ctx_help)->check(CLI::Range(1, 1 << 24));
        kv.add_to(cmd);
        add_prompt_flags(cmd, gemm, ubatch);
    }

    // The two prompt flags alone, for `rill bench`, whose thread and context flags differ.
    static void add_prompt_flags(CLI::App& cmd, std::string& gemm, int& ubatch) {
        cmd.add_option("--gemm", gemm,
                       "matrix library for prompt batches: auto, onednn (float32), onednn-bf16 (bfloat16 inputs, "
                       "float32 sums), amx (the same precision on AMX tiles, rill's kernel), int8 (Q4_0, Q8_0 and Q4_K on VNNI byte "
                       "products, 8-bit activations), openblas, or native "
                       "(the int8 decode kernels)")
            ->capture_default_str()->check(CLI::IsMember({"auto", "onednn", "onednn-bf16", "amx", "int8", "openblas", "native"}));
        cmd.add_option("--ubatch", ubatch,
                       "prompt tokens evaluated per forward pass; longer prompts run in pieces this long, "
                       "so memory stays bounded")
            ->capture_default_str()->check(CLI::Range(1, 1 << 16));
    }

    // With the thread counts chosen for this model (machine_threads.h) unless -t was given, and with
    // auto's calibrated prompt backends unless `calibrate` is false (eval: its logits follow the fixed
    // rule, so they never depend on a measurement).
    SessionOptions options_for(const Model& model, bool calibrate = true) const {
        SessionOptions o = options();
        const ThreadChoice chosen = choose_threads(model, threads);
        o.n_threads = chosen.decode;
        o.n_threads_batch = chosen.prefill;
        if (calibrate && o.gemm == GemmBackend::Auto)
            o.gemm_table = calibrated_gemm_table(model, o.n_threads_batch > 0 ? o.n_threads_batch : default_thread_count());
        return o;
    }

    SessionOptions options() const {
        SessionOptions o;
        o.n_ctx = ctx;
        o.n_threads = threads;
        o.kv_types = kv.types();
        o.gemm = parse_gemm_backend(gemm);
        o.n_batch = ubatch;
        return o;
    }
};

// "2 threads", or "2 decode / 4 prompt threads" when the counts differ.
inline std::string thread_summary(int decode, int prompt) {
    if (decode == prompt) return std::to_string(decode) + (decode == 1 ? " thread" : " threads");
    return std::to_string(decode) + " decode / " + std::to_string(prompt) + " prompt threads";
}

}  // namespace rill::cli
