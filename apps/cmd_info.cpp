// rill info: what a GGUF model is, and what it costs in memory.
#include <cstdio>
#include <map>
#include <memory>

#include "commands.h"
#include "runtime/plan/budget.h"
#include "model_flags.h"
#include "runtime/compute/kv_cache.h"
#include "runtime/compute/matmul.h"
#include "runtime/model/model.h"
#include "runtime/session/session.h"

namespace rill::cli {
namespace {

struct InfoFlags {
    ModelFlags model;
    bool json = false;
};

std::string json_escape(const std::string& s) {
    std::string out;
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (uint8_t(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += c;
        }
    }
    return out;
}

std::string human_bytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
    return buf;
}

int info(const InfoFlags& f) {
    LoadOptions options = f.model.load_options();
    options.interleave = false;  // info only reads metadata and sizes: no point regrouping rows
    const auto model = load_model(f.model.path, options);
    const Hparams& hp = model->hp;
    struct TypeUse {
        int count = 0;
        uint64_t bytes = 0;
    };
    std::map<std::string, TypeUse> histogram;
    for (const GgufTensor& t : model->file.tensors()) {
        TypeUse& use = histogram[std::string(traits(t.type).name)];
        ++use.count;
        use.bytes += t.n_bytes;
    }
    const uint64_t kv_f16 = kv_bytes_per_token(hp, KvType::F16);
    const uint64_t kv_f32 = kv_bytes_per_token(hp, KvType::F32);
    const char* rope = hp.rope_style == RopeStyle::Norm ? "norm" : "neox";
    // What evaluating a prompt adds, at the default micro-batch: float32 weight panels per thread for
    // the GEMM backends (bounded, whatever the model's size) and the batch's activations.
    const int threads = default_thread_count();
    const size_t panel_bytes = gemm_scratch_bytes(*model, 1);
    const size_t batch_bytes = batch_activation_bytes(hp, 512);

    if (f.json) {
        std::printf("{\"file\":\"%s\",\"gguf_version\":%u,\"architecture\":\"%s\",\"n_vocab\":%d,\"n_embd\":%d,"
                    "\"n_layer\":%d,\"n_ff\":%d,\"n_head\":%d,\"n_head_kv\":%d,\"head_dim\":%d,\"n_rot\":%d,"
                    "\"rope\":\"%s\",\"rope_freq_base\":%g,\"n_ctx_train\":%d,\"rms_eps\":%g,\"tensor_types\":{",
                    json_escape(model->file.name()).c_str(), model->file.version(), json_escape(hp.arch).c_str(), hp.n_vocab, hp.n_embd,
                    hp.n_layer, hp.n_ff, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_rot, rope, hp.rope.freq_base,
                    hp.n_ctx_train, hp.rms_eps);
        bool first = true;
        for (const auto& [name, use] : histogram) {
            std::printf("%s\"%s\":{\"tensors\":%d,\"bytes\":%llu}", first ? "" : ",", name.c_str(), use.count,
                        (unsigned long long)use.bytes);
            first = false;
        }
        std::printf("},\"file_bytes\":%llu,\"weight_bytes\":%llu,\"kv_bytes_per_token_f16\":%llu,"
                    "\"kv_bytes_per_token_f32\":%llu,\"gemm_scratch_bytes_per_thread\":%zu,\"gemm_scratch_threads\":%d,"
                    "\"batch_activation_bytes_512\":%zu}\n",
                    (unsigned long long)model->file.file_size(), (unsigned long long)model->weight_bytes(),
                    (unsigned long long)kv_f16, (unsigned long long)kv_f32, panel_bytes, threads, batch_bytes);
        return 0;
    }
    std::printf("file          %s (GGUF v%u)\n", model->file.name().c_str(), model->file.version());
    std::printf("architecture  %s\n", hp.arch.c_str());
    std::printf("vocabulary    %d tokens\n", hp.n_vocab);
    std::printf("embedding     %d\n", hp.n_embd);
    std::printf("layers        %d\n", hp.n_layer);
    std::printf("feed-forward  %d\n", hp.n_ff);
    std::printf("heads         %d query, %d key/value (head size %d)\n", hp.n_head, hp.n_head_kv, hp.head_dim);
    std::printf("rope          %s, %d dims, base %g%s\n", rope, hp.n_rot, hp.rope.freq_base,
                model->rope_freqs ? ", with rope_freqs" : "");
    std::printf("context       %d tokens (training)\n", hp.n_ctx_train);
    std::printf("rms epsilon   %g\n", hp.rms_eps);
    std::printf("output        %s\n", model->output.tensor == model->token_embd.tensor ? "tied to token_embd" : "own matrix");
    std::printf("tensor types\n");
    for (const auto& [name, use] : histogram)
        std::printf("  %-8s %4d tensors  %s\n", name.c_str(), use.count, human_bytes(double(use.bytes)).c_str());
    std::printf("file size     %s (%llu bytes)\n", human_bytes(double(model->file.file_size())).c_str(),
                (unsigned long long)model->file.file_size());
    std::printf("weights       %s (%llu bytes)\n", human_bytes(double(model->weight_bytes())).c_str(),
                (unsigned long long)model->weight_bytes());
    std::printf("KV cache      %s per token (f16), %s per token (f32)\n", human_bytes(double(kv_f16)).c_str(),
                human_bytes(double(kv_f32)).c_str());
    std::printf("prompt scratch %s per thread for GEMM panels (%s at %d threads), %s of activations per 512-token micro-batch\n",
                human_bytes(double(panel_bytes)).c_str(), human_bytes(double(panel_bytes) * threads).c_str(), threads,
                human_bytes(double(batch_bytes)).c_str());
    return 0;
}

}  // namespace

Action add_info(CLI::App& app) {
    auto f = std::make_shared<InfoFlags>();
    CLI::App* cmd = app.add_subcommand("info", "Show a model's architecture, tensor types and memory needs");
    f->model.add_to(*cmd);
    cmd->add_flag("--json", f->json, "print one JSON object instead of text");
    return [f] { return info(*f); };
}

}  // namespace rill::cli
