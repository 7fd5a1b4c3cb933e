#include "runtime/text/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace rill::jinja {

namespace {

std::size_t weight(const Value& v) {
    switch (v.kind()) {
        case Kind::String: return v.str().size() + 16;
        case Kind::List: return v.list().bytes;
        case Kind::Dict: return v.dict().bytes;
        default: return 16;
    }
}

int nesting(const Value& v) {
    if (v.is(Kind::List)) return v.list().depth;
    if (v.is(Kind::Dict)) return v.dict().depth;
    return 0;
}

template <typename Container>
void check_limits(const Container& c) {
    if (c.depth > kMaxNesting)
        throw Failure("lists and dicts nested more than " + std::to_string(kMaxNesting) + " deep");
    if (c.bytes > kMaxBytes) throw Failure("a list or dict larger than " + std::to_string(kMaxBytes >> 20) + " MiB");
}

Value finish_dict(Dict d) {
    d.bytes = 16;
    for (const auto& [k, v] : d.items) {
        d.depth = std::max(d.depth, 1 + std::max(nesting(k), nesting(v)));
        d.bytes += weight(k) + weight(v);
    }
    check_limits(d);
    return Value{std::make_shared<const Dict>(std::move(d))};
}

}  // namespace

const Value* Dict::find(std::string_view key) const {
    for (const auto& [k, v] : items)
        if (k.is(Kind::String) && k.str() == key) return &v;
    return nullptr;
}

const Value* Dict::find(const Value& key) const {
    if (key.is(Kind::String)) return find(std::string_view(key.str()));
    for (const auto& [k, v] : items)
        if (equal(k, key)) return &v;
    return nullptr;
}

const Value* Namespace::find(std::string_view name) const {
    for (const auto& [k, v] : attrs)
        if (k == name) return &v;
    return nullptr;
}

void Namespace::set(const std::string& name, Value value) {
    for (auto& [k, v] : attrs)
        if (k == name) {
            v = std::move(value);
            return;
        }
    attrs.emplace_back(name, std::move(value));
}

Value undefined(std::string hint) { return Value{Undefined{std::move(hint)}}; }
Value none() { return Value{None{}}; }
Value boolean(bool b) { return Value{b}; }
Value integer(std::int64_t i) { return Value{i}; }
Value number(double d) { return Value{d}; }
Value string(std::string s) {
    if (s.size() > kMaxBytes) throw Failure("a string longer than " + std::to_string(kMaxBytes >> 20) + " MiB");
    return Value{std::move(s)};
}

Value list(std::vector<Value> items, bool tuple) {
    List l;
    l.tuple = tuple;
    l.bytes = 16;
    for (const Value& v : items) {
        l.depth = std::max(l.depth, 1 + nesting(v));
        l.bytes += weight(v);
    }
    l.items = std::move(items);
    check_limits(l);
    return Value{std::make_shared<const List>(std::move(l))};
}

Value dict(std::vector<std::pair<Value, Value>> items) {
    Dict d;
    for (auto& [k, v] : items) {
        require_hashable(k);
        const Value& key = k;  // clang 14 cannot capture a structured binding
        auto same = std::find_if(d.items.begin(), d.items.end(), [&](const auto& kv) { return equal(kv.first, key); });
        if (same != d.items.end())
            same->second = std::move(v);
        else
            d.items.emplace_back(std::move(k), std::move(v));
    }
    return finish_dict(std::move(d));
}

Value dict_of_distinct_keys(std::vector<std::pair<Value, Value>> items) {
    Dict d;
    d.items = std::move(items);
    return finish_dict(std::move(d));
}

Value callable(std::string name, std::function<Value(CallArgs&)> fn) {
    return Value{std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)})};
}

std::string type_name(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined: return "Undefined";
        case Kind::None: return "NoneType";
        case Kind::Bool: return "bool";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        case Kind::String: return "str";
        case Kind::List: return v.list().tuple ? "tuple" : "list";
        case Kind::Dict: return "dict";
        case Kind::Namespace: return "Namespace";
        case Kind::Callable: return "function";
    }
    return "?";
}

