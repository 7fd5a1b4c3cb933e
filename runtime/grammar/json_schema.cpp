#include "runtime/grammar/json_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "runtime/base/error.h"
#include "runtime/grammar/grammar.h"
#include "runtime/grammar/regex_to_gbnf.h"

namespace rill::grammar {
namespace {

using json = nlohmann::ordered_json;  // properties keep the order the schema declares them in

// The JSON pieces every schema grammar draws on. Space between tokens is bounded, as llama.cpp
// bounds it, so a model cannot fill its budget with indentation.
const char* const kPrimitives[][2] = {
    {"ws", R"(| " " | "\n" [ \t]{0,20})"},
    // \u escapes of surrogates are left out: a pair would be one character to a validator but two here.
    {"char", R"([^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2})))"},
    {"string", R"("\"" char* "\"")"},
    {"integral", R"("0" | [1-9] [0-9]{0,15})"},
    {"integer", R"("-"? integral)"},
    // Exponents of two digits keep every number finite as a double (1e999 is Infinity to JavaScript).
    {"number", R"("-"? integral ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?)"},
    {"boolean", R"("true" | "false")"},
    {"null", R"("null")"},
    {"value", R"(object | array | string | number | boolean | null)"},
    {"object", R"("{" ws (string ws ":" ws value (ws "," ws string ws ":" ws value)*)? ws "}")"},
    {"array", R"("[" ws (value (ws "," ws value)*)? ws "]")"},
    {"d28", R"("0" [1-9] | "1" [0-9] | "2" [0-8])"},
    {"date", R"([0-9]{4} "-" (("0" [13578] | "1" [02]) "-" (d28 | "29" | "30" | "31") | ("0" [469] | "11") "-" (d28 | "29" | "30") | "02-" d28))"},
    {"time", R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? "Z")"},
    {"date-time", R"(date "T" time)"},
    {"uuid", R"([0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12})"},
};
// Which primitives each one uses, so only what is needed is written out.
const std::map<std::string, std::vector<std::string>> kUses = {
    {"string", {"char"}}, {"integer", {"integral"}}, {"number", {"integral"}},
    {"value", {"object", "array", "string", "number", "boolean", "null"}},
    {"object", {"ws", "string", "value"}}, {"array", {"ws", "value"}},
    {"date", {"d28"}}, {"date-time", {"date", "time"}},
};

// Validation keywords a grammar cannot (or rill does not yet) enforce.
const std::set<std::string> kRefused = {
    "not", "if", "then", "else", "dependentSchemas", "dependentRequired", "dependencies", "patternProperties",
    "propertyNames", "minProperties", "maxProperties", "contains", "minContains", "maxContains", "multipleOf",
    "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"};

[[noreturn]] void refuse(const std::string& where, const std::string& message) {
    throw Error("json_schema: " + message + (where.empty() ? "" : " (at " + where + ")"));
}

std::string pointer_escape(const std::string& key) {
    std::string out;
    for (const char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    return out;
}

// Digit strings of equal length, lo <= hi: a GBNF expression for the numbers between them.
std::string digits_between(const std::string& lo, const std::string& hi) {
    if (lo.empty()) return "\"\"";
    if (lo == hi) return gbnf_literal(lo);
    const size_t rest = lo.size() - 1;
    const std::string tail_lo = lo.substr(1), tail_hi = hi.substr(1);
    auto any_digits = [&] { return rest ? " [0-9]{" + std::to_string(rest) + "}" : std::string(); };
    if (lo[0] == hi[0]) return gbnf_literal(lo.substr(0, 1)) + " (" + digits_between(tail_lo, tail_hi) + ")";
    std::vector<std::string> parts;
    char first = lo[0], last = hi[0];
    if (tail_lo != std::string(rest, '0')) {
        parts.push_back(gbnf_literal(lo.substr(0, 1)) + " (" + digits_between(tail_lo, std::string(rest, '9')) + ")");
        ++first;
    }
    std::string high_part;
    if (tail_hi != std::string(rest, '9')) {
        high_part = gbnf_literal(hi.substr(0, 1)) + " (" + digits_between(std::string(rest, '0'), tail_hi) + ")";
        --last;
    }
    if (first <= last) parts.push_back(std::string("[") + first + "-" + last + "]" + any_digits());
    if (!high_part.empty()) parts.push_back(high_part);
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : " | ") + p;
    return out;
}

// Non-negative integers in [lo, hi], written without leading zeros; hi < 0: no upper bound
// (up to 16 digits, as the plain integer rule allows).
std::string naturals_between(int64_t lo, int64_t hi) {
    const std::string a = std::to_string(lo);
    const size_t max_len = hi < 0 ? 16 : std::to_string(hi).size();
    std::vector<std::string> parts;
    for (size_t len = a.size(); len <= max_len; ++len) {
        std::string from(len, '0');  // 10...0, or lo itself at its own length
        from[0] = '1';
        if (len == a.size()) from = a;
        std::string to = std::string(len, '9');
        if (hi >= 0 && len == max_len) to = std::to_string(hi);
        if (hi < 0 && len > a.size()) {  // every longer number at once
            parts.push_back("[1-9] [0-9]{" + std::to_string(len - 1) + "," + std::to_string(max_len - 1) + "}");
            break;
        }
        // Appended piece by piece: GCC 12 reads "(" + a temporary as an overlapping copy (-Wrestrict).
        std::string part = "(";
        part += digits_between(from, to);
        parts.push_back(part + ")");
    }
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : " | ") + p;
    return out;
}

class Converter {
public:
    explicit Converter(const json& root) : root_(&root) {}
    Converter() = default;

