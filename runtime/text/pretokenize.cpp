#define PCRE2_CODE_UNIT_WIDTH 8
#include "runtime/text/pretokenize.h"

#include <pcre2.h>

#include <new>
#include <utility>

#include "runtime/base/error.h"

namespace rill {
namespace {

// The expressions each pre-tokenizer applies in order, as the models' tokenizer.json define them
// (case-insensitive contractions spelt out, as llama.cpp does, so one flag set serves all).
constexpr const char* kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr const char* kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen3.5's: Qwen2's with combining marks (\p{M}) kept inside words.
constexpr const char* kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// o200k's expression: words split at case changes, contractions attached, as tokenizer.json has it.
constexpr const char* kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct Recipe {
    const char* name;
    std::vector<const char*> expressions;
};

const std::vector<Recipe>& recipes() {
    static const std::vector<Recipe> all = {
        {"default", {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
        {"llama-bpe", {kLlama3}},
        {"llama3", {kLlama3}},
        {"smaug-bpe", {kLlama3}},
        {"dbrx", {kLlama3}},  // OLMo 2, Phi-4, Granite 4.0: cl100k's expression, which is Llama 3's
        {"lfm2", {kLlama3}},     // LFM2, LFM2.5: llama.cpp splits them with Llama 3's expression
        {"pixtral", {kLlama3}},  // Nemotron-H (Nemotron Nano 2, Nemotron 3 Nano): likewise in llama.cpp
        {"gpt-4o", {kGpt4o}},  // Phi-4-mini
        {"gpt-2", {kGpt2}},
        {"phi-2", {kGpt2}},
        {"mpt", {kGpt2}},
        {"olmo", {kGpt2}},
        {"qwen2", {kQwen2}},
        {"qwen35", {kQwen35}},
        {"gemma4", {R"([^\n]+|[\n]+)"}},  // BPE over the whole line: only runs of newlines are cut apart
        {"stablelm2", {kQwen2}},
        {"starcoder", {R"(\p{N})", kGpt2}},
        {"refact", {R"(\p{N})", kGpt2}},
        {"smollm", {R"(\p{N})", kGpt2}},
        {"command-r", {R"(\p{N})", kGpt2}},
        {"falcon", {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
        {"deepseek-llm",
         {R"([\r\n])",
          R"(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\x{1F7D}ᾀ-ᾴᾶ-ᾼ\x{1FBE}ῂ-ῄῆ-ῌῐ-\x{1FD3}ῖ-\x{1FDB}ῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\x{2126}ℨ\x{212A}-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)",
          R"(\s?[!-/:-~！-／：-～‘-‟　-。]+)", R"(\s+$)", R"([一-龥ࠀ-一가-퟿]+)", R"(\p{N}+)"}},
        {"deepseek-coder", {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", R"([一-龥ࠀ-一가-퟿]+)", R"(\p{N})"}},
    };
    return all;
}

}  // namespace

struct PreTokenizer::Compiled {
    pcre2_code* code = nullptr;
    ~Compiled() { pcre2_code_free(code); }
};

namespace {

struct MatchData {
    pcre2_match_data* data;
    explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {
        if (data == nullptr) throw std::bad_alloc();
    }
    ~MatchData() { pcre2_match_data_free(data); }
    MatchData(const MatchData&) = delete;
    MatchData& operator=(const MatchData&) = delete;
};

}  // namespace

PreTokenizer::PreTokenizer(const std::string& pre) {
    const Recipe* recipe = nullptr;
    for (const Recipe& r : recipes())
        if (pre == r.name) recipe = &r;
    if (recipe == nullptr) {
        std::string names;
        for (const std::string& n : supported()) names += (names.empty() ? "" : ", ") + n;
        throw Error("pre-tokenizer '" + pre + "' (tokenizer.ggml.pre) is not supported (supported: " + names + ")");
    }
    for (const char* pattern : recipe->expressions) {
        auto c = std::make_unique<Compiled>();
        int error = 0;
        PCRE2_SIZE offset = 0;
        c->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK,
                                &error, &offset, nullptr);
        if (c->code == nullptr) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error, message, sizeof message);
            throw Error("pre-tokenizer '" + pre + "': expression does not compile at " + std::to_string(offset) + ": " +
                        reinterpret_cast<const char*>(message));
        }
        pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter where JIT is unavailable
        expressions_.push_back(std::move(c));
    }
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

std::vector<std::string> PreTokenizer::supported() {
    std::vector<std::string> names;
    for (const Recipe& r : recipes()) names.push_back(r.name);
    return names;
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
    std::vector<std::string_view> pieces = {text};
    for (const auto& expr : expressions_) {
        std::vector<std::string_view> next;
        const MatchData match(expr->code);
        for (const std::string_view piece : pieces) {
            const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
            size_t start = 0, kept = 0;
            while (start < piece.size()) {
                // Invalid UTF-8 was replaced before splitting, so the check can be skipped.
                const int rc = pcre2_match(expr->code, subject, piece.size(), start, PCRE2_NO_UTF_CHECK, match.data, nullptr);
                if (rc < 0) break;
                const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match.data);
                const size_t begin = ov[0], end = ov[1];
                if (end == begin) {  // an empty match: move past one character and keep looking
                    start = begin + 1;
                    while (start < piece.size() && (uint8_t(piece[start]) & 0xc0) == 0x80) ++start;
                    continue;
                }
                if (begin > kept) next.push_back(piece.substr(kept, begin - kept));
                next.push_back(piece.substr(begin, end - begin));
                kept = start = end;
            }
            if (kept < piece.size()) next.push_back(piece.substr(kept));
        }
        pieces = std::move(next);
    }
    return pieces;
}

}  // namespace rill