bool truthy(const Value& v) {
    switch (v.kind()) {
        case Kind::Undefined:
        case Kind::None: return false;
        case Kind::Bool: return v.as_bool();
        case Kind::Int: return v.as_int() != 0;
        case Kind::Float: return v.as_float() != 0;
        case Kind::String: return !v.str().empty();
        case Kind::List: return !v.list().items.empty();
        case Kind::Dict: return !v.dict().items.empty();
        case Kind::Namespace:
        case Kind::Callable: return true;
    }
    return false;
}

bool hashable(const Value& key) {
    if (key.is(Kind::List))
        return key.list().tuple && std::all_of(key.list().items.begin(), key.list().items.end(),
                                               [](const Value& item) { return hashable(item); });
    return !key.is(Kind::Dict) && !key.is(Kind::Namespace);
}

void require_hashable(const Value& key) {
    if (!hashable(key)) throw Failure("unhashable type: '" + type_name(key) + "'");
}

// ---- str() and repr() ------------------------------------------------------------------------------

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    // The shortest digits that read back as d, laid out as Python's repr does: positional notation for
    // exponents in [-4, 16), scientific (with a two-digit exponent at least) elsewhere.
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    const std::string_view sci(buf, static_cast<std::size_t>(res.ptr - buf));
    const std::size_t e_at = sci.find('e');
    std::string_view mantissa = sci.substr(0, e_at);
    int exponent = 0;
    std::from_chars(sci.data() + e_at + (sci[e_at + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exponent);
    std::string out;
    if (!mantissa.empty() && mantissa[0] == '-') {
        out += '-';
        mantissa.remove_prefix(1);
    }
    std::string digits;
    for (char c : mantissa)
        if (c != '.') digits += c;
    if (exponent >= -4 && exponent < 16) {
        const int point = exponent + 1;  // digits before the decimal point
        const int n = static_cast<int>(digits.size());
        if (point <= 0)
            out += "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
        else if (point >= n)
            out += digits + std::string(static_cast<std::size_t>(point - n), '0') + ".0";
        else
            out += digits.substr(0, static_cast<std::size_t>(point)) + "." + digits.substr(static_cast<std::size_t>(point));
        return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exponent < 0 ? "e-" : "e+";
    const int mag = std::abs(exponent);
    if (mag < 10) out += '0';
    out += std::to_string(mag);
    return out;
}

namespace {

// Code points str.isprintable() rejects, as far as repr() of chat data is likely to meet them.
bool printable(char32_t c) {
    if (c < 0x20 || (c >= 0x7f && c <= 0xa0) || c == 0xad) return false;
    if (c == 0x1680 || c == 0x180e || (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f)) return false;
    if ((c >= 0x205f && c <= 0x206f) || c == 0x3000 || c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb)) return false;
    if ((c >= 0xd800 && c <= 0xdfff) || (c >= 0xe000 && c <= 0xf8ff)) return false;
    return true;
}

void append_hex(std::string& out, char32_t c, int digits) {
    static constexpr char kHex[] = "0123456789abcdef";
    for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += kHex[(c >> shift) & 0xf];
}

void append_string_repr(std::string& out, const std::string& s) {
    const bool has_single = s.find('\'') != std::string::npos;
    const bool has_double = s.find('"') != std::string::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    out += quote;
    for (char32_t c : py::decode(s)) {
        if (c == static_cast<char32_t>(quote) || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (!printable(c)) {
            if (c < 0x100) {
                out += "\\x";
                append_hex(out, c, 2);
            } else if (c < 0x10000) {
                out += "\\u";
                append_hex(out, c, 4);
            } else {
                out += "\\U";
                append_hex(out, c, 8);
            }
        } else {
            out += py::encode(std::u32string_view(&c, 1));
        }
    }
    out += quote;
}

struct Printer {
    std::string& out;
    int depth = 0;

    void check() const {
        if (out.size() > kMaxBytes) throw Failure("text longer than " + std::to_string(kMaxBytes >> 20) + " MiB");
        if (depth > 2 * kMaxNesting) throw Failure("a value nested too deeply to print");
    }

    void write(const Value& v, bool quoted) {
        switch (v.kind()) {
            case Kind::Undefined:
                if (quoted) out += "Undefined";
                break;
            case Kind::None: out += "None"; break;
            case Kind::Bool: out += v.as_bool() ? "True" : "False"; break;
            case Kind::Int: out += std::to_string(v.as_int()); break;
            case Kind::Float: out += float_repr(v.as_float()); break;
            case Kind::String:
                if (quoted)
                    append_string_repr(out, v.str());
                else
                    out += v.str();
                break;
            case Kind::List: {
                const List& l = v.list();
                ++depth;
                out += l.tuple ? '(' : '[';
                bool first = true;
                for (const Value& item : l.items) {
                    if (!first) out += ", ";
                    first = false;
                    write(item, true);
                    check();
                }
                if (l.tuple && l.items.size() == 1) out += ',';
                out += l.tuple ? ')' : ']';
                --depth;
                break;
            }
            case Kind::Dict: write_pairs(v.dict().items); break;
            case Kind::Namespace: {
                // Jinja prints a namespace as <Namespace {'attr': value}>.
                out += "<Namespace ";
                std::vector<std::pair<Value, Value>> pairs;
                for (const auto& [k, val] : v.ns().attrs) pairs.emplace_back(Value{k}, val);
                write_pairs(pairs);
                out += '>';
                break;
            }
            case Kind::Callable: out += "<function " + v.callable().name + ">"; break;
        }
        check();
    }

    void write_pairs(const std::vector<std::pair<Value, Value>>& pairs) {
        ++depth;
        check();
        out += '{';
        bool first = true;
        for (const auto& [k, val] : pairs) {
            if (!first) out += ", ";
            first = false;
            write(k, true);
            out += ": ";
            write(val, true);
        }
        out += '}';
        --depth;
    }
};

}  // namespace

void append_str(std::string& out, const Value& v) { Printer{out}.write(v, false); }

std::string to_str(const Value& v) {
    if (v.is(Kind::String)) return v.str();
    std::string out;
    append_str(out, v);
    return out;
}

std::string repr(const Value& v) {
    std::string out;
    Printer{out}.write(v, true);
    return out;
}

// ---- comparisons ------------------------------------------------------------------------------------

namespace {

double numeric(const Value& v) {
    if (v.is(Kind::Bool)) return v.as_bool() ? 1 : 0;
    if (v.is(Kind::Int)) return static_cast<double>(v.as_int());
    return v.as_float();
}

std::int64_t integral(const Value& v) { return v.is(Kind::Bool) ? (v.as_bool() ? 1 : 0) : v.as_int(); }

// Python compares int and float exactly; a double holds every int only up to 2^53.
int compare_numbers(const Value& a, const Value& b) {
    if (!a.is(Kind::Float) && !b.is(Kind::Float)) {
        const std::int64_t x = integral(a), y = integral(b);
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    const double x = numeric(a), y = numeric(b);
    if (a.is(Kind::Float) != b.is(Kind::Float)) {
        const double f = a.is(Kind::Float) ? x : y;
        const std::int64_t i = integral(a.is(Kind::Float) ? b : a);
        if (std::isfinite(f) && std::floor(f) == f && std::fabs(f) < 9.2e18) {
            const auto fi = static_cast<std::int64_t>(f);
            const int c = i < fi ? -1 : (i > fi ? 1 : 0);
            return a.is(Kind::Float) ? -c : c;
        }
    }
    if (x < y) return -1;
    if (x > y) return 1;
    return x == y ? 0 : 2;  // 2: unordered (NaN)
}

}  // namespace

bool equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) return compare_numbers(a, b) == 0;
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Kind::Undefined:
        case Kind::None: return true;
        case Kind::String: return a.str() == b.str();
        case Kind::List: {
            if (a.list().tuple != b.list().tuple) return false;
            const auto &x = a.list().items, &y = b.list().items;
            if (x.size() != y.size()) return false;
            for (std::size_t i = 0; i < x.size(); ++i)
                if (!equal(x[i], y[i])) return false;
            return true;
        }
        case Kind::Dict: {
            const Dict &x = a.dict(), &y = b.dict();
            if (x.items.size() != y.items.size()) return false;
            for (const auto& [k, v] : x.items) {
                const Value* other = y.find(k);
                if (!other || !equal(v, *other)) return false;
            }
            return true;
        }
        case Kind::Namespace: return &a.ns() == &b.ns();
        case Kind::Callable: return &a.callable() == &b.callable();
        default: return false;
    }
}