    std::string convert() {
        const std::string top = visit(*root_, "", "root-value");
        return "root ::= " + top + "\n" + helpers();
    }

    // Each schema as a rule of the given name; a $ref points into the schema it is in.
    std::string convert(const std::vector<std::pair<std::string, json>>& named) {
        std::string out;
        for (const auto& [name, schema] : named) {
            root_ = &schema;
            refs_.clear();
            out += name + " ::= " + visit(schema, "", name) + "\n";
        }
        return out + helpers();
    }

private:
    // The rules the visited schemas made, and the primitives they use.
    std::string helpers() {
        std::string out;
        for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
        std::set<std::string> written;
        std::vector<std::string> pending(used_.begin(), used_.end());
        while (!pending.empty()) {
            const std::string p = pending.back();
            pending.pop_back();
            if (!written.insert(p).second) continue;
            if (const auto it = kUses.find(p); it != kUses.end()) pending.insert(pending.end(), it->second.begin(), it->second.end());
        }
        for (const auto& primitive : kPrimitives)
            if (written.count(primitive[0])) out += std::string(primitive[0]) + " ::= " + primitive[1] + "\n";
        return out;
    }

    std::string use(const std::string& primitive) {
        used_.insert(primitive);
        return primitive;
    }

    std::string add_rule(const std::string& hint, const std::string& body) {
        std::string name;
        for (const char c : hint) name += (std::isalnum(uint8_t(c)) ? c : '-');
        if (name.empty()) name = "r";
        name = "s-" + name + "-" + std::to_string(rules_.size());
        rules_[name] = body;
        return name;
    }

    static std::string alternatives(const std::vector<std::string>& items) {
        std::string out;
        for (const std::string& i : items) out += (out.empty() ? "" : " | ") + i;
        return "(" + out + ")";
    }

    std::string literal_value(const json& value) { return gbnf_literal(value.dump(-1, ' ', false, json::error_handler_t::strict)); }

    const json& resolve(const std::string& ref, const std::string& where) {
        if (ref.empty() || ref[0] != '#') refuse(where, "'$ref' may only point into the same schema ('#/...'), not to '" + ref + "'");
        try {
            return root_->at(json::json_pointer(ref.substr(1)));
        } catch (const json::exception&) {
            refuse(where, "the reference '" + ref + "' points at nothing");
        }
    }

