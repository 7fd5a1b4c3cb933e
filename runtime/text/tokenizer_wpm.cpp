// WordPiece (BERT): normalise (NFD, lower case, drop controls and accents), split on whitespace and around
// punctuation and CJK characters, then match each word greedily, longest piece first.
#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <vector>

#include "runtime/base/error.h"
#include "runtime/text/tokenizer.h"
#include "runtime/text/utf8.h"

namespace rill {
namespace {

bool is_cjk(uint32_t cp) {
    return (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) || (cp >= 0x20000 && cp <= 0x2a6df) ||
           (cp >= 0x2a700 && cp <= 0x2b73f) || (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b820 && cp <= 0x2ceaf) ||
           (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0x2f800 && cp <= 0x2fa1f);
}

// Canonical decomposition (NFD) of valid-or-repaired UTF-8 text, as code points.
std::vector<uint32_t> nfd_code_points(std::string_view text) {
    UErrorCode status = U_ZERO_ERROR;
    std::vector<UChar> utf16(text.size() + 1);
    int32_t len16 = 0;
    u_strFromUTF8WithSub(utf16.data(), int32_t(utf16.size()), &len16, text.data(), int32_t(text.size()), 0xfffd, nullptr,
                         &status);
    if (U_FAILURE(status)) throw Error("WordPiece: cannot decode the text as UTF-8");
    const UNormalizer2* nfd = unorm2_getNFDInstance(&status);
    std::vector<UChar> normal(size_t(len16) * 4 + 16);
    const int32_t n = unorm2_normalize(nfd, utf16.data(), len16, normal.data(), int32_t(normal.size()), &status);
    if (U_FAILURE(status)) throw Error("WordPiece: Unicode normalisation failed");
    std::vector<uint32_t> cps;
    for (int32_t i = 0; i < n;) {
        UChar32 c;
        U16_NEXT(normal.data(), i, n, c);
        cps.push_back(uint32_t(c));
    }
    return cps;
}

std::vector<std::string> split_words(std::string_view text) {
    std::vector<std::string> words(1);
    for (const uint32_t cp : nfd_code_points(text)) {
        if (u_isUWhiteSpace(UChar32(cp))) {
            if (!words.back().empty()) words.emplace_back();
            continue;
        }
        const int8_t type = u_charType(UChar32(cp));
        const bool control = type == U_CONTROL_CHAR || type == U_FORMAT_CHAR || type == U_UNASSIGNED ||
                             type == U_PRIVATE_USE_CHAR || type == U_SURROGATE;
        // Uncased BERT strips accents: after NFD they are separate non-spacing marks.
        if (cp == 0 || cp == 0xfffd || control || type == U_NON_SPACING_MARK) continue;
        const bool punctuation = u_ispunct(UChar32(cp));
        const bool symbol = type == U_MATH_SYMBOL || type == U_CURRENCY_SYMBOL || type == U_MODIFIER_SYMBOL ||
                            type == U_OTHER_SYMBOL;
        std::string piece;
        append_utf8(piece, uint32_t(u_tolower(UChar32(cp))));
        if (punctuation || (cp < 0x7f && symbol) || is_cjk(cp)) {
            if (!words.back().empty()) words.emplace_back();
            words.back() = piece;
            words.emplace_back();
        } else {
            words.back() += piece;
        }
    }
    if (words.back().empty()) words.pop_back();
    return words;
}

}  // namespace

void tokenize_wpm(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
    for (const std::string& word : split_words(text)) {
        // Word-initial pieces carry SentencePiece's visible space in GGUF WordPiece vocabularies.
        const std::string marked = "\xe2\x96\x81" + word;
        const size_t first = out.size();
        bool unknown = false;
        for (size_t i = 0; i < marked.size() && !unknown;) {
            bool found = false;
            for (size_t j = std::min(marked.size(), i + vocab.longest_token); j > i; --j) {
                if (const int32_t id = vocab.find(std::string_view(marked).substr(i, j - i)); id >= 0) {
                    out.push_back(id);
                    i = j;
                    found = true;
                    break;
                }
            }
            unknown = !found;
        }
        if (unknown) {  // a word no pieces cover becomes one unknown token
            out.resize(first);
            if (vocab.unk >= 0) out.push_back(vocab.unk);
        }
    }
}

}  // namespace rill
