// Values of rill's Jinja subset, with the Python semantics Hugging Face's Jinja2 sandbox gives them:
// truthiness, str() and repr(), ==, <, json.dumps, and the str methods templates call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace rill::jinja {

// Bounds that keep a hostile template or input from exhausting memory or the stack.
inline constexpr std::size_t kMaxBytes = std::size_t{64} << 20;  // one string, list or dict; the output
inline constexpr int kMaxNesting = 128;                          // lists and dicts inside each other

// A runtime failure that does not know where in the template it happened; the evaluator adds that.
struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Value;
struct List;
struct Dict;
struct Namespace;
struct Callable;

// Jinja's Undefined: a missing variable, attribute or item. Falsy, renders as "", iterates as empty;
// most other uses are errors, which quote the hint.
struct Undefined {
    std::string hint;  // e.g. "'tools' is undefined"
};
struct None {};

// Lists and dicts are immutable once built (the sandbox forbids mutating them), so copies share them.
// Namespaces are the one mutable object; the renderer owns them and values only point at them, so a
// namespace that contains itself is no leak.
using Storage = std::variant<Undefined, None, bool, std::int64_t, double, std::string, std::shared_ptr<const List>,
                             std::shared_ptr<const Dict>, Namespace*, std::shared_ptr<const Callable>>;

enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };  // Storage's order

struct Value {
    Storage v;

    Kind kind() const { return static_cast<Kind>(v.index()); }
    bool is(Kind k) const { return kind() == k; }
    bool is_undefined() const { return is(Kind::Undefined); }
    bool is_number() const { return is(Kind::Int) || is(Kind::Float) || is(Kind::Bool); }  // bool is an int in Python

    bool as_bool() const { return std::get<bool>(v); }
    std::int64_t as_int() const { return std::get<std::int64_t>(v); }
    double as_float() const { return std::get<double>(v); }
    const std::string& str() const { return std::get<std::string>(v); }
    const List& list() const { return *std::get<std::shared_ptr<const List>>(v); }
    const Dict& dict() const { return *std::get<std::shared_ptr<const Dict>>(v); }
    Namespace& ns() const { return *std::get<Namespace*>(v); }
    const Callable& callable() const { return *std::get<std::shared_ptr<const Callable>>(v); }
    const std::string& undefined_hint() const { return std::get<Undefined>(v).hint; }
};

struct List {
    std::vector<Value> items;
    bool tuple = false;      // a Python tuple: prints as (a, b) and never equals a list
    int depth = 1;           // 1 + the deepest list or dict inside
    std::size_t bytes = 0;   // rough size, summed over the contents
};

struct Dict {
    std::vector<std::pair<Value, Value>> items;  // insertion order, keys unique
    int depth = 1;
    std::size_t bytes = 0;

    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
};

struct Namespace {
    std::vector<std::pair<std::string, Value>> attrs;

    const Value* find(std::string_view name) const;
    void set(const std::string& name, Value value);
};

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> named;
};

struct Callable {
    std::string name;
    std::function<Value(CallArgs&)> fn;
};

Value undefined(std::string hint);
Value none();
Value boolean(bool b);
Value integer(std::int64_t i);
Value number(double d);
Value string(std::string s);
// Throw Failure when the result would be nested or sized beyond the limits above.
Value list(std::vector<Value> items, bool tuple = false);
Value dict(std::vector<std::pair<Value, Value>> items);  // a repeated key keeps its first place and last value
Value dict_of_distinct_keys(std::vector<std::pair<Value, Value>> items);  // the caller knows no key repeats
Value callable(std::string name, std::function<Value(CallArgs&)> fn);

// Python's type(x).__name__, for error messages.
std::string type_name(const Value& v);
bool truthy(const Value& v);
// Dict keys must be hashable: not lists, dicts or namespaces (tuples of hashable items are fine).
bool hashable(const Value& key);
void require_hashable(const Value& key);

// str(v) and repr(v). Undefined prints as "".
std::string to_str(const Value& v);
void append_str(std::string& out, const Value& v);
std::string repr(const Value& v);
std::string float_repr(double d);

// ==, and < (which throws Failure for types Python cannot order).
bool equal(const Value& a, const Value& b);
bool less(const Value& a, const Value& b);

// Python's json.dumps(v, ensure_ascii=…, indent=…, separators=…, sort_keys=…).
struct JsonStyle {
    bool ensure_ascii = false;
    std::optional<std::string> indent;  // the text of one level; none: everything on one line
    std::string item_separator = ", ";
    std::string key_separator = ": ";
    bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonStyle& style);

Value from_json(const nlohmann::ordered_json& j);

}  // namespace rill::jinja
