#include "runtime/text/vocab.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "runtime/base/error.h"

namespace rill {
namespace {

int32_t optional_id(const GgufFile& f, const std::string& key, int32_t n_tokens) {
    const auto v = f.get_uint(key);
    if (!v || *v == 0xffffffffu) return -1;  // converters write -1 as u32 for "none"
    if (*v >= uint64_t(n_tokens))
        throw Error(f.name() + ": metadata '" + key + "' is " + std::to_string(*v) + ", outside the vocabulary of " +
                    std::to_string(n_tokens) + " tokens");
    return int32_t(*v);
}

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(uint8_t(c)));
    return s;
}

// Texts that end a turn in the chat formats of popular models, beyond the ids the metadata names.
constexpr std::string_view kTurnEnds[] = {"<|eot_id|>", "<|im_end|>", "<end_of_turn>", "<|end|>", "<|endoftext|>",
                                          "<|eom_id|>", "<|end_of_text|>", "</s>", "<｜end▁of▁sentence｜>",
                                          "<|end_of_role|>"};
constexpr std::string_view kGemma4TurnEnds[] = {"<eos>", "<turn|>", "<|tool_response>"};

}  // namespace

int32_t Vocab::find(std::string_view text) const {
    const auto it = ids.find(std::string(text));
    return it == ids.end() ? -1 : it->second;
}

bool Vocab::is_end_of_generation(int32_t id) const {
    return std::find(end_of_generation.begin(), end_of_generation.end(), id) != end_of_generation.end();
}

