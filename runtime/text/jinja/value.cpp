#include "runtime/text/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "runtime/text/jinja/py_str.h"

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

}  // namespace rill::jinja
