// Which type each tensor gets when a model is quantized: a single type (--pure), or one of
// llama.cpp's mixes, which give the tensors that matter most for quality a few more bits.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "runtime/format/gguf.h"

namespace rill {

struct QuantRecipe {
    std::string name;   // "Q4_K_M", "Q8_0", …
    TensorType base;    // the type most matrices get
    uint32_t file_type; // general.file_type, llama.cpp's llama_ftype number
};

std::optional<QuantRecipe> find_recipe(const std::string& name);
std::vector<std::string> recipe_names();

// Walks a model's tensors in file order, as llama.cpp does: some rules depend on how many
// attn_v and ffn_down tensors came before.
class QuantMix {
public:
    // n_gqa: query heads per key/value head; tied: token_embd doubles as the output matrix;
    // names: every tensor of the model, in file order; n_expert: a mixture's experts (0: dense);
    // has_imatrix: an importance matrix is given (some mixes spend bits differently with one).
    QuantMix(const QuantRecipe& recipe, bool pure, int n_gqa, bool tied, const std::vector<std::string>& names, int n_expert = 0,
             bool has_imatrix = false);
    static QuantMix for_file(const QuantRecipe& recipe, const GgufFile& model, bool pure, bool has_imatrix = false);

    // The type for a tensor; tensors that are not quantized (norms, 1-D) keep `current`.
    TensorType choose(const std::string& name, uint32_t n_dims, uint64_t row_length, TensorType current);
    TensorType choose(const GgufTensor& t) { return choose(t.name, t.n_dims, t.ne[0], t.type); }

private:
    QuantRecipe recipe_;
    bool pure_;
    bool tied_embeddings_;
    int n_gqa_ = 1;
    int n_expert_ = 0;
    bool has_imatrix_ = false;
    int n_attn_v_ = 0, n_ffn_down_ = 0, n_ffn_gate_ = 0, n_ffn_up_ = 0;
    int i_attn_v_ = 0, i_ffn_down_ = 0, i_ffn_gate_ = 0, i_ffn_up_ = 0;
};

bool tensor_is_quantizable(const std::string& name, uint32_t n_dims);
// Whether llama-quantize refuses to write this tensor in this type without an importance matrix: the
// 1- to 2-bit grid types (and IQ3_XXS, and Q2_K in a Q2_K_S mix) everywhere but the embeddings and output.
bool tensor_needs_imatrix(const std::string& name, TensorType type, const QuantRecipe& recipe);
inline bool tensor_is_quantizable(const GgufTensor& t) { return tensor_is_quantizable(t.name, t.n_dims); }

}  // namespace rill