bool less(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) return compare_numbers(a, b) == -1;
    if (a.is(Kind::String) && b.is(Kind::String)) return a.str() < b.str();  // UTF-8 byte order is code point order
    if (a.is(Kind::List) && b.is(Kind::List) && a.list().tuple == b.list().tuple) {
        const auto &x = a.list().items, &y = b.list().items;
        for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
            if (!equal(x[i], y[i])) return less(x[i], y[i]);
        return x.size() < y.size();
    }
    throw Failure("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

// ---- JSON -------------------------------------------------------------------------------------------

namespace {

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
    out += '"';
    for (char32_t c : py::decode(s)) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20 || (ensure_ascii && c >= 0x7f && c != 0x7f)) {
                    if (c >= 0x10000) {  // a surrogate pair, as Python writes it
                        const char32_t v = c - 0x10000;
                        out += "\\u";
                        append_hex(out, 0xd800 + (v >> 10), 4);
                        out += "\\u";
                        append_hex(out, 0xdc00 + (v & 0x3ff), 4);
                    } else {
                        out += "\\u";
                        append_hex(out, c, 4);
                    }
                } else {
                    out += py::encode(std::u32string_view(&c, 1));
                }
        }
    }
    out += '"';
}

std::string json_float(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
    return float_repr(d);
}

