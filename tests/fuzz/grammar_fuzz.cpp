// The grammar engine on untrusted input: GBNF text or a JSON Schema (with its regular expressions),
// then text fed to the matcher and token masks over a small vocabulary. Input: 'g' or 's', the
// grammar or schema, NUL, the text to match. Parse errors are rill::Errors; a grammar the schema
// converter writes must always parse; nothing may crash, hang or leak.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/error.h"
#include "runtime/grammar/grammar.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/grammar/matcher.h"
#include "runtime/grammar/token_trie.h"

namespace {

const rill::grammar::TokenTrie& vocabulary() {
    static const rill::grammar::TokenTrie trie = [] {
        std::vector<std::string> texts = {"", "{", "}", "\"", "a", "ab", "abc", " ", "\n", "0", "12", "-", ".", "e", ":", ",", "[", "]",
                                          "true", "null", "\xCE", "\xB1", "\xCE\xB1", "\"a\":", "\xF0\x9F\x98\x80", "\\", "\\u00"};
        for (int b = 0; b < 256; ++b) texts.push_back(std::string(1, char(b)));
        return rill::grammar::build_token_trie(texts);
    }();
    return trie;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    const size_t split = input.find('\0');
    const std::string_view source = input.substr(0, split);
    const std::string_view text = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
    std::string gbnf;
    if (data[0] == 's') {
        const auto schema = nlohmann::ordered_json::parse(source, nullptr, false);
        if (schema.is_discarded()) return 0;
        try {
            gbnf = rill::grammar::json_schema_to_gbnf(schema);
        } catch (const rill::Error&) {
            return 0;
        }
    } else {
        gbnf = std::string(source);
    }
    std::shared_ptr<const rill::grammar::Grammar> grammar;
    try {
        grammar = std::make_shared<const rill::grammar::Grammar>(rill::grammar::parse_gbnf(gbnf));
    } catch (const rill::Error&) {
        if (data[0] == 's') std::abort();  // the converter wrote a grammar its own parser refuses
        return 0;
    }
    try {
        rill::grammar::Matcher matcher(grammar);
        (void)matcher.allowed_tokens(vocabulary());
        for (size_t i = 0; i < text.size(); i += 3) {
            if (!matcher.accept(text.substr(i, 3))) break;
            (void)matcher.allowed_tokens(vocabulary());
            (void)matcher.accepting();
        }
    } catch (const rill::Error&) {  // a grammar too ambiguous to follow
    }
    return 0;
}