Vocab load_vocab(const GgufFile& f) {
    Vocab v;
    v.model = f.get_string("tokenizer.ggml.model").value_or("");
    if (v.model == "llama") v.kind = TokenizerKind::SentencePiece;
    else if (v.model == "gpt2" || v.model == "gemma4") v.kind = TokenizerKind::BytePairs;
    else if (v.model == "bert") v.kind = TokenizerKind::WordPiece;
    else
        throw Error(f.name() + ": tokenizer model '" + v.model + "' is not supported (supported: llama, gpt2, gemma4, bert)");
    v.pre = f.get_string("tokenizer.ggml.pre").value_or("default");  // absent in older files: llama.cpp's default
    v.escaped_spaces = v.model == "gemma4";
    if (v.escaped_spaces) v.pre = "gemma4";  // the model implies its pre-tokenizer, whatever the file says
    if (v.kind == TokenizerKind::BytePairs) {
        try {
            v.pre_tokenizer = std::make_shared<const PreTokenizer>(v.pre);
        } catch (const Error& e) {
            throw Error(f.name() + ": " + e.what());
        }
    }

    v.tokens = f.get_string_array("tokenizer.ggml.tokens");
    if (v.tokens.empty()) throw Error(f.name() + ": metadata 'tokenizer.ggml.tokens' is missing or empty");
    const int32_t n = v.size();
    v.scores = f.get_float_array("tokenizer.ggml.scores");
    if (v.scores.empty()) v.scores.assign(size_t(n), 0.0f);
    if (v.scores.size() != size_t(n))
        throw Error(f.name() + ": tokenizer.ggml.scores has " + std::to_string(v.scores.size()) + " entries for " +
                    std::to_string(n) + " tokens");
    const std::vector<int64_t> kinds = f.get_int_array("tokenizer.ggml.token_type");
    if (!kinds.empty() && kinds.size() != size_t(n))
        throw Error(f.name() + ": tokenizer.ggml.token_type has " + std::to_string(kinds.size()) + " entries for " +
                    std::to_string(n) + " tokens");
    v.kinds.assign(size_t(n), TokenKind::Normal);
    for (size_t i = 0; i < kinds.size(); ++i)
        if (kinds[i] >= 1 && kinds[i] <= 6) v.kinds[i] = TokenKind(kinds[i]);
    v.ids.reserve(size_t(n));
    for (int32_t i = 0; i < n; ++i) {
        v.ids[v.tokens[size_t(i)]] = i;  // a later duplicate wins, as in llama.cpp
        v.longest_token = std::max(v.longest_token, v.tokens[size_t(i)].size());
    }

    const std::vector<std::string> merges = f.get_string_array("tokenizer.ggml.merges");
    if (v.kind == TokenizerKind::BytePairs && merges.empty())
        throw Error(f.name() + ": a gpt2 tokenizer needs 'tokenizer.ggml.merges'");
    v.merge_ranks.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
        const size_t space = merges[i].find(' ', 1);
        if (space == std::string::npos)
            throw Error(f.name() + ": merge #" + std::to_string(i) + " '" + merges[i] + "' is not two tokens");
        v.merge_ranks.emplace(merges[i], int32_t(i));
    }

    std::fill(std::begin(v.byte_tokens), std::end(v.byte_tokens), -1);
    if (v.kind == TokenizerKind::SentencePiece || v.escaped_spaces) {
        for (int b = 0; b < 256; ++b) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            v.byte_tokens[b] = v.find(name);
        }
    }

    v.bos = optional_id(f, "tokenizer.ggml.bos_token_id", n);
    v.eos = optional_id(f, "tokenizer.ggml.eos_token_id", n);
    v.eot = optional_id(f, "tokenizer.ggml.eot_token_id", n);
    v.unk = optional_id(f, "tokenizer.ggml.unknown_token_id", n);
    v.sep = optional_id(f, "tokenizer.ggml.seperator_token_id", n);
    v.cls = optional_id(f, "tokenizer.ggml.cls_token_id", n);
    v.pad = optional_id(f, "tokenizer.ggml.padding_token_id", n);
    const bool spm = v.kind == TokenizerKind::SentencePiece;
    v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token").value_or(spm || v.kind == TokenizerKind::WordPiece);
    v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token").value_or(v.kind == TokenizerKind::WordPiece);
    v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix").value_or(spm);
    v.ignore_merges = v.pre == "llama-bpe" || v.pre == "llama3";
    if (v.escaped_spaces) v.add_bos = true;  // Gemma 4 always starts with BOS, as llama.cpp insists whatever the file says
    if (v.kind == TokenizerKind::WordPiece) {
        if (v.bos < 0) v.bos = v.cls;
        if (v.eos < 0) v.eos = v.sep;
    }

    for (int32_t i = 0; i < n; ++i)
        if (v.is_special(i) && !v.tokens[size_t(i)].empty()) v.specials.push_back(i);
    std::stable_sort(v.specials.begin(), v.specials.end(),
                     [&](int32_t a, int32_t b) { return v.tokens[size_t(a)].size() > v.tokens[size_t(b)].size(); });

    // Phi-3's tokenizer strips whitespace after its special tokens, except these three.
    v.strip_right.assign(size_t(n), false);
    if (const std::string name = lower(f.get_string("general.name").value_or(""));
        name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
        for (const int32_t id : v.specials) v.strip_right[size_t(id)] = true;
        for (const char* keep : {"<unk>", "<s>", "<|endoftext|>"})
            if (const int32_t id = v.find(keep); id >= 0) v.strip_right[size_t(id)] = false;
        if (const int32_t id = v.find("</s>"); id >= 0) v.strip_right[size_t(id)] = true;
    }

    for (const int32_t id : {v.eos, v.eot})
        if (id >= 0) v.end_of_generation.push_back(id);
    // Gemma 4 ends a turn with <turn|>, and a tool call with <|tool_response>: the file marks that one
    // user-defined, so it is made a control token (never read from plain text, not printed), as llama.cpp does.
    // Its vocabulary also holds a plain-text "</s>", which ends nothing.
    const bool gemma4_turns = v.find("<|tool_response>") >= 0;
    if (gemma4_turns)
        for (const std::string_view text : kGemma4TurnEnds)
            if (const int32_t id = v.find(text); id >= 0) {
                if (v.kinds[size_t(id)] == TokenKind::UserDefined) v.kinds[size_t(id)] = TokenKind::Control;
                if (!v.is_end_of_generation(id)) v.end_of_generation.push_back(id);
            }
    for (const std::string_view text : kTurnEnds) {
        if (gemma4_turns && text == "</s>") continue;
        if (const int32_t id = v.find(text); id >= 0 && v.kinds[size_t(id)] == TokenKind::Control && !v.is_end_of_generation(id))
            v.end_of_generation.push_back(id);
    }
    return v;
}

}  // namespace rill