struct JsonWriter {
    const JsonStyle& style;
    std::string& out;

    [[noreturn]] static void unserializable(const Value& v) {
        throw Failure("Object of type " + type_name(v) + " is not JSON serializable");
    }

    void newline(int level) {
        if (!style.indent) return;
        out += '\n';
        for (int i = 0; i < level; ++i) out += *style.indent;
    }

    std::string key_text(const Value& k) {
        switch (k.kind()) {
            case Kind::String: return k.str();
            case Kind::Int: return std::to_string(k.as_int());
            case Kind::Float: return json_float(k.as_float());
            case Kind::Bool: return k.as_bool() ? "true" : "false";
            case Kind::None: return "null";
            default: throw Failure("keys must be str, int, float, bool or None, not " + type_name(k));
        }
    }

    void write(const Value& v, int level) {
        if (out.size() > kMaxBytes) throw Failure("JSON longer than " + std::to_string(kMaxBytes >> 20) + " MiB");
        switch (v.kind()) {
            case Kind::None: out += "null"; break;
            case Kind::Bool: out += v.as_bool() ? "true" : "false"; break;
            case Kind::Int: out += std::to_string(v.as_int()); break;
            case Kind::Float: out += json_float(v.as_float()); break;
            case Kind::String: append_json_string(out, v.str(), style.ensure_ascii); break;
            case Kind::List: {
                const auto& items = v.list().items;
                if (items.empty()) {
                    out += "[]";
                    break;
                }
                out += '[';
                for (std::size_t i = 0; i < items.size(); ++i) {
                    if (i) out += style.item_separator;
                    newline(level + 1);
                    write(items[i], level + 1);
                }
                newline(level);
                out += ']';
                break;
            }
            case Kind::Dict: {
                std::vector<const std::pair<Value, Value>*> items;
                for (const auto& kv : v.dict().items) items.push_back(&kv);
                if (items.empty()) {
                    out += "{}";
                    break;
                }
                if (style.sort_keys)
                    std::stable_sort(items.begin(), items.end(),
                                     [](const auto* x, const auto* y) { return less(x->first, y->first); });
                out += '{';
                for (std::size_t i = 0; i < items.size(); ++i) {
                    if (i) out += style.item_separator;
                    newline(level + 1);
                    append_json_string(out, key_text(items[i]->first), style.ensure_ascii);
                    out += style.key_separator;
                    write(items[i]->second, level + 1);
                }
                newline(level);
                out += '}';
                break;
            }
            default: unserializable(v);
        }
    }
};

}  // namespace

std::string to_json(const Value& v, const JsonStyle& style) {
    std::string out;
    JsonWriter{style, out}.write(v, 0);
    if (out.size() > kMaxBytes) throw Failure("JSON longer than " + std::to_string(kMaxBytes >> 20) + " MiB");
    return out;
}

