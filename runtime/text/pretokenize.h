// Byte-level BPE pre-tokenizers: the regular expressions that cut text into words before merging,
// chosen by tokenizer.ggml.pre, matched with PCRE2 (UTF and Unicode properties).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rill {

class PreTokenizer {
public:
    // Throws rill::Error naming the supported names if `pre` is unknown.
    explicit PreTokenizer(const std::string& pre);
    ~PreTokenizer();
    PreTokenizer(PreTokenizer&&) noexcept;
    PreTokenizer& operator=(PreTokenizer&&) noexcept;

    // Applies each expression in turn to every piece the previous one left: matches and the text
    // between them both become pieces, so no byte is lost.
    std::vector<std::string_view> split(std::string_view text) const;

    static std::vector<std::string> supported();

private:
    struct Compiled;
    std::vector<std::unique_ptr<Compiled>> expressions_;  // immutable after construction: split() is thread-safe
};

}  // namespace rill
