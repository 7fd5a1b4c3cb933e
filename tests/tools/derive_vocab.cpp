// Writes the vocabulary of a GGUF, with some tokenizer flags changed, into a minimal one-layer llama
// model (llama.cpp loads no vocabulary-only file), to check tokenizer variants the
// shared vocabularies lack against llama.cpp (a SentencePiece vocabulary without the dummy-prefix
// space, as Gemma's; a BPE vocabulary under another pre-tokenizer, as Qwen3's, OLMo 2's, Phi-4's):
//   derive_vocab SOURCE.gguf OUT.gguf KEY=VALUE...   (VALUE true/false is a bool, anything else a string)
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/base/error.h"
#include "runtime/format/gguf.h"
#include "runtime/format/gguf_writer.h"

using namespace rill;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: derive_vocab SOURCE.gguf OUT.gguf KEY=VALUE...\n");
        return 2;
    }
    try {
        const GgufFile src = GgufFile::open(argv[1]);
        std::map<std::string, std::string> changes;
        for (int i = 3; i < argc; ++i) {
            const std::string arg = argv[i];
            const size_t eq = arg.find('=');
            if (eq == std::string::npos) throw Error("expected KEY=VALUE, got '" + arg + "'");
            changes[arg.substr(0, eq)] = arg.substr(eq + 1);
        }
        const uint64_t n_vocab = src.get_string_array("tokenizer.ggml.tokens").size();
        if (n_vocab == 0) throw Error(std::string(argv[1]) + " has no tokenizer.ggml.tokens");
        GgufWriter out(argv[2]);
        constexpr uint32_t kEmbd = 32;
        out.set_string("general.architecture", "llama");
        for (const char* key : {"embedding_length", "feed_forward_length", "rope.dimension_count"})
            out.set_u32(std::string("llama.") + key, kEmbd);
        out.set_u32("llama.context_length", 512);
        out.set_u32("llama.block_count", 1);
        out.set_u32("llama.attention.head_count", 1);
        out.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
        for (const auto& [key, value] : src.metadata())
            if (key.rfind("tokenizer.", 0) == 0 && !changes.count(key)) out.set_value(key, value);
        for (const auto& [key, value] : changes) {
            if (value == "true" || value == "false") out.set_bool(key, value == "true");
            else out.set_string(key, value);
        }
        const std::vector<std::pair<std::string, std::vector<uint64_t>>> tensors = {
            {"token_embd.weight", {kEmbd, n_vocab}}, {"output_norm.weight", {kEmbd}},
            {"blk.0.attn_norm.weight", {kEmbd}},     {"blk.0.attn_q.weight", {kEmbd, kEmbd}},
            {"blk.0.attn_k.weight", {kEmbd, kEmbd}}, {"blk.0.attn_v.weight", {kEmbd, kEmbd}},
            {"blk.0.attn_output.weight", {kEmbd, kEmbd}}, {"blk.0.ffn_norm.weight", {kEmbd}},
            {"blk.0.ffn_gate.weight", {kEmbd, kEmbd}}, {"blk.0.ffn_up.weight", {kEmbd, kEmbd}},
            {"blk.0.ffn_down.weight", {kEmbd, kEmbd}}};
        std::vector<uint64_t> sizes;
        for (const auto& [name, ne] : tensors) sizes.push_back(out.add_tensor(name, TensorType::F32, ne));
        out.begin_data();
        for (const uint64_t size : sizes) out.write_data(std::vector<uint8_t>(size, 0));  // zero weights: only the tokenizer matters
        out.finish();
    } catch (const Error& e) {
        std::fprintf(stderr, "derive_vocab: %s\n", e.what());
        return 1;
    }
    return 0;
}