namespace {

Value from_json_at(const nlohmann::ordered_json& j, int depth) {
    if (depth > kMaxNesting)
        throw Failure("JSON input nested more than " + std::to_string(kMaxNesting) + " deep");
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null: return none();
        case nlohmann::ordered_json::value_t::boolean: return boolean(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return integer(j.get<std::int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const auto u = j.get<std::uint64_t>();
            if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                return integer(static_cast<std::int64_t>(u));
            return number(static_cast<double>(u));
        }
        case nlohmann::ordered_json::value_t::number_float: return number(j.get<double>());
        case nlohmann::ordered_json::value_t::string: return string(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            std::vector<Value> items;
            items.reserve(j.size());
            for (const auto& item : j) items.push_back(from_json_at(item, depth + 1));
            return list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            Dict d;
            d.items.reserve(j.size());
            for (const auto& [k, item] : j.items()) d.items.emplace_back(Value{k}, from_json_at(item, depth + 1));
            return dict_of_distinct_keys(std::move(d.items));
        }
        default: throw Failure("JSON input holds a value with no Python equivalent (binary data)");
    }
}

}  // namespace

Value from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

// ---- Python str semantics -----------------------------------------------------------------------------

namespace py {

namespace {

constexpr char32_t kEscapedByte = 0xdc00;  // + the byte: how an invalid byte decodes (surrogateescape)

bool continuation(unsigned char b, unsigned char lo = 0x80, unsigned char hi = 0xbf) { return b >= lo && b <= hi; }

char32_t decode_one(std::string_view s, std::size_t& i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    const std::size_t left = s.size() - i;
    auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    if (b0 >= 0xc2 && b0 <= 0xdf && left >= 2 && continuation(at(1))) {
        const char32_t c = (char32_t(b0 & 0x1f) << 6) | (at(1) & 0x3f);
        i += 2;
        return c;
    }
    if (b0 >= 0xe0 && b0 <= 0xef && left >= 3) {
        const unsigned char lo = b0 == 0xe0 ? 0xa0 : 0x80, hi = b0 == 0xed ? 0x9f : 0xbf;
        if (continuation(at(1), lo, hi) && continuation(at(2))) {
            const char32_t c = (char32_t(b0 & 0x0f) << 12) | (char32_t(at(1) & 0x3f) << 6) | (at(2) & 0x3f);
            i += 3;
            return c;
        }
    }
    if (b0 >= 0xf0 && b0 <= 0xf4 && left >= 4) {
        const unsigned char lo = b0 == 0xf0 ? 0x90 : 0x80, hi = b0 == 0xf4 ? 0x8f : 0xbf;
        if (continuation(at(1), lo, hi) && continuation(at(2)) && continuation(at(3))) {
            const char32_t c = (char32_t(b0 & 0x07) << 18) | (char32_t(at(1) & 0x3f) << 12) |
                               (char32_t(at(2) & 0x3f) << 6) | (at(3) & 0x3f);
            i += 4;
            return c;
        }
    }
    ++i;
    return kEscapedByte + b0;
}

void encode_one(std::string& out, char32_t c) {
    if (c >= kEscapedByte + 0x80 && c <= kEscapedByte + 0xff) {
        out += static_cast<char>(c - kEscapedByte);
        return;
    }
    if ((c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff) c = 0xfffd;
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xc0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xe0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (c & 0x3f));
    }
}

// Simple case pairs: Latin (ASCII, Latin-1, Latin Extended-A), Greek, Cyrillic and fullwidth Latin.
// Scripts beyond these keep their case; that is a deliberate bound on the table, not Python's full one.
char32_t upper_of(char32_t c) {
    if ((c >= 'a' && c <= 'z') || (c >= 0xe0 && c <= 0xfe && c != 0xf7)) return c - 32;
    if (c == 0xff) return 0x178;
    if (c == 0xb5) return 0x39c;
    if (c == 0x131) return 'I';
    if (c == 0x17f) return 'S';
    if ((c >= 0x100 && c <= 0x12f) || (c >= 0x132 && c <= 0x137) || (c >= 0x14a && c <= 0x177))
        return (c & 1) ? c - 1 : c;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) return (c & 1) ? c : c - 1;
    if (c >= 0x3b1 && c <= 0x3c9) return c == 0x3c2 ? 0x3a3 : c - 32;
    if (c == 0x3ac) return 0x386;
    if (c >= 0x3ad && c <= 0x3af) return c - 37;
    if (c == 0x3cc) return 0x38c;
    if (c == 0x3cd || c == 0x3ce) return c - 63;
    if (c >= 0x430 && c <= 0x44f) return c - 32;
    if (c >= 0x450 && c <= 0x45f) return c - 80;
    if (c >= 0xff41 && c <= 0xff5a) return c - 32;
    return c;
}