    std::string visit(const json& schema, const std::string& where, const std::string& hint) {
        if (++depth_ > 64) refuse(where, "the schema is nested more than 64 levels deep");
        struct Leave {
            int& d;
            ~Leave() { --d; }
        } leave{depth_};
        if (schema.is_boolean()) {
            if (!schema.get<bool>()) refuse(where, "the schema 'false' accepts nothing");
            return use("value");
        }
        if (!schema.is_object()) refuse(where, "a schema must be an object or a boolean");
        for (const auto& [key, _] : schema.items())
            if (kRefused.count(key)) refuse(where, "'" + key + "' is not supported");
        if (schema.contains("$ref")) {
            if (!schema["$ref"].is_string()) refuse(where, "'$ref' must be a string");
            const std::string ref = schema["$ref"].get<std::string>();
            if (const auto it = refs_.find(ref); it != refs_.end()) return it->second;
            // Named before it is visited, so a recursive definition refers to itself.
            const std::string name = "s-ref-" + std::to_string(ref_count_++);
            refs_[ref] = name;
            rules_[name] = "";
            rules_[name] = visit(resolve(ref, where), ref, ref.substr(ref.find_last_of('/') + 1));
            return name;
        }
        if (schema.contains("const")) return literal_value(schema["const"]);
        if (schema.contains("enum")) {
            const json& values = schema["enum"];
            if (!values.is_array() || values.empty()) refuse(where, "'enum' must be a non-empty array");
            std::vector<std::string> items;
            for (const json& v : values) items.push_back(literal_value(v));
            return alternatives(items);
        }
        for (const char* key : {"anyOf", "oneOf"})
            if (schema.contains(key)) {
                const json& branches = schema[key];
                if (!branches.is_array() || branches.empty()) refuse(where, std::string("'") + key + "' must be a non-empty array");
                std::vector<std::string> items;
                for (size_t i = 0; i < branches.size(); ++i)
                    items.push_back(visit(branches[i], where + "/" + key + "/" + std::to_string(i), hint));
                return add_rule(hint, alternatives(items));
            }
        if (schema.contains("allOf")) {
            const json& parts = schema["allOf"];
            if (!parts.is_array() || parts.size() != 1) refuse(where, "'allOf' is supported with exactly one schema");
            return visit(parts[0], where + "/allOf/0", hint);
        }
        if (schema.contains("type") && schema["type"].is_array()) {
            std::vector<std::string> items;
            for (const json& t : schema["type"]) {
                json one = schema;
                one["type"] = t;
                items.push_back(visit(one, where, hint));
            }
            if (items.empty()) refuse(where, "'type' is an empty list");
            return add_rule(hint, alternatives(items));
        }
        std::string type;
        if (schema.contains("type")) {
            if (!schema["type"].is_string()) refuse(where, "'type' must be a string or a list of strings");
            type = schema["type"].get<std::string>();
        } else if (schema.contains("properties") || schema.contains("required") || schema.contains("additionalProperties")) {
            type = "object";
        } else if (schema.contains("items") || schema.contains("prefixItems")) {
            type = "array";
        } else {
            return use("value");
        }
        if (type == "object") return object(schema, where, hint);
        if (type == "array") return array(schema, where, hint);
        if (type == "string") return string(schema, where, hint);
        if (type == "integer") return integer(schema, where, hint);
        if (type == "number") return number(schema, where);
        if (type == "boolean") return use("boolean");
        if (type == "null") return use("null");
        refuse(where, "'type' \"" + type + "\" is not a JSON Schema type");
    }

