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
    // names: every tensor of the model, in file order.
    QuantMix(const QuantRecipe& recipe, bool pure, int n_gqa, bool tied, const std::vector<std::string>& names);
    static QuantMix for_file(const QuantRecipe& recipe, const GgufFile& model, bool pure);

    // The type for a tensor; tensors that are not quantized (norms, 1-D) keep `current`.
    TensorType choose(const std::string& name, uint32_t n_dims, uint64_t row_length, TensorType current);
    TensorType choose(const GgufTensor& t) { return choose(t.name, t.n_dims, t.ne[0], t.type); }

private:
    QuantRecipe recipe_;
    bool pure_;
    bool tied_embeddings_;
    int n_gqa_ = 1;
    int n_attn_v_ = 0, n_ffn_down_ = 0;
    int i_attn_v_ = 0, i_ffn_down_ = 0;
};

bool tensor_is_quantizable(const std::string& name, uint32_t n_dims);
inline bool tensor_is_quantizable(const GgufTensor& t) { return tensor_is_quantizable(t.name, t.n_dims); }

}  // namespace rill