char32_t lower_of(char32_t c) {
    if ((c >= 'A' && c <= 'Z') || (c >= 0xc0 && c <= 0xde && c != 0xd7)) return c + 32;
    if (c == 0x178) return 0xff;
    if ((c >= 0x100 && c <= 0x12f) || (c >= 0x132 && c <= 0x137) || (c >= 0x14a && c <= 0x177))
        return (c & 1) ? c : c + 1;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e)) return (c & 1) ? c + 1 : c;
    if (c >= 0x391 && c <= 0x3a9 && c != 0x3a2) return c + 32;
    if (c == 0x386) return 0x3ac;
    if (c >= 0x388 && c <= 0x38a) return c + 37;
    if (c == 0x38c) return 0x3cc;
    if (c == 0x38e || c == 0x38f) return c + 63;
    if (c >= 0x410 && c <= 0x42f) return c + 32;
    if (c >= 0x400 && c <= 0x40f) return c + 80;
    if (c >= 0xff21 && c <= 0xff3a) return c + 32;
    return c;
}

bool cased(char32_t c) { return upper_of(c) != c || lower_of(c) != c || c == 0xdf || c == 0x138 || c == 0x149; }

void append_upper(std::string& out, char32_t c) {
    if (c == 0xdf) {
        out += "SS";
        return;
    }
    encode_one(out, upper_of(c));
}

// Title case for str.title() and str.capitalize(): ß becomes "Ss".
void append_title(std::string& out, char32_t c) {
    if (c == 0xdf) {
        out += "Ss";
        return;
    }
    encode_one(out, upper_of(c));
}

std::u32string chars_of(const std::optional<std::string>& chars) { return chars ? decode(*chars) : std::u32string(); }

}  // namespace

std::u32string decode(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) out += decode_one(s, i);
    return out;
}

std::string encode(std::u32string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char32_t c : s) encode_one(out, c);
    return out;
}

std::size_t length(std::string_view s) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < s.size(); ++n) decode_one(s, i);
    return n;
}

bool is_space(char32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
    const std::u32string set = chars_of(chars);
    auto strippable = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
    const std::u32string text = decode(s);
    std::size_t begin = 0, end = text.size();
    if (left)
        while (begin < end && strippable(text[begin])) ++begin;
    if (right)
        while (end > begin && strippable(text[end - 1])) --end;
    return encode(std::u32string_view(text).substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, std::int64_t maxsplit,
                               bool from_right) {
    std::vector<std::string> parts;
    if (sep) {
        if (sep->empty()) throw Failure("empty separator");
        // Byte search is exact on UTF-8: a code point's bytes never match inside another's.
        if (!from_right) {
            std::size_t start = 0;
            for (std::size_t at; (maxsplit < 0 || static_cast<std::int64_t>(parts.size()) < maxsplit) &&
                                 (at = s.find(*sep, start)) != std::string_view::npos;) {
                parts.emplace_back(s.substr(start, at - start));
                start = at + sep->size();
            }
            parts.emplace_back(s.substr(start));
        } else {
            std::size_t end = s.size();
            for (std::size_t at; (maxsplit < 0 || static_cast<std::int64_t>(parts.size()) < maxsplit) &&
                                 end >= sep->size() &&
                                 (at = s.rfind(*sep, end - sep->size())) != std::string_view::npos;) {
                parts.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
                end = at;
            }
            parts.emplace_back(s.substr(0, end));
            std::reverse(parts.begin(), parts.end());
        }
        return parts;
    }
    // Splitting from the right is splitting the reversed text from the left.
    std::u32string text = decode(s);
    if (from_right) std::reverse(text.begin(), text.end());
    std::size_t i = 0;
    const std::size_t n = text.size();
    while (true) {
        while (i < n && is_space(text[i])) ++i;
        if (i == n) break;
        if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) {
            // The rest stays whole, its far end untrimmed, as Python leaves it.
            std::u32string rest = text.substr(i);
            if (from_right) std::reverse(rest.begin(), rest.end());
            parts.push_back(encode(rest));
            break;
        }
        const std::size_t start = i;
        while (i < n && !is_space(text[i])) ++i;
        std::u32string word = text.substr(start, i - start);
        if (from_right) std::reverse(word.begin(), word.end());
        parts.push_back(encode(word));
    }
    if (from_right) std::reverse(parts.begin(), parts.end());
    return parts;
}