    std::string object(const json& schema, const std::string& where, const std::string& hint) {
        static const json kNone = json::object();
        const json& properties = schema.contains("properties") ? schema["properties"] : kNone;
        if (!properties.is_object()) refuse(where, "'properties' must be an object");
        std::vector<std::string> required_names;
        if (schema.contains("required")) {
            if (!schema["required"].is_array()) refuse(where, "'required' must be an array of names");
            for (const json& r : schema["required"]) {
                if (!r.is_string()) refuse(where, "'required' must be an array of names");
                if (std::find(required_names.begin(), required_names.end(), r.get<std::string>()) == required_names.end())
                    required_names.push_back(r.get<std::string>());
            }
        }
        const json extra = schema.contains("additionalProperties") ? schema["additionalProperties"] : json(true);
        if (!extra.is_boolean() && !extra.is_object()) refuse(where, "'additionalProperties' must be a boolean or a schema");
        auto member = [&](const std::string& name, const json& value_schema) {
            const std::string key = gbnf_literal(json(name).dump(-1, ' ', false, json::error_handler_t::strict));
            return key + " ws \":\" ws " + visit(value_schema, where + "/properties/" + pointer_escape(name), name);
        };
        use("ws");
        if (properties.empty() && required_names.empty()) {
            if (extra.is_boolean() && !extra.get<bool>()) return "(\"{\" ws \"}\")";
            const std::string value = extra.is_object() ? visit(extra, where + "/additionalProperties", hint + "-value") : use("value");
            const std::string kv = use("string") + " ws \":\" ws " + value;
            return add_rule(hint, "\"{\" ws (" + kv + " (ws \",\" ws " + kv + ")*)? ws \"}\"");
        }
        std::vector<std::string> required, optional;
        for (const std::string& name : required_names)
            required.push_back(member(name, properties.contains(name) ? properties[name] : json(true)));
        for (const auto& [name, value_schema] : properties.items())
            if (std::find(required_names.begin(), required_names.end(), name) == required_names.end()) optional.push_back(member(name, value_schema));
        // Optional members as a chain: tail_i ::= member_i ("," tail_(i+1))? | tail_(i+1), each member at most once, in order.
        std::string tail;
        for (size_t i = optional.size(); i-- > 0;) {
            const std::string body = tail.empty() ? optional[i] : optional[i] + " (ws \",\" ws " + tail + ")? | " + tail;
            tail = add_rule(hint + "-rest", body);
        }
        std::string body = "\"{\" ws ";
        for (size_t i = 0; i < required.size(); ++i) body += (i ? " ws \",\" ws " : "") + required[i];
        if (!tail.empty()) body += required.empty() ? "(" + tail + ")?" : " (ws \",\" ws " + tail + ")?";
        body += " ws \"}\"";
        return add_rule(hint, body);
    }

    std::string array(const json& schema, const std::string& where, const std::string& hint) {
        if (schema.contains("uniqueItems") && schema["uniqueItems"] == true) refuse(where, "'uniqueItems' is not supported");
        int64_t min_items = 0, max_items = -1;
        if (schema.contains("minItems")) min_items = count(schema["minItems"], where, "minItems");
        if (schema.contains("maxItems")) max_items = count(schema["maxItems"], where, "maxItems");
        if (max_items >= 0 && max_items < min_items) refuse(where, "'maxItems' is below 'minItems'");
        if (min_items > 1000 || max_items > 1000) refuse(where, "'minItems' and 'maxItems' above 1000 are not supported");
        use("ws");
        std::vector<std::string> items;  // the tuple's items (prefixItems), then the rest
        if (schema.contains("prefixItems")) {
            if (!schema["prefixItems"].is_array()) refuse(where, "'prefixItems' must be an array of schemas");
            for (size_t i = 0; i < schema["prefixItems"].size(); ++i)
                items.push_back(visit(schema["prefixItems"][i], where + "/prefixItems/" + std::to_string(i), hint + "-item"));
        }
        const json rest = schema.contains("items") ? schema["items"] : json(true);
        const bool closed = rest.is_boolean() && !rest.get<bool>();
        const std::string rest_rule = closed ? "" : visit(rest, where + "/items", hint + "-item");
        auto item = [&](size_t i) { return i < items.size() ? items[i] : rest_rule; };
        auto sep = [](size_t i) { return i == 0 ? std::string() : std::string("ws \",\" ws "); };
        if (closed && size_t(min_items) > items.size()) refuse(where, "'minItems' asks for more items than 'prefixItems' has, and 'items' is false");
        const bool open = !closed && max_items < 0;
        // Items min_items..last-1 are each optional after the one before; an open array then
        // repeats the rest's schema without bound.
        size_t last = 0;
        if (open) last = std::max(size_t(min_items), items.size());
        else if (closed) last = max_items < 0 ? items.size() : std::min(items.size(), size_t(max_items));
        else last = size_t(max_items);
        std::string tail;
        if (open) tail = last == 0 ? "(" + rest_rule + " (ws \",\" ws " + rest_rule + ")*)?" : "(ws \",\" ws " + rest_rule + ")*";
        for (size_t i = last; i-- > size_t(min_items);)
            tail = "(" + add_rule(hint + "-items", sep(i) + item(i) + (tail.empty() ? "" : " " + tail)) + ")?";
        std::string body = "\"[\" ws ";
        for (size_t i = 0; i < size_t(min_items); ++i) body += sep(i) + item(i) + " ";
        body += tail + " ws \"]\"";
        return add_rule(hint + "-array", body);
    }

