#include "serve_extras.h"

#include "runtime/text/tokenizer.h"

namespace rill::serve {
namespace {

using json = nlohmann::ordered_json;

ApiError bad_field(const std::string& param, const std::string& message) { return ApiError{400, message, "invalid_request_error", "", param}; }

bool flag(const json& body, const char* key, bool otherwise) {
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) return otherwise;
    if (!it->is_boolean()) throw bad_field(key, std::string("'") + key + "' must be true or false");
    return it->get<bool>();
}

// JSON's own check: dumping a string that is not UTF-8 throws.
bool is_utf8(const std::string& text) {
    try {
        (void)json(text).dump();
        return true;
    } catch (const json::type_error&) {
        return false;
    }
}

void require_object(const json& body) {
    if (!body.is_object()) throw bad_field("", "the request body must be a JSON object");
}

}  // namespace

json tokenize_response(const json& body, const ServedModel& served) {
    require_object(body);
    const auto it = body.find("content");
    if (it == body.end() || !it->is_string()) throw bad_field("content", "'content' is required and must be a string");
    const std::vector<int32_t> ids = tokenize(served.vocab, it->get<std::string>(),
                                              {.add_special = flag(body, "add_special", false), .parse_special = flag(body, "parse_special", true)});
    if (!flag(body, "with_pieces", false)) return {{"tokens", ids}};
    json tokens = json::array();
    for (const int32_t id : ids) {
        const std::string piece = token_text(served.vocab, id, false, true);
        if (is_utf8(piece)) {
            tokens.push_back({{"id", id}, {"piece", piece}});
        } else {
            json bytes = json::array();
            for (const char c : piece) bytes.push_back(int(static_cast<unsigned char>(c)));
            tokens.push_back({{"id", id}, {"piece", std::move(bytes)}});
        }
    }
    return {{"tokens", std::move(tokens)}};
}

json detokenize_response(const json& body, const ServedModel& served) {
    require_object(body);
    const auto it = body.find("tokens");
    if (it == body.end() || !it->is_array()) throw bad_field("tokens", "'tokens' is required and must be an array of token ids");
    std::vector<int32_t> ids;
    for (const json& v : *it) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= served.model.hp.n_vocab)
            throw bad_field("tokens", "'tokens' holds " + v.dump() + ", which is not a token id (0 to " + std::to_string(served.model.hp.n_vocab - 1) + ")");
        ids.push_back(int32_t(v.get<int64_t>()));
    }
    // Control tokens are shown, as llama-server shows them, so the text round-trips through /tokenize.
    return {{"content", detokenize(served.vocab, ids, {.skip_special = false})}};
}

std::string slot_filename(const json& body) {
    require_object(body);
    const auto it = body.find("filename");
    if (it == body.end() || !it->is_string()) throw bad_field("filename", "'filename' is required and must be a string");
    const std::string name = it->get<std::string>();
    bool plain = !name.empty() && name.size() <= 200 && name[0] != '.';
    for (const char c : name)
        plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-');
    if (!plain)
        throw bad_field("filename", "'filename' must be a plain file name of up to 200 letters, digits, '.', '_' or '-', not starting with '.'");
    return name;
}

}  // namespace rill::serve