std::string replace(std::string_view s, std::string_view old, std::string_view replacement, std::int64_t count) {
    // Size the result before building it, so a huge replacement fails instead of exhausting memory.
    std::size_t hits = 0;
    if (old.empty()) {
        hits = length(s) + 1;
    } else {
        for (std::size_t at = s.find(old); at != std::string_view::npos; at = s.find(old, at + old.size())) ++hits;
    }
    if (count >= 0) hits = std::min(hits, static_cast<std::size_t>(count));
    const long double size = static_cast<long double>(s.size()) +
                             static_cast<long double>(hits) *
                                 (static_cast<long double>(replacement.size()) - static_cast<long double>(old.size()));
    if (size > static_cast<long double>(kMaxBytes))
        throw Failure("a string longer than " + std::to_string(kMaxBytes >> 20) + " MiB");
    std::string out;
    out.reserve(static_cast<std::size_t>(size));
    if (old.empty()) {
        std::size_t i = 0, done = 0;
        while (true) {
            if (done < hits) {
                out += replacement;
                ++done;
            }
            if (i >= s.size()) break;
            const std::size_t start = i;
            decode_one(s, i);
            out += s.substr(start, i - start);
        }
        return out;
    }
    std::size_t start = 0, done = 0;
    for (std::size_t at; done < hits && (at = s.find(old, start)) != std::string_view::npos; ++done) {
        out += s.substr(start, at - start);
        out += replacement;
        start = at + old.size();
    }
    out += s.substr(start);
    return out;
}

std::string upper(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size();) append_upper(out, decode_one(s, i));
    return out;
}

std::string lower(std::string_view s) {
    const std::u32string text = decode(s);
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char32_t c = text[i];
        // Python lowers a capital sigma that ends a word to the final form.
        if (c == 0x3a3 && i > 0 && cased(text[i - 1]) && (i + 1 == text.size() || !cased(text[i + 1])))
            c = 0x3c2;
        else
            c = lower_of(c);
        encode_one(out, c);
    }
    return out;
}

std::string title(std::string_view s) {
    std::string out;
    bool previous_cased = false;
    for (std::size_t i = 0; i < s.size();) {
        const char32_t c = decode_one(s, i);
        if (previous_cased)
            encode_one(out, lower_of(c));
        else
            append_title(out, c);
        previous_cased = cased(c);
    }
    return out;
}

std::string capitalize(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
        const bool first = i == 0;
        const char32_t c = decode_one(s, i);
        if (first)
            append_title(out, c);
        else
            encode_one(out, lower_of(c));
    }
    return out;
}

std::vector<std::int64_t> slice_indices(std::int64_t size, std::optional<std::int64_t> start,
                                        std::optional<std::int64_t> stop, std::optional<std::int64_t> step) {
    const std::int64_t st = step.value_or(1);
    if (st == 0) throw Failure("slice step cannot be zero");
    const std::int64_t lower = st > 0 ? 0 : -1, upper = st > 0 ? size : size - 1;
    auto clamp = [&](std::optional<std::int64_t> index, std::int64_t fallback) {
        if (!index) return fallback;
        std::int64_t i = *index;
        if (i < 0) i = i < -size ? lower : std::max(i + size, lower);
        else i = std::min(i, upper);
        return i;
    };
    const std::int64_t from = clamp(start, st > 0 ? 0 : size - 1);
    const std::int64_t to = clamp(stop, st > 0 ? size : -1);
    std::vector<std::int64_t> out;
    if (st > 0) {
        for (std::int64_t i = from; i < to; i += st) {
            out.push_back(i);
            if (to - i <= st) break;
        }
    } else {
        for (std::int64_t i = from; i > to; i += st) {
            out.push_back(i);
            if (i - to <= -st) break;
        }
    }
    return out;
}