    static int64_t count(const json& v, const std::string& where, const char* key) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0) refuse(where, std::string("'") + key + "' must be a non-negative integer");
        return v.get<int64_t>();
    }

    std::string string(const json& schema, const std::string& where, const std::string& hint) {
        const bool has_length = schema.contains("minLength") || schema.contains("maxLength");
        if (schema.contains("format")) {
            if (!schema["format"].is_string()) refuse(where, "'format' must be a string");
            const std::string format = schema["format"].get<std::string>();
            if (format != "date" && format != "time" && format != "date-time" && format != "uuid")
                refuse(where, "'format' \"" + format + "\" is not supported (date, time, date-time and uuid are)");
            if (has_length || schema.contains("pattern")) refuse(where, "'format' together with 'pattern' or a length is not supported");
            return "(\"\\\"\" " + use(format) + " \"\\\"\")";
        }
        if (schema.contains("pattern")) {
            if (!schema["pattern"].is_string()) refuse(where, "'pattern' must be a string");
            if (has_length) refuse(where, "'pattern' together with 'minLength' or 'maxLength' is not supported");
            std::string expression;
            try {
                expression = regex_to_gbnf(schema["pattern"].get<std::string>());
            } catch (const Error& e) {
                refuse(where, std::string("'pattern': ") + e.what());
            }
            use("char");  // an unanchored end matches any characters
            return add_rule(hint + "-pattern", "\"\\\"\" " + expression + " \"\\\"\"");
        }
        use("char");
        if (!has_length) return use("string");
        const int64_t min = schema.contains("minLength") ? count(schema["minLength"], where, "minLength") : 0;
        const int64_t max = schema.contains("maxLength") ? count(schema["maxLength"], where, "maxLength") : -1;
        if (max >= 0 && max < min) refuse(where, "'maxLength' is below 'minLength'");
        if (min > 1000 || max > 1000) refuse(where, "'minLength' and 'maxLength' above 1000 are not supported");
        const std::string repeat = max < 0 ? "{" + std::to_string(min) + ",}" : "{" + std::to_string(min) + "," + std::to_string(max) + "}";
        return add_rule(hint + "-string", "\"\\\"\" char" + repeat + " \"\\\"\"");
    }

    // Bounds read as integers: exclusive ones move by one, fractional ones round inwards.
    static bool bound(const json& schema, const char* inclusive, const char* exclusive, bool lower, int64_t& out, const std::string& where) {
        bool have = false;
        auto take = [&](const json& v, bool strict, const char* key) {
            if (!v.is_number()) refuse(where, std::string("'") + key + "' must be a number");
            const double d = v.get<double>();
            if (std::fabs(d) > 1e15) refuse(where, std::string("'") + key + "' beyond ±1e15 is not supported");
            double b = lower ? std::ceil(d) : std::floor(d);
            if (strict && b == d) b += lower ? 1 : -1;
            const int64_t value = int64_t(b);
            if (!have || (lower ? value > out : value < out)) out = value;
            have = true;
        };
        if (schema.contains(inclusive)) take(schema[inclusive], false, inclusive);
        if (schema.contains(exclusive) && !schema[exclusive].is_boolean()) take(schema[exclusive], true, exclusive);
        if (schema.contains(exclusive) && schema[exclusive].is_boolean()) refuse(where, std::string("'") + exclusive + "' as a boolean (draft 4) is not supported");
        return have;
    }

    std::string integer(const json& schema, const std::string& where, const std::string& hint) {
        int64_t lo = 0, hi = 0;
        const bool has_lo = bound(schema, "minimum", "exclusiveMinimum", true, lo, where);
        const bool has_hi = bound(schema, "maximum", "exclusiveMaximum", false, hi, where);
        if (!has_lo && !has_hi) return use("integer");
        if (has_lo && has_hi && hi < lo) refuse(where, "the integer's bounds leave no value");
        std::vector<std::string> parts;
        // The negative part as "-" and the magnitudes; zero is never written "-0".
        if (!has_lo || lo < 0) {
            const int64_t magnitude_lo = has_hi && hi < 0 ? -hi : 1;
            parts.push_back("\"-\" (" + naturals_between(magnitude_lo, has_lo ? -lo : -1) + ")");
        }
        if (!has_hi || hi >= 0) parts.push_back("(" + naturals_between(has_lo && lo > 0 ? lo : 0, has_hi ? hi : -1) + ")");
        return add_rule(hint + "-integer", alternatives(parts));
    }

    std::string number(const json& schema, const std::string& where) {
        for (const char* key : {"maximum", "exclusiveMaximum", "exclusiveMinimum"})
            if (schema.contains(key)) refuse(where, std::string("'") + key + "' on a number is not supported (on an integer it is)");
        if (schema.contains("minimum")) {
            if (!schema["minimum"].is_number() || schema["minimum"].get<double>() != 0)
                refuse(where, "'minimum' on a number is supported only as 0 (on an integer any bound is)");
            use("integral");
            return "(integral (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,16})?)";
        }
        return use("number");
    }

    const json* root_ = nullptr;
    std::map<std::string, std::string> rules_;
    std::map<std::string, std::string> refs_;
    int ref_count_ = 0;
    std::set<std::string> used_;
    int depth_ = 0;
};

}  // namespace

