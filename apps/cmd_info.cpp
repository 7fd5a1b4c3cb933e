// rill info: what a GGUF model is, and what it costs in memory.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include "commands.h"
#include "kv_flags.h"
#include "machine_threads.h"
#include "runtime/plan/budget.h"
#include "model_flags.h"
#include "runtime/compute/kv_cache.h"
#include "runtime/compute/recurrent_state.h"
#include "runtime/compute/matmul.h"
#include "runtime/model/model.h"
#include "runtime/session/session.h"

namespace rill::cli {
namespace {

struct InfoFlags {
    ModelFlags model;
    KvFlags kv;
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

// What the family does beyond the Llama block, in a few words.
std::string features(const Hparams& hp) {
    const Architecture& a = *hp.family;
    const auto g = [](float v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", double(v));
        return std::string(buf);
    };
    std::vector<std::string> parts;
    if (a.qk_norm != QkNorm::None) parts.push_back(a.qk_norm == QkNorm::PerHead ? "q/k norm per head" : "q/k norm over the projection");
    if (!a.pre_norms) parts.push_back("no pre-norms");
    if (a.post_norms) parts.push_back("post-norms");
    if (a.activation == Activation::GeluTanh) parts.push_back("GeGLU");
    if (a.fused_qkv) parts.push_back("fused QKV");
    if (a.fused_gate_up) parts.push_back("fused gate|up");
    if (a.sinks) parts.push_back("attention sinks");
    if (a.activation == Activation::SwigluOai) parts.push_back("clamped SwiGLU");
    if (hp.embedding_scale != 1.0f) parts.push_back("embedding ×" + g(hp.embedding_scale));
    if (hp.residual_scale != 1.0f) parts.push_back("residual ×" + g(hp.residual_scale));
    if (hp.logit_scale != 1.0f) parts.push_back("logits ÷" + g(hp.logit_scale));
    if (hp.final_logit_softcap > 0) parts.push_back("logit soft-cap " + g(hp.final_logit_softcap));
    if (hp.rope.ext_factor != 0) parts.push_back("YaRN ×" + g(1.0f / hp.rope.freq_scale));
    else if (hp.rope.freq_scale != 1.0f) parts.push_back("linear rope ×" + g(1.0f / hp.rope.freq_scale));
    int no_rope = 0;
    for (int l = 0; l < hp.n_layer; ++l) no_rope += !hp.uses_rope(l);
    if (no_rope > 0) parts.push_back(std::to_string(no_rope) + " layers without RoPE");
    std::string s;
    for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
    return s;
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
    const KvTypes kv_types = f.kv.types();
    check_kv_types(kv_types, hp.head_dim);  // a type this model's sessions would refuse is refused here too
    const std::string kv_label = kv_types_label(kv_types);
    const uint64_t kv_chosen = kv_bytes_per_token(hp, kv_types);
    const uint64_t kv_f16 = kv_bytes_per_token(hp, KvType::F16);
    const uint64_t kv_f32 = kv_bytes_per_token(hp, KvType::F32);
    const char* rope = hp.rope_style == RopeStyle::Norm ? "norm" : "neox";
    int sliding_layers = 0;
    for (int l = 0; l < hp.n_layer; ++l) sliding_layers += hp.sliding(l);
    // The cache a default session allocates (sliding layers keep only their window plus a chunk).
    const int ctx = default_context(hp);
    const uint64_t kv_default = kv_cache_bytes(hp, ctx, 512, KvType::F16);
    const uint64_t kv_chosen_default = kv_cache_bytes(hp, ctx, 512, kv_types);
    const ModelShape shape = shape_of(*model);
    const uint64_t n_params = shape.n_params(), n_active = shape.n_active_params();
    // What evaluating a prompt adds, at the default micro-batch: float32 weight panels per thread for
    // the GEMM backends (bounded, whatever the model's size) and the batch's activations.
    const int threads = default_thread_count();
    const size_t panel_bytes = gemm_scratch_bytes(*model, 1);
    // The batch's activations and the rounded copies the bf16 and int8 backends make of it.
    const size_t batch_bytes = batch_activation_bytes(hp, 512) + gemm_batch_bytes(*model, 512);

    // How a 512-token prompt batch multiplies each weight type here, from the cached calibration only
    // (info never measures; run, chat, serve and bench calibrate on first use).
    SessionOptions prompt_options;
    const int prompt_threads = std::max(1, choose_threads(*model, 0).prefill);
    prompt_options.gemm_table = obtain_gemm_table(matmul_types(*model), prompt_threads, gemm_calibration_path(), {}, false);
    const nlohmann::ordered_json matmuls = gemm_choices_json(*model, prompt_options, 512);

    if (f.json) {
        std::printf("{\"file\":\"%s\",\"gguf_version\":%u,\"architecture\":\"%s\",\"n_vocab\":%d,\"n_embd\":%d,"
                    "\"n_layer\":%d,\"n_ff\":%d,\"n_head\":%d,\"n_head_kv\":%d,\"head_dim\":%d,\"n_rot\":%d,"
                    "\"rope\":\"%s\",\"rope_freq_base\":%g,\"n_ctx_train\":%d,\"rms_eps\":%g,\"sliding_window\":%d,"
                    "\"sliding_layers\":%d,\"features\":\"%s\",\"tensor_types\":{",
                    json_escape(model->file.name()).c_str(), model->file.version(), json_escape(hp.arch).c_str(), hp.n_vocab, hp.n_embd,
                    hp.n_layer, hp.n_ff, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_rot, rope, hp.rope.freq_base,
                    hp.n_ctx_train, hp.rms_eps, hp.n_swa, sliding_layers, json_escape(features(hp)).c_str());
        bool first = true;
        for (const auto& [name, use] : histogram) {
            std::printf("%s\"%s\":{\"tensors\":%d,\"bytes\":%llu}", first ? "" : ",", name.c_str(), use.count,
                        (unsigned long long)use.bytes);
            first = false;
        }
        std::printf("},\"file_bytes\":%llu,\"weight_bytes\":%llu,\"kv_bytes_per_token_f16\":%llu,"
                    "\"kv_bytes_per_token_f32\":%llu,\"gemm_scratch_bytes_per_thread\":%zu,\"gemm_scratch_threads\":%d,"
                    "\"batch_activation_bytes_512\":%zu,\"default_ctx\":%d,\"kv_cache_bytes_f16_default_ctx\":%llu,"
                    "\"kv_type\":\"%s\",\"kv_bytes_per_token\":%llu,\"kv_cache_bytes_default_ctx\":%llu,"
                    "\"n_params\":%llu,\"n_active_params\":%llu,\"n_expert\":%d,\"n_expert_used\":%d,"
                    "\"recurrent_layers\":%d,\"recurrent_state_bytes\":%llu,\"prompt_threads\":%d,\"prompt_matmuls\":%s}\n",
                    (unsigned long long)model->file.file_size(), (unsigned long long)model->weight_bytes(),
                    (unsigned long long)kv_f16, (unsigned long long)kv_f32, panel_bytes, threads, batch_bytes, ctx,
                    (unsigned long long)kv_default, kv_label.c_str(), (unsigned long long)kv_chosen,
                    (unsigned long long)kv_chosen_default, (unsigned long long)n_params, (unsigned long long)n_active, hp.n_expert,
                    hp.n_expert_used, hp.n_recurrent(), (unsigned long long)recurrent_state_bytes(hp), prompt_threads, matmuls.dump().c_str());
        return 0;
    }
    std::printf("file          %s (GGUF v%u)\n", model->file.name().c_str(), model->file.version());
    std::printf("architecture  %s\n", hp.arch.c_str());
    std::printf("vocabulary    %d tokens\n", hp.n_vocab);
    std::printf("embedding     %d\n", hp.n_embd);
    std::printf("layers        %d\n", hp.n_layer);
    // Gemma 4's layers differ: the range of FFN widths, and the heads of a sliding and of a full layer.
    int narrowest_ff = hp.n_ff, shared_kv = 0, first_full = -1, first_sliding = -1;
    for (int l = 0; l < hp.n_layer; ++l) {
        narrowest_ff = std::min(narrowest_ff, hp.n_ff_of(l));
        shared_kv += hp.has_attention(l) && !hp.owns_kv(l);
        if (hp.sliding(l) && first_sliding < 0) first_sliding = l;
        if (!hp.sliding(l) && first_full < 0) first_full = l;
    }
    if (narrowest_ff != hp.n_ff) std::printf("feed-forward  %d to %d (per layer)\n", narrowest_ff, hp.n_ff);
    else std::printf("feed-forward  %d\n", hp.n_ff);
    if (!hp.layer_head_dim.empty() && first_sliding >= 0 && first_full >= 0)
        std::printf("heads         %d query; sliding layers %d key/value of %d, full layers %d key/value of %d\n", hp.n_head,
                    hp.n_head_kv_of(first_sliding), hp.head_dim_of(first_sliding), hp.n_head_kv_of(first_full), hp.head_dim_of(first_full));
    else
        std::printf("heads         %d query, %d key/value (head size %d)\n", hp.n_head, hp.n_head_kv, hp.head_dim);
    if (shared_kv > 0)
        std::printf("KV sharing    the last %d layers attend over earlier layers' keys and values and keep none\n", shared_kv);
    if (model->ple_token_embd)
        std::printf("per-layer     %d-wide embeddings per layer; their %s table is read a row per token from the mapped file\n",
                    hp.n_embd_per_layer, human_bytes(double(model->ple_token_embd.tensor->n_bytes)).c_str());
    std::printf("rope          %s, %d dims, base %g%s\n", rope, hp.n_rot, hp.rope.freq_base,
                model->rope_freqs ? ", with rope_freqs" : "");
    if (sliding_layers > 0)
        std::printf("sliding       %d of %d layers attend to their last %d positions (rope base %g)\n", sliding_layers, hp.n_layer,
                    hp.n_swa, hp.rope_local.freq_base);
    if (const std::string extra = features(hp); !extra.empty()) std::printf("features      %s\n", extra.c_str());
    if (hp.n_expert > 0)
        std::printf("experts       %d per layer, %d chosen per token (%d feed-forward each)%s\n", hp.n_expert, hp.n_expert_used,
                    hp.n_ff_exp, hp.n_ff_shexp > 0 ? (", and a shared expert of " + std::to_string(hp.n_ff_shexp)).c_str() : "");
    if (const int recurrent = hp.n_recurrent(); recurrent > 0) {
        int attention = 0;
        for (int l = 0; l < hp.n_layer; ++l) attention += hp.has_attention(l);
        const std::string kind =
            hp.family->short_conv ? "gated short convolutions (kernel " + std::to_string(hp.ssm.conv_kernel) + ")"
            : hp.family->mamba2   ? "Mamba-2 (" + std::to_string(hp.ssm.n_v_heads) + " heads of " +
                                      std::to_string(hp.ssm.inner_size / hp.ssm.n_v_heads) + ", state " + std::to_string(hp.ssm.state_size) +
                                      ", " + std::to_string(hp.ssm.n_k_heads) + " groups, conv " + std::to_string(hp.ssm.conv_kernel) + ")"
                                  : "Gated DeltaNet (" + std::to_string(hp.ssm.n_k_heads) + " key and " + std::to_string(hp.ssm.n_v_heads) +
                                      " value heads of " + std::to_string(hp.ssm.state_size) + ", conv " + std::to_string(hp.ssm.conv_kernel) + ")";
        std::printf("recurrent     %d of %d layers are %s: %s of state per sequence, the same at any context; %d attention "
                    "layer(s) keep a KV cache\n", recurrent,
                    hp.n_layer, kind.c_str(), human_bytes(double(recurrent_state_bytes(hp))).c_str(), attention);
    }
    if (hp.n_nextn > 0) std::printf("MTP           %d next-token prediction block(s), not run by the main pass\n", hp.n_nextn);
    const auto count = [](uint64_t n) {
        char buf[32];
        std::snprintf(buf, sizeof buf, n >= 1000000000 ? "%.2fB" : "%.2fM", double(n) / (n >= 1000000000 ? 1e9 : 1e6));
        return std::string(buf);
    };
    std::printf("parameters    %s", count(n_params).c_str());
    if (n_active != n_params) std::printf(", %s active per token", count(n_active).c_str());
    std::printf("\n");
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
    std::printf("KV cache      %s per token (%s; %llu bytes), %s at the default %d-token context\n", human_bytes(double(kv_chosen)).c_str(),
                kv_label.c_str(), (unsigned long long)kv_chosen, human_bytes(double(kv_chosen_default)).c_str(), ctx);
    if (kv_types != KvTypes(KvType::F16))
        std::printf("              %.2fx the f16 cache's %s per token\n", double(kv_chosen) / double(kv_f16), human_bytes(double(kv_f16)).c_str());
    else if (hp.head_dim % 32 == 0)  // q8_0 can hold this model's heads
        std::printf("              q8_0 (--kv-type q8_0): %s per token; f32: %s\n", human_bytes(double(kv_bytes_per_token(hp, KvType::Q8_0))).c_str(),
                    human_bytes(double(kv_f32)).c_str());
    std::printf("prompt scratch %s per thread for GEMM panels (%s at %d threads), %s of activations per 512-token micro-batch\n",
                human_bytes(double(panel_bytes)).c_str(), human_bytes(double(panel_bytes) * threads).c_str(), threads,
                human_bytes(double(batch_bytes)).c_str());
    std::printf("prompt matmuls (a 512-token batch at %d %s)\n", prompt_threads, prompt_threads == 1 ? "thread" : "threads");
    for (const auto& m : matmuls)
        std::printf("  %-8s %-12s %s; %s; %s\n", m["type"].get<std::string>().c_str(), m["backend"].get<std::string>().c_str(),
                    m["precision"].get<std::string>().c_str(), m["kernel"].get<std::string>().c_str(), m["why"].get<std::string>().c_str());
    return 0;
}

}  // namespace

Action add_info(CLI::App& app) {
    auto f = std::make_shared<InfoFlags>();
    CLI::App* cmd = app.add_subcommand("info", "Show a model's architecture, tensor types and memory needs");
    f->model.add_to(*cmd);
    f->kv.add_to(*cmd);
    cmd->add_flag("--json", f->json, "print one JSON object instead of text");
    return [f] { return info(*f); };
}

}  // namespace rill::cli
