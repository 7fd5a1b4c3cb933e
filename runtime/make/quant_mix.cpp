#include "runtime/make/quant_mix.h"

#include "runtime/base/error.h"

namespace rill {
namespace {

using T = TensorType;

// llama.cpp's llama_ftype numbers, written to general.file_type so other tools name the file right.
const std::vector<QuantRecipe>& recipes() {
    static const std::vector<QuantRecipe> all = {
        {"F32", T::F32, 0},      {"F16", T::F16, 1},       {"BF16", T::BF16, 32},    {"Q4_0", T::Q4_0, 2},
        {"Q4_1", T::Q4_1, 3},    {"Q5_0", T::Q5_0, 8},     {"Q5_1", T::Q5_1, 9},     {"Q8_0", T::Q8_0, 7},
        {"Q2_K", T::Q2_K, 10},   {"Q3_K_S", T::Q3_K, 11},  {"Q3_K_M", T::Q3_K, 12},  {"Q3_K_L", T::Q3_K, 13},
        {"Q4_K_S", T::Q4_K, 14}, {"Q4_K_M", T::Q4_K, 15},  {"Q5_K_S", T::Q5_K, 16},  {"Q5_K_M", T::Q5_K, 17},
        {"Q6_K", T::Q6_K, 18},   {"IQ4_NL", T::IQ4_NL, 25}, {"IQ4_XS", T::IQ4_XS, 30},   {"Q2_K_S", T::Q2_K, 21},
        // The i-quants: lattice codes for 1.5 to 3.5 bits per weight, made with an importance matrix.
        // Some mixes are named after the bits they average, not the type most matrices get.
        {"IQ1_S", T::IQ1_S, 24},    {"IQ1_M", T::IQ1_M, 31},   {"IQ2_XXS", T::IQ2_XXS, 19}, {"IQ2_XS", T::IQ2_XS, 20},
        {"IQ2_S", T::IQ2_XS, 28},   {"IQ2_M", T::IQ2_S, 29},   {"IQ3_XXS", T::IQ3_XXS, 23}, {"IQ3_XS", T::IQ3_S, 22},
        {"IQ3_S", T::IQ3_S, 26},    {"IQ3_M", T::IQ3_S, 27},
        // Experts in MXFP4, every other matrix Q8_0: how published gpt-oss files are written.
        {"MXFP4_MOE", T::MXFP4, 38},
        // Ternary (BitNet-style) models: every matrix TQ1_0 or TQ2_0 but the output (Q6_K) and the token
        // embeddings (Q4_K), as llama.cpp writes them.
        {"TQ1_0", T::TQ1_0, 36}, {"TQ2_0", T::TQ2_0, 37},
        // Single k-quant types by their tensor names, as --pure users may write them.
        {"Q3_K", T::Q3_K, 12},   {"Q4_K", T::Q4_K, 15},    {"Q5_K", T::Q5_K, 17},
    };
    return all;
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Layers where the mixes spend extra bits: the first and last eighth, and every third one between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// A type whose block does not divide the row length falls back to one that does.
TensorType fit_row(TensorType type, uint64_t row) {
    if (row % traits(type).block_size == 0) return type;
    switch (type) {
        case T::IQ4_XS: case T::IQ1_S: case T::IQ1_M: case T::IQ2_XXS: case T::IQ2_XS: case T::IQ2_S:
        case T::IQ3_XXS: case T::IQ3_S: type = T::IQ4_NL; break;
        case T::Q2_K: case T::Q3_K: case T::TQ1_0: case T::TQ2_0: type = T::Q4_0; break;
        case T::Q4_K: type = T::Q5_0; break;
        case T::Q5_K: type = T::Q5_1; break;
        case T::Q6_K: type = T::Q8_0; break;
        default: break;
    }
    return row % traits(type).block_size == 0 ? type : T::F16;
}

}  // namespace

std::optional<QuantRecipe> find_recipe(const std::string& name) {
    for (const QuantRecipe& r : recipes())
        if (r.name == name) return r;
    return std::nullopt;
}

std::vector<std::string> recipe_names() {
    std::vector<std::string> names;
    for (const QuantRecipe& r : recipes()) names.push_back(r.name);
    return names;
}

bool tensor_is_quantizable(const std::string& name, uint32_t n_dims) {
    // A mixture's router stays as it is, as llama.cpp leaves it: it is small, and rounding its logits
    // would change which experts a token picks. So do a recurrent layer's convolution taps (llama.cpp
    // keeps ssm_conv1d and LFM2's shortconv.conv in F32; its shared-expert gate, ffn_gate_inp_shexp,
    // it does quantize) and Gemma 4's per_layer_model_proj ("not too big", llama-quant.cpp).
    return n_dims >= 2 && ends_with(name, "weight") && name.find("_norm.weight") == std::string::npos &&
           name.find("ffn_gate_inp.weight") == std::string::npos && name.find("ssm_conv1d") == std::string::npos &&
           name.find("shortconv.conv.weight") == std::string::npos && name.find("per_layer_model_proj") == std::string::npos;
}

bool tensor_needs_imatrix(const std::string& name, TensorType type, const QuantRecipe& recipe) {
    if (name == "token_embd.weight" || name == "output.weight") return false;
    switch (type) {
        case T::IQ3_XXS: case T::IQ2_XXS: case T::IQ2_XS: case T::IQ2_S: case T::IQ1_M: case T::IQ1_S: return true;
        case T::Q2_K: return recipe.name == "Q2_K_S";
        default: return false;
    }
}

QuantMix::QuantMix(const QuantRecipe& recipe, bool pure, int n_gqa, bool tied, const std::vector<std::string>& names, int n_expert,
                   bool has_imatrix)
    : recipe_(recipe), pure_(pure), tied_embeddings_(tied), n_gqa_(n_gqa), n_expert_(n_expert), has_imatrix_(has_imatrix) {
    for (const std::string& name : names) {
        n_attn_v_ += name.find("attn_v.weight") != std::string::npos || name.find("attn_qkv.weight") != std::string::npos;
        n_ffn_down_ += name.find("ffn_down") != std::string::npos && ends_with(name, "weight");
        n_ffn_gate_ += name.find("ffn_gate") != std::string::npos && name.find("ffn_gate_inp") == std::string::npos && ends_with(name, "weight");
        n_ffn_up_ += name.find("ffn_up") != std::string::npos && ends_with(name, "weight");
    }
}

QuantMix QuantMix::for_file(const QuantRecipe& recipe, const GgufFile& model, bool pure, bool has_imatrix) {
    const std::string arch = model.get_string("general.architecture").value_or("");
    const auto heads = model.get_uint(arch + ".attention.head_count");
    const auto kv_heads = model.get_uint(arch + ".attention.head_count_kv");
    const int n_gqa = heads && kv_heads && *kv_heads > 0 ? int(*heads / *kv_heads) : 1;
    const int n_expert = int(model.get_uint(arch + ".expert_count").value_or(0));
    std::vector<std::string> names;
    for (const GgufTensor& t : model.tensors()) names.push_back(t.name);
    return QuantMix(recipe, pure, n_gqa, model.find_tensor("output.weight") == nullptr, names, n_expert, has_imatrix);
}

TensorType QuantMix::choose(const std::string& name, uint32_t n_dims, uint64_t row_length, TensorType current) {
    if (!tensor_is_quantizable(name, n_dims)) return current;
    TensorType type = recipe_.base;
    if (pure_ || recipe_.base == T::F32 || recipe_.base == T::F16 || recipe_.base == T::BF16) return fit_row(type, row_length);
    const std::string& r = recipe_.name;
    if (r == "MXFP4_MOE") return fit_row(name.find("_exps.weight") != std::string::npos ? T::MXFP4 : T::Q8_0, row_length);
    const bool output = name == "output.weight" || (tied_embeddings_ && name == "token_embd.weight");
    // The 1- to 2-bit mixes, whose rules come first in llama.cpp's and replace the others.
    const bool low_bit = r == "IQ2_XXS" || r == "IQ2_XS" || r == "IQ1_S" || r == "IQ2_S" || r == "IQ2_M" || r == "IQ1_M";
    const bool iq2_sm = r == "IQ2_S" || r == "IQ2_M";
    if (output) {
        if (row_length % traits(type).block_size != 0) type = T::Q8_0;
        else if (low_bit || r == "IQ3_XXS") type = T::Q5_K;
        else if (type != T::Q8_0) type = T::Q6_K;
    } else if (name == "token_embd.weight") {
        if (r == "TQ1_0" || r == "TQ2_0") type = T::Q4_K;  // else the base type
        else if (r == "IQ2_XXS" || r == "IQ2_XS" || r == "IQ1_S" || r == "IQ1_M") type = T::Q2_K;
        else if (iq2_sm || r == "IQ3_XXS") type = T::IQ3_S;
    } else if (low_bit) {
        if (name.find("attn_v.weight") != std::string::npos || name.find("attn_qkv.weight") != std::string::npos) {
            type = n_gqa_ >= 4 || n_expert_ >= 4 ? T::Q4_K : iq2_sm ? T::IQ3_S : T::Q2_K;
            ++i_attn_v_;
        } else if (n_expert_ == 8 && name.find("attn_k.weight") != std::string::npos) {
            type = T::Q4_K;
        } else if (name.find("ffn_down") != std::string::npos) {
            if (i_ffn_down_++ < n_ffn_down_ / 8) type = iq2_sm ? T::IQ3_S : T::Q2_K;
        } else if (name.find("attn_output.weight") != std::string::npos) {
            if (n_expert_ == 8) type = T::Q5_K;
            else if (r == "IQ1_S" || r == "IQ1_M") type = T::IQ2_XXS;
            else if (iq2_sm) type = T::IQ3_S;
        }
    } else if (name.find("attn_v.weight") != std::string::npos || name.find("attn_qkv.weight") != std::string::npos) {
        // A fused Q|K|V (phi3) counts as attn_v, as llama.cpp's current rules take it.
        const int i = i_attn_v_++;
        if (r == "Q2_K") type = n_gqa_ >= 4 ? T::Q4_K : T::Q3_K;
        else if (r == "Q2_K_S" && n_gqa_ >= 4) type = T::Q4_K;
        else if (r == "IQ3_XXS") type = n_gqa_ >= 4 ? T::Q4_K : !has_imatrix_ ? T::IQ3_S : T::IQ3_XXS;
        else if ((r == "IQ3_XS" || r == "IQ3_S") && n_gqa_ >= 4) type = T::Q4_K;
        else if (r == "IQ3_M") type = T::Q4_K;
        else if (r == "Q3_K_M") type = i < 2 ? T::Q5_K : T::Q4_K;
        else if (r == "Q3_K_L") type = T::Q5_K;
        else if ((r == "IQ4_NL" || r == "IQ4_XS") && n_gqa_ >= 4) type = T::Q5_K;
        else if ((r == "Q4_K_M" || r == "Q5_K_M") && use_more_bits(i, n_attn_v_)) type = T::Q6_K;
        else if (r == "Q4_K_S" && i < 4) type = T::Q5_K;
        if (n_expert_ == 8) type = T::Q8_0;  // an 8-expert mixture's attention is a small share of its bytes
    } else if (name.find("ffn_down") != std::string::npos) {  // experts' too, as llama.cpp's category
        const int i = i_ffn_down_++, n = n_ffn_down_;
        if (r == "Q2_K") type = T::Q3_K;
        else if (r == "Q2_K_S") type = i < n / 8 ? T::Q4_K : type;
        else if (r == "IQ3_XXS" && !has_imatrix_) type = i < n / 8 ? T::Q4_K : T::Q3_K;
        else if (r == "Q3_K_M") type = i < n / 16 ? T::Q5_K : T::Q4_K;
        else if (r == "IQ3_M" && (i < n / 8 || (n_expert_ == 8 && use_more_bits(i, n)))) type = T::Q4_K;
        else if (r == "Q3_K_L") type = T::Q5_K;
        else if (r == "Q4_K_M") type = use_more_bits(i, n) ? T::Q6_K : type;
        // With an importance matrix llama.cpp trusts IQ4 in the first layers' ffn_down.
        else if ((r == "IQ4_NL" || r == "IQ4_XS") && i < n / 8 && !has_imatrix_) type = T::Q5_K;
        else if (r == "Q5_K_M" && use_more_bits(i, n)) type = T::Q6_K;
        else if (r == "Q4_K_S" && i < n / 8) type = T::Q5_K;
        // Q4_0/Q5_0 with an importance matrix: the first eighth of ffn_down one step up, against outliers.
        else if ((r == "Q4_0" || r == "Q5_0") && has_imatrix_ && i < n / 8) type = r == "Q4_0" ? T::Q4_1 : T::Q5_1;
    } else if (name.find("attn_output.weight") != std::string::npos) {
        if (n_expert_ == 8) {
            for (const char* bumped : {"Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ3_S", "IQ3_M", "IQ4_XS"})
                if (r == bumped) type = T::Q5_K;
        } else if (r == "Q2_K") type = T::Q3_K;
        else if (r == "IQ3_XXS") type = T::IQ3_S;
        else if (r == "Q3_K_M" || r == "IQ3_M") type = T::Q4_K;
        else if (r == "Q3_K_L") type = T::Q5_K;
    } else if (name.find("attn_k.weight") != std::string::npos || name.find("attn_q.weight") != std::string::npos) {
        if (n_expert_ == 8 && name.find("attn_k.weight") != std::string::npos) type = T::Q8_0;
        else if (r == "IQ3_XS") type = T::IQ3_XXS;
        else if (r == "IQ3_XXS") type = T::IQ2_S;
    } else if (name.find("ffn_gate") != std::string::npos || name.find("ffn_up") != std::string::npos) {
        // IQ3_XS: the middle three quarters of the layers' gate and up one step down.
        int& i = name.find("ffn_gate") != std::string::npos ? i_ffn_gate_ : i_ffn_up_;
        const int n = name.find("ffn_gate") != std::string::npos ? n_ffn_gate_ : n_ffn_up_;
        if (r == "IQ3_XS" && i >= n / 8 && i < 7 * n / 8) type = T::IQ3_XXS;
        ++i;
    }
    return fit_row(type, row_length);
}

}  // namespace rill