std::string gbnf_literal(const std::string& bytes) {
    std::string out = "\"";
    static const char kHex[] = "0123456789ABCDEF";
    for (const char c : bytes) {
        const uint8_t b = uint8_t(c);
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (b < 0x20 || b == 0x7F) out += std::string("\\x") + kHex[b >> 4] + kHex[b & 15];
        else out += c;
    }
    return out + "\"";
}

std::string json_schema_to_gbnf(const json& schema) {
    std::string gbnf = Converter(schema).convert();
    // How a schema gives a grammar the parser refuses: something that can repeat without reading a
    // character, a reference that leads back to itself ({"$ref": "#"} inside an anyOf) or a pattern
    // such as (a*)*. Said in the schema's terms.
    try {
        parse_gbnf(gbnf);
    } catch (const Error& e) {
        if (std::string_view(e.what()).find("left-recursive") == std::string_view::npos) throw;
        refuse("", "a '$ref' leads back to its own schema, or a 'pattern' repeats something that can be empty (as (a*)*), "
                   "before any character is read; a grammar cannot follow that");
    }
    return gbnf;
}

std::string json_schema_rules(const std::vector<std::pair<std::string, json>>& named) { return Converter().convert(named); }

std::string json_object_gbnf() { return json_schema_to_gbnf(json{{"type", "object"}}); }

}  // namespace rill::grammar