namespace {

// Digits with single underscores between them, as Python's int() and float() accept.
bool strip_underscores(std::string_view digits, std::string& out) {
    if (digits.empty() || digits.front() == '_' || digits.back() == '_') return false;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (digits[i] == '_') {
            if (digits[i + 1] == '_') return false;
            continue;
        }
        out += digits[i];
    }
    return true;
}

std::string_view trim_space(std::string_view text) {
    std::size_t lead = 0;
    while (lead < text.size()) {
        std::size_t next = lead;
        if (!is_space(decode_one(text, next))) break;
        lead = next;
    }
    text.remove_prefix(lead);
    while (!text.empty()) {
        std::size_t start = text.size() - 1;
        while (start > 0 && text.size() - start < 4 && (static_cast<unsigned char>(text[start]) & 0xc0) == 0x80) --start;
        std::size_t next = start;
        if (!is_space(decode_one(text, next)) || next != text.size()) break;
        text.remove_suffix(text.size() - start);
    }
    return text;
}

}  // namespace

std::optional<std::int64_t> parse_int(std::string_view text) {
    text = trim_space(text);
    bool negative = false;
    if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
        negative = text[0] == '-';
        text.remove_prefix(1);
    }
    std::string digits;
    if (!strip_underscores(text, digits)) return std::nullopt;
    for (char c : digits)
        if (c < '0' || c > '9') return std::nullopt;
    if (digits.size() > 1 && digits[0] == '0' && digits.find_first_not_of('0') != std::string::npos) return std::nullopt;
    std::uint64_t magnitude = 0;
    const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
    if (res.ec != std::errc() || magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1)
        return std::nullopt;
    if (negative) return static_cast<std::int64_t>(0 - magnitude);
    if (magnitude > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(magnitude);
}

std::optional<double> parse_float(std::string_view text) {
    text = trim_space(text);
    bool negative = false;
    if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
        negative = text[0] == '-';
        text.remove_prefix(1);
    }
    std::string word;
    for (char c : text) word += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    double value = 0;
    if (word == "inf" || word == "infinity") {
        value = std::numeric_limits<double>::infinity();
    } else if (word == "nan") {
        value = std::numeric_limits<double>::quiet_NaN();
    } else {
        // [digits][.digits][e[sign]digits], each digit run with optional single underscores.
        std::string clean;
        std::size_t i = 0;
        auto run = [&](std::string& into) {
            const std::size_t start = i;
            while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '_')) ++i;
            if (i == start) return true;
            return strip_underscores(text.substr(start, i - start), into);
        };
        std::string mantissa;
        if (!run(mantissa)) return std::nullopt;
        bool any = !mantissa.empty();
        if (i < text.size() && text[i] == '.') {
            ++i;
            mantissa += '.';
            const std::size_t before = mantissa.size();
            if (!run(mantissa)) return std::nullopt;
            any = any || mantissa.size() > before;
        }
        if (!any) return std::nullopt;
        clean = mantissa;
        if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
            ++i;
            clean += 'e';
            if (i < text.size() && (text[i] == '+' || text[i] == '-')) clean += text[i++];
            std::string exponent;
            if (!run(exponent) || exponent.empty()) return std::nullopt;
            clean += exponent;
        }
        if (i != text.size()) return std::nullopt;
        const auto res = std::from_chars(clean.data(), clean.data() + clean.size(), value);
        if (res.ec == std::errc::result_out_of_range) {
            // from_chars reports overflow and underflow alike; Python gives inf or 0.
            value = clean.find("e-") != std::string::npos ? 0.0 : std::numeric_limits<double>::infinity();
        } else if (res.ec != std::errc() || res.ptr != clean.data() + clean.size()) {
            return std::nullopt;
        }
    }
    return negative ? -value : value;
}

}  // namespace py

}  // namespace rill::jinja
