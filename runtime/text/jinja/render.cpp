#include "runtime/text/jinja/render.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "runtime/base/error.h"
#include "runtime/text/jinja/lexer.h"

namespace rill::jinja {

namespace {

// Bounds on one render, so a runaway template fails instead of hanging or overflowing the stack.
constexpr int kMaxDepth = 500;                  // nested expressions, blocks and macro calls, together
constexpr std::int64_t kMaxSteps = 1'000'000;   // loop iterations, macro calls and filter item visits
constexpr std::size_t kMaxNamespaces = 100'000;
constexpr std::int64_t kMaxRange = 100'000;     // what Jinja's sandbox allows range() to produce

template <class... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

struct Scope {
    std::unordered_map<std::string, Value> vars;
    Scope* parent = nullptr;

    Value* find(const std::string& name) {
        for (Scope* s = this; s; s = s->parent) {
            const auto it = s->vars.find(name);
            if (it != s->vars.end()) return &it->second;
        }
        return nullptr;
    }
};

enum class Flow { Normal, Break, Continue };

struct Renderer {
    const Template& tpl;
    Scope* root = nullptr;
    std::deque<Namespace> namespaces;  // owned here so values can point at them, cycles included
    int depth = 0;
    std::int64_t steps = 0;
};

struct DepthGuard {
    Renderer& r;
    explicit DepthGuard(Renderer& renderer) : r(renderer) {
        if (++r.depth > kMaxDepth) {
            --r.depth;
            throw Failure("template nested too deeply (more than " + std::to_string(kMaxDepth) +
                          " levels of expressions, blocks and macro calls)");
        }
    }
    ~DepthGuard() { --r.depth; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
};

void step(Renderer& r, std::int64_t n = 1) {
    r.steps += n;
    if (r.steps > kMaxSteps)
        throw Failure("template ran too long (more than " + std::to_string(kMaxSteps) +
                      " loop iterations, macro calls and filter steps)");
}

// `adding`: bytes about to be appended, so a huge value is refused before it is copied.
void check_output(const std::string& out, std::size_t adding = 0) {
    if (out.size() + adding > kMaxBytes)
        throw Failure("output longer than " + std::to_string(kMaxBytes >> 20) + " MiB");
}

[[noreturn]] void fail_undefined(const Value& v) {
    throw Failure(v.undefined_hint().empty() ? std::string("undefined value") : v.undefined_hint());
}

// How Jinja names an object in "has no attribute" messages.
std::string object_name(const Value& v) { return v.is(Kind::None) ? "'None'" : "'" + type_name(v) + " object'"; }

Value no_attribute(const Value& obj, const std::string& name) {
    return undefined(object_name(obj) + " has no attribute '" + name + "'");
}

const std::shared_ptr<const List>& list_ptr(const Value& v) { return std::get<std::shared_ptr<const List>>(v.v); }

// What a for loop, list() or `in` sees when it iterates a value.
std::shared_ptr<const List> items_of(const Value& v) {
    switch (v.kind()) {
        case Kind::List: return list_ptr(v);
        case Kind::Undefined: return list_ptr(list({}));
        case Kind::Dict: {
            std::vector<Value> keys;
            for (const auto& [k, val] : v.dict().items) keys.push_back(k);
            return list_ptr(list(std::move(keys)));
        }
        case Kind::String: {
            std::vector<Value> chars;
            for (char32_t c : py::decode(v.str())) chars.push_back(string(py::encode(std::u32string_view(&c, 1))));
            return list_ptr(list(std::move(chars)));
        }
        default: throw Failure("'" + type_name(v) + "' object is not iterable");
    }
}

std::int64_t length_of(const Value& v) {
    switch (v.kind()) {
        case Kind::String: return static_cast<std::int64_t>(py::length(v.str()));
        case Kind::List: return static_cast<std::int64_t>(v.list().items.size());
        case Kind::Dict: return static_cast<std::int64_t>(v.dict().items.size());
        case Kind::Undefined: return 0;
        default: throw Failure("object of type '" + type_name(v) + "' has no len()");
    }
}

bool contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case Kind::String:
            if (!item.is(Kind::String))
                throw Failure("'in <string>' requires string as left operand, not " + type_name(item));
            return container.str().find(item.str()) != std::string::npos;
        case Kind::List:
            return std::any_of(container.list().items.begin(), container.list().items.end(),
                               [&](const Value& x) { return equal(x, item); });
        case Kind::Dict:
            require_hashable(item);
            return container.dict().find(item) != nullptr;
        case Kind::Undefined: return false;
        default: throw Failure("argument of type '" + type_name(container) + "' is not iterable");
    }
}

// Python's binding of a call's arguments to parameters; a parameter not given stays Undefined.
std::vector<Value> bind(const CallArgs& a, std::initializer_list<std::string_view> params, const std::string& what) {
    if (a.positional.size() > params.size())
        throw Failure(what + "() takes at most " + std::to_string(params.size()) + " argument(s) (" +
                      std::to_string(a.positional.size()) + " given)");
    std::vector<Value> out(params.size());
    std::copy(a.positional.begin(), a.positional.end(), out.begin());
    for (const auto& [name, value] : a.named) {
        const auto it = std::find(params.begin(), params.end(), name);
        if (it == params.end()) throw Failure(what + "() got an unexpected keyword argument '" + name + "'");
        const auto index = static_cast<std::size_t>(it - params.begin());
        if (index < a.positional.size()) throw Failure(what + "() got multiple values for argument '" + name + "'");
        out[index] = value;
    }
    return out;
}

bool given(const Value& v) { return !v.is_undefined(); }

std::int64_t int_arg(const Value& v, const std::string& what) {
    if (v.is(Kind::Int)) return v.as_int();
    if (v.is(Kind::Bool)) return v.as_bool() ? 1 : 0;
    throw Failure(what + " must be an integer, not " + type_name(v));
}

std::string str_arg(const Value& v, const std::string& what) {
    if (!v.is(Kind::String)) throw Failure(what + " must be a string, not " + type_name(v));
    return v.str();
}

std::optional<std::string> optional_str_arg(const Value& v, const std::string& what) {
    if (!given(v) || v.is(Kind::None)) return std::nullopt;
    return str_arg(v, what);
}

// ---- attribute and item access (Jinja's sandboxed getattr and getitem) ----------------------------------

bool is_str_method(std::string_view name) {
    static constexpr std::string_view kMethods[] = {"strip", "lstrip", "rstrip", "split", "rsplit",
                                                    "startswith", "endswith", "upper", "lower", "title",
                                                    "capitalize", "replace", "find", "join"};
    return std::find(std::begin(kMethods), std::end(kMethods), name) != std::end(kMethods);
}

bool is_dict_method(std::string_view name) {
    return name == "items" || name == "keys" || name == "values" || name == "get";
}

// Dict methods that would mutate, or that rill leaves out; Jinja's sandbox returns these as undefined
// instead of looking the name up as a key.
bool is_blocked_dict_method(std::string_view name) {
    return name == "pop" || name == "popitem" || name == "setdefault" || name == "update" || name == "clear" ||
           name == "copy" || name == "fromkeys";
}

Value call_method(const Value& obj, const std::string& name, CallArgs& a);

Value get_attr(const Value& obj, const std::string& name) {
    switch (obj.kind()) {
        case Kind::Undefined: fail_undefined(obj);
        case Kind::Dict: {
            if (is_dict_method(name))
                return callable("dict." + name, [obj, name](CallArgs& a) { return call_method(obj, name, a); });
            if (is_blocked_dict_method(name))
                return undefined("access to attribute '" + name + "' of 'dict' object is not supported");
            if (const Value* v = obj.dict().find(std::string_view(name))) return *v;
            return no_attribute(obj, name);
        }
        case Kind::Namespace:
            if (const Value* v = obj.ns().find(name)) return *v;
            return no_attribute(obj, name);
        case Kind::String:
            if (is_str_method(name))
                return callable("str." + name, [obj, name](CallArgs& a) { return call_method(obj, name, a); });
            return no_attribute(obj, name);
        default: return no_attribute(obj, name);
    }
}

Value get_item(const Value& obj, const Value& key) {
    if (obj.is_undefined()) fail_undefined(obj);
    const bool int_key = key.is(Kind::Int) || key.is(Kind::Bool);
    if (int_key && (obj.is(Kind::List) || obj.is(Kind::String))) {
        std::int64_t i = int_arg(key, "an index");
        if (obj.is(Kind::List)) {
            const auto& items = obj.list().items;
            const auto n = static_cast<std::int64_t>(items.size());
            if (i < 0) i += n;
            if (i >= 0 && i < n) return items[static_cast<std::size_t>(i)];
        } else {
            const std::u32string text = py::decode(obj.str());
            const auto n = static_cast<std::int64_t>(text.size());
            if (i < 0) i += n;
            if (i >= 0 && i < n) return string(py::encode(std::u32string_view(text).substr(static_cast<std::size_t>(i), 1)));
        }
        return undefined(type_name(obj) + " object has no element " + repr(key));
    }
    if (obj.is(Kind::Dict) && hashable(key))
        if (const Value* v = obj.dict().find(key)) return *v;
    if (key.is(Kind::String)) return get_attr(obj, key.str());
    return undefined(type_name(obj) + " object has no element " + repr(key));
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& stride) {
    if (obj.is_undefined()) fail_undefined(obj);
    auto index = [](const Value& v) -> std::optional<std::int64_t> {
        if (!given(v) || v.is(Kind::None)) return std::nullopt;
        if (v.is(Kind::Int) || v.is(Kind::Bool)) return int_arg(v, "a slice index");
        throw Failure("slice indices must be integers or None");
    };
    if (obj.is(Kind::List)) {
        const auto& items = obj.list().items;
        std::vector<Value> out;
        const auto n = static_cast<std::int64_t>(items.size());
        for (std::int64_t i : py::slice_indices(n, index(start), index(stop), index(stride)))
            out.push_back(items[static_cast<std::size_t>(i)]);
        return list(std::move(out), obj.list().tuple);
    }
    if (obj.is(Kind::String)) {
        const std::u32string text = py::decode(obj.str());
        std::u32string out;
        const auto n = static_cast<std::int64_t>(text.size());
        for (std::int64_t i : py::slice_indices(n, index(start), index(stop), index(stride)))
            out += text[static_cast<std::size_t>(i)];
        return string(py::encode(out));
    }
    // Jinja slices with Python's own subscript, not its forgiving getitem, so anything else is an error.
    if (obj.is(Kind::Dict)) throw Failure("unhashable type: 'slice'");
    throw Failure("'" + type_name(obj) + "' object is not subscriptable");
}

// Follows "a.b.0" through items, as the attribute argument of selectattr, map, sort and join does.
Value attr_path(const Value& item, const std::string& path) {
    Value v = item;
    std::size_t start = 0;
    while (true) {
        const std::size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        const auto number = digits ? py::parse_int(part) : std::nullopt;
        v = number ? get_item(v, integer(*number)) : get_item(v, string(part));
        if (dot == std::string::npos) return v;
        start = dot + 1;
    }
}

// ---- str and dict methods ----------------------------------------------------------------------------

Value call_method(const Value& obj, const std::string& name, CallArgs& a) {
    if (obj.is(Kind::Dict)) {
        const Dict& d = obj.dict();
        if (name == "get") {
            const auto args = bind(a, {"key", "default"}, "get");
            require_hashable(args[0]);
            if (const Value* v = d.find(args[0])) return *v;
            return given(args[1]) ? args[1] : none();
        }
        bind(a, {}, name);
        std::vector<Value> out;
        for (const auto& [k, v] : d.items) {
            if (name == "items") out.push_back(list({k, v}, true));
            else out.push_back(name == "keys" ? k : v);
        }
        return list(std::move(out));
    }
    const std::string& s = obj.str();
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const auto args = bind(a, {"chars"}, name);
        return string(py::strip(s, optional_str_arg(args[0], name + "() argument"), name != "rstrip", name != "lstrip"));
    }
    if (name == "split" || name == "rsplit") {
        const auto args = bind(a, {"sep", "maxsplit"}, name);
        const std::int64_t maxsplit = given(args[1]) ? int_arg(args[1], "maxsplit") : -1;
        std::vector<Value> parts;
        for (std::string& part : py::split(s, optional_str_arg(args[0], "the separator"), maxsplit, name == "rsplit"))
            parts.push_back(string(std::move(part)));
        return list(std::move(parts));
    }
    if (name == "startswith" || name == "endswith") {
        const auto args = bind(a, {"prefix"}, name);
        std::vector<Value> options = args[0].is(Kind::List) ? args[0].list().items : std::vector<Value>{args[0]};
        for (const Value& o : options) {
            const std::string affix = str_arg(o, name + "() argument");
            if (affix.size() > s.size()) continue;
            if (name == "startswith" ? s.compare(0, affix.size(), affix) == 0
                                     : s.compare(s.size() - affix.size(), affix.size(), affix) == 0)
                return boolean(true);
        }
        return boolean(false);
    }
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
        bind(a, {}, name);
        if (name == "upper") return string(py::upper(s));
        if (name == "lower") return string(py::lower(s));
        if (name == "title") return string(py::title(s));
        return string(py::capitalize(s));
    }
    if (name == "replace") {
        const auto args = bind(a, {"old", "new", "count"}, name);
        const std::int64_t count = given(args[2]) ? int_arg(args[2], "count") : -1;
        return string(py::replace(s, str_arg(args[0], "replace() argument 1"), str_arg(args[1], "replace() argument 2"), count));
    }
    if (name == "find") {
        const auto args = bind(a, {"sub"}, name);
        const std::size_t at = s.find(str_arg(args[0], "find() argument"));
        return integer(at == std::string::npos ? -1 : static_cast<std::int64_t>(py::length(s.substr(0, at))));
    }
    // join
    const auto args = bind(a, {"iterable"}, name);
    std::string out;
    bool first = true;
    const auto iterated = items_of(args[0]);  // keeps a freshly built list alive through the loop
    for (const Value& item : iterated->items) {
        if (!first) out += s;
        first = false;
        out += str_arg(item, "sequence item");
        check_output(out);
    }
    return string(std::move(out));
}

// ---- operators ---------------------------------------------------------------------------------------

double as_double(const Value& v) {
    if (v.is(Kind::Float)) return v.as_float();
    return static_cast<double>(int_arg(v, "a number"));
}

[[noreturn]] void bad_operands(std::string_view op, const Value& a, const Value& b) {
    throw Failure("unsupported operand type(s) for " + std::string(op) + ": '" + type_name(a) + "' and '" +
                  type_name(b) + "'");
}

Value repeat(const Value& seq, std::int64_t times) {
    if (times <= 0) return seq.is(Kind::String) ? string("") : list({}, seq.list().tuple);
    if (seq.is(Kind::String)) {
        if (!seq.str().empty() && static_cast<std::uint64_t>(times) > kMaxBytes / seq.str().size())
            throw Failure("a string longer than " + std::to_string(kMaxBytes >> 20) + " MiB");
        std::string out;
        out.reserve(seq.str().size() * static_cast<std::size_t>(times));
        for (std::int64_t i = 0; i < times; ++i) out += seq.str();
        return string(std::move(out));
    }
    const auto& items = seq.list().items;
    if (!items.empty() && static_cast<std::uint64_t>(times) > kMaxBytes / (16 * items.size()))
        throw Failure("a list larger than " + std::to_string(kMaxBytes >> 20) + " MiB");
    std::vector<Value> out;
    for (std::int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
    return list(std::move(out), seq.list().tuple);
}

// Applies a checked integer operation such as __builtin_add_overflow.
template <typename Op>
Value checked(Op op, std::int64_t x, std::int64_t y) {
    std::int64_t z = 0;
    if (op(x, y, &z)) throw Failure("integer overflow");
    return integer(z);
}

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
    if (op == BinaryOp::Concat) return string(to_str(a) + to_str(b));
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    const bool numbers = a.is_number() && b.is_number();
    const bool ints = numbers && !a.is(Kind::Float) && !b.is(Kind::Float);
    std::int64_t x = 0, y = 0;
    if (ints) {
        x = int_arg(a, "");
        y = int_arg(b, "");
    }
    switch (op) {
        case BinaryOp::Add:
            if (ints) return checked([](auto p, auto q, auto* o) { return __builtin_add_overflow(p, q, o); }, x, y);
            if (numbers) return number(as_double(a) + as_double(b));
            if (a.is(Kind::String) && b.is(Kind::String)) {
                if (a.str().size() + b.str().size() > kMaxBytes)
                    throw Failure("a string longer than " + std::to_string(kMaxBytes >> 20) + " MiB");
                return string(a.str() + b.str());
            }
            if (a.is(Kind::List) && b.is(Kind::List) && a.list().tuple == b.list().tuple) {
                std::vector<Value> out = a.list().items;
                out.insert(out.end(), b.list().items.begin(), b.list().items.end());
                return list(std::move(out), a.list().tuple);
            }
            bad_operands("+", a, b);
        case BinaryOp::Sub:
            if (ints) return checked([](auto p, auto q, auto* o) { return __builtin_sub_overflow(p, q, o); }, x, y);
            if (numbers) return number(as_double(a) - as_double(b));
            bad_operands("-", a, b);
        case BinaryOp::Mul:
            if (ints) return checked([](auto p, auto q, auto* o) { return __builtin_mul_overflow(p, q, o); }, x, y);
            if (numbers) return number(as_double(a) * as_double(b));
            if ((a.is(Kind::String) || a.is(Kind::List)) && (b.is(Kind::Int) || b.is(Kind::Bool)))
                return repeat(a, int_arg(b, ""));
            if ((b.is(Kind::String) || b.is(Kind::List)) && (a.is(Kind::Int) || a.is(Kind::Bool)))
                return repeat(b, int_arg(a, ""));
            bad_operands("*", a, b);
        case BinaryOp::Div:
            if (!numbers) bad_operands("/", a, b);
            if (as_double(b) == 0) throw Failure("division by zero");
            return number(as_double(a) / as_double(b));
        case BinaryOp::FloorDiv:
        case BinaryOp::Mod: {
            const bool floor_div = op == BinaryOp::FloorDiv;
            if (a.is(Kind::String) && !floor_div) throw Failure("string formatting with % is not supported");
            if (!numbers) bad_operands(floor_div ? "//" : "%", a, b);
            if (ints) {
                if (y == 0) throw Failure("integer division or modulo by zero");
                if (x == std::numeric_limits<std::int64_t>::min() && y == -1) {
                    if (floor_div) throw Failure("integer overflow");
                    return integer(0);
                }
                std::int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) {  // Python rounds the quotient toward negative infinity
                    --q;
                    m += y;
                }
                return integer(floor_div ? q : m);
            }
            const double fx = as_double(a), fy = as_double(b);
            if (fy == 0) throw Failure("float division by zero");
            // Python's float divmod: the remainder takes the divisor's sign, the quotient is floored.
            double m = std::fmod(fx, fy);
            double q = (fx - m) / fy;
            if (m != 0) {
                if ((fy < 0) != (m < 0)) {
                    m += fy;
                    q -= 1.0;
                }
            } else {
                m = std::copysign(0.0, fy);
            }
            if (q != 0) {
                const double whole = std::floor(q);
                q = q - whole > 0.5 ? whole + 1.0 : whole;
            } else {
                q = std::copysign(0.0, fx / fy);
            }
            return number(floor_div ? q : m);
        }
        case BinaryOp::Pow:
            if (!numbers) bad_operands("**", a, b);
            if (ints && y >= 0) {
                std::int64_t result = 1, base = x;
                for (std::int64_t e = y; e > 0; e >>= 1) {
                    if ((e & 1) && __builtin_mul_overflow(result, base, &result)) throw Failure("integer overflow");
                    if (e > 1 && __builtin_mul_overflow(base, base, &base)) throw Failure("integer overflow");
                }
                return integer(result);
            }
            if (as_double(a) == 0 && as_double(b) < 0) throw Failure("0.0 cannot be raised to a negative power");
            return number(std::pow(as_double(a), as_double(b)));
        default: break;
    }
    throw Failure("unknown operator");
}

bool compare(CompareOp op, const Value& a, const Value& b) {
    switch (op) {
        case CompareOp::Eq: return equal(a, b);
        case CompareOp::Ne: return !equal(a, b);
        case CompareOp::In: return contains(b, a);
        case CompareOp::NotIn: return !contains(b, a);
        default: break;
    }
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    switch (op) {
        case CompareOp::Lt: return less(a, b);
        case CompareOp::Gt: return less(b, a);
        case CompareOp::Le: return less(a, b) || equal(a, b);
        default: return less(b, a) || equal(a, b);
    }
}

// ---- filters and tests -----------------------------------------------------------------------------

using FilterFn = Value (*)(Renderer&, const Value&, CallArgs&);
using TestFn = bool (*)(Renderer&, const Value&, CallArgs&);

FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

Value apply_filter(Renderer& r, const std::string& name, const Value& v, CallArgs& args) {
    const FilterFn f = find_filter(name);
    if (!f) throw Failure("unknown filter '" + name + "'");
    return f(r, v, args);
}

bool run_test(Renderer& r, const std::string& name, const Value& v, CallArgs& args) {
    const TestFn t = find_test(name);
    if (!t) throw Failure("unknown test '" + name + "'");
    return t(r, v, args);
}

// Filters that take strings take str() of anything, as Jinja's soft_str does.
Value f_abs(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "abs");
    if (v.is(Kind::Float)) return number(std::fabs(v.as_float()));
    if (v.is(Kind::Int) || v.is(Kind::Bool)) {
        const std::int64_t i = int_arg(v, "");
        if (i == std::numeric_limits<std::int64_t>::min()) throw Failure("integer overflow");
        return integer(i < 0 ? -i : i);
    }
    throw Failure("bad operand type for abs(): '" + type_name(v) + "'");
}

// Attributes only: unlike `.name`, a dict's keys are not found this way.
Value f_attr(Renderer&, const Value& v, CallArgs& a) {
    const std::string name = to_str(bind(a, {"name"}, "attr")[0]);
    if (v.is_undefined()) fail_undefined(v);
    if ((v.is(Kind::Dict) && is_dict_method(name)) || v.is(Kind::Namespace) || v.is(Kind::String)) return get_attr(v, name);
    return no_attribute(v, name);
}

Value f_capitalize(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "capitalize");
    return string(py::capitalize(to_str(v)));
}

Value f_length(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "length");
    return integer(length_of(v));
}

Value f_default(Renderer&, const Value& v, CallArgs& a) {
    const auto args = bind(a, {"default_value", "boolean"}, "default");
    if (v.is_undefined() || (truthy(args[1]) && !truthy(v))) return given(args[0]) ? args[0] : string("");
    return v;
}

// HTML escaping, as markupsafe does it. Jinja would also mark the result safe; rill has no safe strings.
Value f_escape(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "escape");
    std::string out;
    for (char c : to_str(v)) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return string(std::move(out));
}

Value f_first(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "first");
    const auto items = items_of(v);
    if (items->items.empty()) return undefined("No first item, sequence was empty.");
    return items->items.front();
}

Value f_last(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "last");
    const auto items = items_of(v);
    if (items->items.empty()) return undefined("No last item, sequence was empty.");
    return items->items.back();
}

Value f_float(Renderer&, const Value& v, CallArgs& a) {
    const auto args = bind(a, {"default"}, "float");
    const Value fallback = given(args[0]) ? args[0] : number(0.0);
    switch (v.kind()) {
        case Kind::Undefined: fail_undefined(v);
        case Kind::Float: return v;
        case Kind::Int:
        case Kind::Bool: return number(as_double(v));
        case Kind::String: {
            const auto f = py::parse_float(v.str());
            return f ? number(*f) : fallback;
        }
        default: return fallback;
    }
}

Value f_int(Renderer&, const Value& v, CallArgs& a) {
    const auto args = bind(a, {"default", "base"}, "int");
    const Value fallback = given(args[0]) ? args[0] : integer(0);
    if (given(args[1]) && int_arg(args[1], "base") != 10) throw Failure("int(): only base 10 is supported");
    auto from_double = [&](double d) {
        if (std::isnan(d)) return fallback;
        if (std::isinf(d)) throw Failure("cannot convert float infinity to integer");
        if (std::fabs(d) >= 9.2e18) throw Failure("integer overflow");
        return integer(static_cast<std::int64_t>(std::trunc(d)));
    };
    switch (v.kind()) {
        case Kind::Undefined: fail_undefined(v);
        case Kind::Int: return v;
        case Kind::Bool: return integer(v.as_bool() ? 1 : 0);
        case Kind::Float: return from_double(v.as_float());
        case Kind::String: {
            if (const auto i = py::parse_int(v.str())) return integer(*i);
            if (const auto f = py::parse_float(v.str())) return from_double(*f);
            return fallback;
        }
        default: return fallback;
    }
}

Value f_items(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "items");
    if (v.is_undefined()) return list({});
    if (!v.is(Kind::Dict)) throw Failure("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, val] : v.dict().items) out.push_back(list({k, val}, true));
    return list(std::move(out));
}

Value f_join(Renderer&, const Value& v, CallArgs& a) {
    const auto args = bind(a, {"d", "attribute"}, "join");
    const std::string separator = given(args[0]) ? to_str(args[0]) : "";
    std::string out;
    bool first = true;
    const auto iterated = items_of(v);  // keeps a freshly built list alive through the loop
    for (const Value& item : iterated->items) {
        if (!first) out += separator;
        first = false;
        append_str(out, given(args[1]) && !args[1].is(Kind::None) ? attr_path(item, to_str(args[1])) : item);
        check_output(out);
    }
    return string(std::move(out));
}

Value f_list(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "list");
    const auto items = items_of(v);
    if (items->tuple) return list(items->items);
    return Value{items};
}

Value f_lower(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "lower");
    return string(py::lower(to_str(v)));
}

Value f_upper(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "upper");
    return string(py::upper(to_str(v)));
}

// Jinja's title filter, unlike str.title(), starts words only after spaces, hyphens and opening brackets.
Value f_title(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "title");
    std::string out;
    bool word_start = true;
    for (char32_t c : py::decode(to_str(v))) {
        const std::string one = py::encode(std::u32string_view(&c, 1));
        out += word_start ? py::upper(one) : py::lower(one);
        word_start = py::is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    }
    return string(std::move(out));
}

Value f_trim(Renderer&, const Value& v, CallArgs& a) {
    const auto args = bind(a, {"chars"}, "trim");
    return string(py::strip(to_str(v), optional_str_arg(args[0], "trim() argument"), true, true));
}

Value f_replace(Renderer&, const Value& v, CallArgs& a) {
    const auto args = bind(a, {"old", "new", "count"}, "replace");
    const std::int64_t count = given(args[2]) && !args[2].is(Kind::None) ? int_arg(args[2], "count") : -1;
    return string(py::replace(to_str(v), to_str(args[0]), to_str(args[1]), count));
}

Value f_string(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "string");
    return string(to_str(v));
}

Value f_safe(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "safe");
    return v;
}

Value f_reverse(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "reverse");
    if (v.is(Kind::String)) {
        std::u32string text = py::decode(v.str());
        std::reverse(text.begin(), text.end());
        return string(py::encode(text));
    }
    std::vector<Value> items = items_of(v)->items;
    std::reverse(items.begin(), items.end());
    return list(std::move(items));
}

Value f_map(Renderer& r, const Value& v, CallArgs& a) {
    const auto items = items_of(v);
    std::vector<Value> out;
    const auto attribute = std::find_if(a.named.begin(), a.named.end(), [](const auto& kv) { return kv.first == "attribute"; });
    if (a.positional.empty() && attribute != a.named.end()) {
        const auto args = bind(a, {"attribute", "default"}, "map");
        for (const Value& item : items->items) {
            step(r);
            Value x = attr_path(item, to_str(args[0]));
            out.push_back(x.is_undefined() && given(args[1]) ? args[1] : x);
        }
        return list(std::move(out));
    }
    if (a.positional.empty()) throw Failure("map requires a filter argument");
    const std::string filter = to_str(a.positional.front());
    CallArgs rest{std::vector<Value>(a.positional.begin() + 1, a.positional.end()), a.named};
    for (const Value& item : items->items) {
        step(r);
        CallArgs call = rest;
        out.push_back(apply_filter(r, filter, item, call));
    }
    return list(std::move(out));
}

Value select_items(Renderer& r, const Value& v, CallArgs& a, bool by_attribute, bool keep) {
    std::size_t next = 0;
    std::string attribute;
    if (by_attribute) {
        if (a.positional.empty()) throw Failure("missing the attribute name");
        attribute = to_str(a.positional[next++]);
    }
    const bool has_test = a.positional.size() > next;
    const std::string test = has_test ? to_str(a.positional[next]) : "";
    if (has_test && !find_test(test)) throw Failure("unknown test '" + test + "'");
    const CallArgs test_args{has_test ? std::vector<Value>(a.positional.begin() + static_cast<std::ptrdiff_t>(next) + 1,
                                                           a.positional.end())
                                      : std::vector<Value>{},
                             a.named};
    std::vector<Value> out;
    const auto iterated = items_of(v);  // keeps a freshly built list alive through the loop
    for (const Value& item : iterated->items) {
        step(r);
        const Value subject = by_attribute ? attr_path(item, attribute) : item;
        CallArgs call = test_args;
        const bool passed = has_test ? run_test(r, test, subject, call) : truthy(subject);
        if (passed == keep) out.push_back(item);
    }
    return list(std::move(out));
}

Value f_select(Renderer& r, const Value& v, CallArgs& a) { return select_items(r, v, a, false, true); }
Value f_reject(Renderer& r, const Value& v, CallArgs& a) { return select_items(r, v, a, false, false); }
Value f_selectattr(Renderer& r, const Value& v, CallArgs& a) { return select_items(r, v, a, true, true); }
Value f_rejectattr(Renderer& r, const Value& v, CallArgs& a) { return select_items(r, v, a, true, false); }

// The key sort and unique compare by: the attribute if named, lowercased unless case-sensitive.
Value sort_key(const Value& item, const Value& attribute, bool case_sensitive) {
    Value key = given(attribute) && !attribute.is(Kind::None) ? attr_path(item, to_str(attribute)) : item;
    if (!case_sensitive && key.is(Kind::String)) return string(py::lower(key.str()));
    return key;
}

Value f_sort(Renderer& r, const Value& v, CallArgs& a) {
    const auto args = bind(a, {"reverse", "case_sensitive", "attribute"}, "sort");
    const bool reverse = truthy(args[0]);
    std::vector<std::pair<Value, Value>> keyed;
    const auto iterated = items_of(v);  // keeps a freshly built list alive through the loop
    for (const Value& item : iterated->items) keyed.emplace_back(sort_key(item, args[2], truthy(args[1])), item);
    step(r, static_cast<std::int64_t>(keyed.size()));
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        return reverse ? less(y.first, x.first) : less(x.first, y.first);
    });
    std::vector<Value> out;
    for (auto& [k, item] : keyed) out.push_back(std::move(item));
    return list(std::move(out));
}

Value f_unique(Renderer& r, const Value& v, CallArgs& a) {
    const auto args = bind(a, {"case_sensitive", "attribute"}, "unique");
    std::vector<Value> out, seen_other;
    std::unordered_set<std::string> seen;  // strings and numbers, by a text that equal values share
    const auto iterated = items_of(v);  // keeps a freshly built list alive through the loop
    for (const Value& item : iterated->items) {
        step(r);
        const Value key = sort_key(item, args[1], truthy(args[0]));
        require_hashable(key);
        bool fresh;
        if (key.is(Kind::String)) {
            fresh = seen.insert("s" + key.str()).second;
        } else if (key.is_number()) {
            const double d = as_double(key);
            const bool whole = !key.is(Kind::Float) || (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e15);
            const std::int64_t i = key.is(Kind::Float) ? static_cast<std::int64_t>(whole ? d : 0) : int_arg(key, "");
            fresh = seen.insert(whole ? "i" + std::to_string(i) : "f" + float_repr(d)).second;
        } else {
            step(r, static_cast<std::int64_t>(seen_other.size()));
            fresh = std::none_of(seen_other.begin(), seen_other.end(), [&](const Value& s) { return equal(s, key); });
            if (fresh) seen_other.push_back(key);
        }
        if (fresh) out.push_back(item);
    }
    return list(std::move(out));
}

// Hugging Face's tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value f_tojson(Renderer&, const Value& v, CallArgs& a) {
    const auto args = bind(a, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson");
    JsonStyle style;
    style.ensure_ascii = truthy(args[0]);
    const Value& indent = args[1];
    if (indent.is(Kind::Int) || indent.is(Kind::Bool))
        style.indent = std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(int_arg(indent, ""), 0, 1000)), ' ');
    else if (indent.is(Kind::String))
        style.indent = indent.str();
    else if (given(indent) && !indent.is(Kind::None))
        throw Failure("tojson: indent must be an integer or a string");
    style.item_separator = style.indent ? "," : ", ";
    if (given(args[2]) && !args[2].is(Kind::None)) {
        const Value& sep = args[2];
        if (!sep.is(Kind::List) || sep.list().items.size() != 2)
            throw Failure("tojson: separators must be an (item_separator, key_separator) pair");
        style.item_separator = str_arg(sep.list().items[0], "an item separator");
        style.key_separator = str_arg(sep.list().items[1], "a key separator");
    }
    style.sort_keys = truthy(args[3]);
    return string(to_json(v, style));
}

// Python's str.splitlines() boundaries.
std::vector<std::u32string> split_lines(const std::u32string& text) {
    std::vector<std::u32string> lines;
    std::u32string line;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char32_t c = text[i];
        if (c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e) || c == 0x85 || c == 0x2028 ||
            c == 0x2029) {
            if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
            lines.push_back(std::move(line));
            line.clear();
        } else {
            line += c;
        }
    }
    if (!line.empty()) lines.push_back(std::move(line));
    return lines;
}

Value f_indent(Renderer&, const Value& v, CallArgs& a) {
    const auto args = bind(a, {"width", "first", "blank"}, "indent");
    const std::string pad = args[0].is(Kind::String)
                                ? args[0].str()
                                : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(
                                                  given(args[0]) ? int_arg(args[0], "width") : 4, 0, 1000)),
                                              ' ');
    const auto lines = split_lines(py::decode(to_str(v) + "\n"));
    std::string out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) out += '\n';
        if (i > 0 && (truthy(args[2]) || !lines[i].empty())) out += pad;
        out += py::encode(lines[i]);
        check_output(out);
    }
    if (truthy(args[1])) out = pad + out;
    return string(std::move(out));
}

struct NamedFilter {
    std::string_view name;
    FilterFn fn;
};
constexpr NamedFilter kFilters[] = {
    {"abs", f_abs}, {"attr", f_attr}, {"capitalize", f_capitalize}, {"count", f_length},
    {"d", f_default}, {"default", f_default}, {"e", f_escape}, {"escape", f_escape},
    {"first", f_first}, {"float", f_float}, {"indent", f_indent}, {"int", f_int},
    {"items", f_items}, {"join", f_join}, {"last", f_last}, {"length", f_length},
    {"list", f_list}, {"lower", f_lower}, {"map", f_map}, {"reject", f_reject},
    {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse}, {"safe", f_safe},
    {"select", f_select}, {"selectattr", f_selectattr}, {"sort", f_sort}, {"string", f_string},
    {"title", f_title}, {"tojson", f_tojson}, {"trim", f_trim}, {"unique", f_unique},
    {"upper", f_upper},
};

FilterFn find_filter(std::string_view name) {
    for (const NamedFilter& f : kFilters)
        if (f.name == name) return f.fn;
    return nullptr;
}

Value one_arg(const CallArgs& a, const std::string& test) { return bind(a, {"other"}, test)[0]; }

bool t_defined(Renderer&, const Value& v, CallArgs& a) { return bind(a, {}, "defined"), !v.is_undefined(); }
bool t_undefined(Renderer&, const Value& v, CallArgs& a) { return bind(a, {}, "undefined"), v.is_undefined(); }
bool t_none(Renderer&, const Value& v, CallArgs& a) { return bind(a, {}, "none"), v.is(Kind::None); }
bool t_boolean(Renderer&, const Value& v, CallArgs& a) { return bind(a, {}, "boolean"), v.is(Kind::Bool); }
bool t_true(Renderer&, const Value& v, CallArgs& a) { return bind(a, {}, "true"), v.is(Kind::Bool) && v.as_bool(); }
bool t_false(Renderer&, const Value& v, CallArgs& a) { return bind(a, {}, "false"), v.is(Kind::Bool) && !v.as_bool(); }
bool t_integer(Renderer&, const Value& v, CallArgs& a) { return bind(a, {}, "integer"), v.is(Kind::Int); }
bool t_float(Renderer&, const Value& v, CallArgs& a) { return bind(a, {}, "float"), v.is(Kind::Float); }
bool t_number(Renderer&, const Value& v, CallArgs& a) { return bind(a, {}, "number"), v.is_number(); }
bool t_string(Renderer&, const Value& v, CallArgs& a) { return bind(a, {}, "string"), v.is(Kind::String); }
bool t_mapping(Renderer&, const Value& v, CallArgs& a) { return bind(a, {}, "mapping"), v.is(Kind::Dict); }
bool t_callable(Renderer&, const Value& v, CallArgs& a) { return bind(a, {}, "callable"), v.is(Kind::Callable); }
// Jinja's Undefined iterates (as empty) and has a length, so it passes both of these.
bool t_iterable(Renderer&, const Value& v, CallArgs& a) {
    bind(a, {}, "iterable");
    return v.is(Kind::String) || v.is(Kind::List) || v.is(Kind::Dict) || v.is_undefined();
}
bool t_sequence(Renderer& r, const Value& v, CallArgs& a) { return t_iterable(r, v, a); }
bool t_eq(Renderer&, const Value& v, CallArgs& a) { return equal(v, one_arg(a, "eq")); }
bool t_ne(Renderer&, const Value& v, CallArgs& a) { return !equal(v, one_arg(a, "ne")); }
bool t_lt(Renderer&, const Value& v, CallArgs& a) { return compare(CompareOp::Lt, v, one_arg(a, "lt")); }
bool t_le(Renderer&, const Value& v, CallArgs& a) { return compare(CompareOp::Le, v, one_arg(a, "le")); }
bool t_gt(Renderer&, const Value& v, CallArgs& a) { return compare(CompareOp::Gt, v, one_arg(a, "gt")); }
bool t_ge(Renderer&, const Value& v, CallArgs& a) { return compare(CompareOp::Ge, v, one_arg(a, "ge")); }
bool t_in(Renderer&, const Value& v, CallArgs& a) { return contains(bind(a, {"seq"}, "in")[0], v); }
bool t_sameas(Renderer&, const Value& v, CallArgs& a) {
    const Value other = one_arg(a, "sameas");
    if (v.kind() != other.kind()) return false;
    switch (v.kind()) {
        case Kind::List: return &v.list() == &other.list();
        case Kind::Dict: return &v.dict() == &other.dict();
        default: return equal(v, other);
    }
}
bool t_divisibleby(Renderer&, const Value& v, CallArgs& a) {
    return equal(arithmetic(BinaryOp::Mod, v, bind(a, {"num"}, "divisibleby")[0]), integer(0));
}
bool t_even(Renderer&, const Value& v, CallArgs& a) {
    return bind(a, {}, "even"), equal(arithmetic(BinaryOp::Mod, v, integer(2)), integer(0));
}
bool t_odd(Renderer&, const Value& v, CallArgs& a) {
    return bind(a, {}, "odd"), equal(arithmetic(BinaryOp::Mod, v, integer(2)), integer(1));
}

struct NamedTest {
    std::string_view name;
    TestFn fn;
};
constexpr NamedTest kTests[] = {
    {"!=", t_ne}, {"<", t_lt}, {"<=", t_le}, {"==", t_eq}, {">", t_gt},
    {">=", t_ge}, {"boolean", t_boolean}, {"callable", t_callable}, {"defined", t_defined}, {"divisibleby", t_divisibleby},
    {"eq", t_eq}, {"equalto", t_eq}, {"even", t_even}, {"false", t_false}, {"float", t_float},
    {"ge", t_ge}, {"greaterthan", t_gt}, {"gt", t_gt}, {"in", t_in}, {"integer", t_integer},
    {"iterable", t_iterable}, {"le", t_le}, {"lessthan", t_lt}, {"lt", t_lt}, {"mapping", t_mapping},
    {"ne", t_ne}, {"none", t_none}, {"number", t_number}, {"odd", t_odd}, {"sameas", t_sameas},
    {"sequence", t_sequence}, {"string", t_string}, {"true", t_true}, {"undefined", t_undefined},
};

TestFn find_test(std::string_view name) {
    for (const NamedTest& t : kTests)
        if (t.name == name) return t.fn;
    return nullptr;
}

// ---- evaluation --------------------------------------------------------------------------------------

[[noreturn]] void fail_at(const Renderer& r, Pos pos, const std::string& message) {
    throw Error(error_at(r.tpl.source, pos.line, pos.column, message));
}

Value eval(Renderer& r, Scope& sc, const Expr& e);

CallArgs eval_args(Renderer& r, Scope& sc, const std::vector<Arg>& args) {
    CallArgs out;
    for (const Arg& a : args) {
        if (a.name.empty()) {
            out.positional.push_back(eval(r, sc, *a.value));
        } else {
            if (std::any_of(out.named.begin(), out.named.end(), [&](const auto& kv) { return kv.first == a.name; }))
                throw Failure("keyword argument '" + a.name + "' repeated");
            out.named.emplace_back(a.name, eval(r, sc, *a.value));
        }
    }
    return out;
}

Value call(const Value& fn, CallArgs& args) {
    if (fn.is(Kind::Callable)) return fn.callable().fn(args);
    if (fn.is_undefined()) fail_undefined(fn);
    throw Failure("'" + type_name(fn) + "' object is not callable");
}

Value eval_node(Renderer& r, Scope& sc, const Expr& e) {
    return std::visit(
        Overloaded{
            [&](const LiteralExpr& x) { return x.value; },
            [&](const ListExpr& x) {
                std::vector<Value> items;
                for (const auto& item : x.items) items.push_back(eval(r, sc, *item));
                return list(std::move(items), x.tuple);
            },
            [&](const DictExpr& x) {
                std::vector<std::pair<Value, Value>> items;
                for (const auto& [k, v] : x.items) {
                    Value key = eval(r, sc, *k);
                    items.emplace_back(std::move(key), eval(r, sc, *v));
                }
                return dict(std::move(items));
            },
            [&](const NameExpr& x) {
                if (const Value* v = sc.find(x.name)) return *v;
                return undefined("'" + x.name + "' is undefined");
            },
            [&](const AttrExpr& x) { return get_attr(eval(r, sc, *x.object), x.name); },
            [&](const ItemExpr& x) {
                const Value obj = eval(r, sc, *x.object);
                return get_item(obj, eval(r, sc, *x.index));
            },
            [&](const SliceExpr& x) {
                const Value obj = eval(r, sc, *x.object);
                const Value start = x.start ? eval(r, sc, *x.start) : Value{};
                const Value stop = x.stop ? eval(r, sc, *x.stop) : Value{};
                const Value stride = x.step ? eval(r, sc, *x.step) : Value{};
                return slice(obj, start, stop, stride);
            },
            [&](const CallExpr& x) {
                // A method call on a str or dict runs directly, without a bound-method object.
                if (const auto* attr = std::get_if<AttrExpr>(&x.callee->node)) {
                    const Value obj = eval(r, sc, *attr->object);
                    if ((obj.is(Kind::String) && is_str_method(attr->name)) ||
                        (obj.is(Kind::Dict) && is_dict_method(attr->name))) {
                        CallArgs args = eval_args(r, sc, x.args);
                        return call_method(obj, attr->name, args);
                    }
                    const Value fn = get_attr(obj, attr->name);
                    CallArgs args = eval_args(r, sc, x.args);
                    return call(fn, args);
                }
                const Value fn = eval(r, sc, *x.callee);
                CallArgs args = eval_args(r, sc, x.args);
                return call(fn, args);
            },
            [&](const FilterExpr& x) {
                const Value v = eval(r, sc, *x.operand);
                CallArgs args = eval_args(r, sc, x.filter.args);
                return apply_filter(r, x.filter.name, v, args);
            },
            [&](const TestExpr& x) {
                const Value v = eval(r, sc, *x.operand);
                CallArgs args = eval_args(r, sc, x.args);
                return boolean(run_test(r, x.name, v, args) != x.negated);
            },
            [&](const UnaryExpr& x) {
                const Value v = eval(r, sc, *x.operand);
                if (x.op == UnaryOp::Not) return boolean(!truthy(v));
                if (v.is_undefined()) fail_undefined(v);
                if (!v.is_number()) throw Failure("bad operand type for unary " + std::string(x.op == UnaryOp::Neg ? "-" : "+") +
                                                  ": '" + type_name(v) + "'");
                if (x.op == UnaryOp::Pos) return v.is(Kind::Bool) ? integer(int_arg(v, "")) : v;
                if (v.is(Kind::Float)) return number(-v.as_float());
                return arithmetic(BinaryOp::Sub, integer(0), v);
            },
            [&](const BinaryExpr& x) {
                Value left = eval(r, sc, *x.left);
                // and/or short-circuit and give back an operand, as in Python.
                if (x.op == BinaryOp::And) return truthy(left) ? eval(r, sc, *x.right) : left;
                if (x.op == BinaryOp::Or) return truthy(left) ? left : eval(r, sc, *x.right);
                return arithmetic(x.op, left, eval(r, sc, *x.right));
            },
            [&](const CompareExpr& x) {
                Value left = eval(r, sc, *x.first);
                for (const auto& [op, operand] : x.rest) {
                    Value right = eval(r, sc, *operand);
                    if (!compare(op, left, right)) return boolean(false);
                    left = std::move(right);
                }
                return boolean(true);
            },
            [&](const CondExpr& x) {
                if (truthy(eval(r, sc, *x.condition))) return eval(r, sc, *x.then);
                if (x.otherwise) return eval(r, sc, *x.otherwise);
                return undefined("the inline if-expression was false and has no else");
            },
        },
        e.node);
}

Value eval(Renderer& r, Scope& sc, const Expr& e) {
    try {
        DepthGuard guard(r);
        return eval_node(r, sc, e);
    } catch (const Failure& f) {
        fail_at(r, e.pos, f.what());
    }
}

// ---- statements --------------------------------------------------------------------------------------

Flow exec_body(Renderer& r, Scope& sc, const Body& body, std::string& out);

void assign_one(Scope& sc, const AssignTarget& target, Value value) {
    if (target.attr.empty()) {
        sc.vars[target.name] = std::move(value);
        return;
    }
    Value* ns = sc.find(target.name);
    if (!ns || !ns->is(Kind::Namespace)) throw Failure("cannot assign attribute on non-namespace object");
    ns->ns().set(target.attr, std::move(value));
}

void assign(Scope& sc, const SetTarget& target, Value value) {
    if (!target.unpack) return assign_one(sc, target.targets[0], std::move(value));
    const auto items = items_of(value);
    const std::size_t want = target.targets.size(), got = items->items.size();
    if (got != want)
        throw Failure(std::string(got < want ? "not enough" : "too many") + " values to unpack (expected " +
                      std::to_string(want) + ", got " + std::to_string(got) + ")");
    for (std::size_t i = 0; i < want; ++i) assign_one(sc, target.targets[i], items->items[i]);
}

Value apply_filters(Renderer& r, Scope& sc, const std::vector<FilterCall>& filters, Value v) {
    for (const FilterCall& f : filters) {
        try {
            CallArgs args = eval_args(r, sc, f.args);
            v = apply_filter(r, f.name, v, args);
        } catch (const Failure& failure) {
            fail_at(r, f.pos, failure.what());
        }
    }
    return v;
}

// The `loop` variable of iteration i. `cycle` is made once per loop and reads the iteration from `current`.
Value loop_object(std::size_t i, const std::vector<const Value*>& items, const Value& cycle) {
    const auto n = static_cast<std::int64_t>(items.size());
    const auto index = static_cast<std::int64_t>(i);
    std::vector<std::pair<Value, Value>> fields;
    fields.reserve(12);
    fields.emplace_back(Value{std::string("index")}, integer(index + 1));
    fields.emplace_back(Value{std::string("index0")}, integer(index));
    fields.emplace_back(Value{std::string("revindex")}, integer(n - index));
    fields.emplace_back(Value{std::string("revindex0")}, integer(n - index - 1));
    fields.emplace_back(Value{std::string("first")}, boolean(i == 0));
    fields.emplace_back(Value{std::string("last")}, boolean(index == n - 1));
    fields.emplace_back(Value{std::string("length")}, integer(n));
    fields.emplace_back(Value{std::string("depth")}, integer(1));
    fields.emplace_back(Value{std::string("depth0")}, integer(0));
    fields.emplace_back(Value{std::string("previtem")}, i > 0 ? *items[i - 1] : undefined("there is no previous item"));
    fields.emplace_back(Value{std::string("nextitem")},
                        index + 1 < n ? *items[i + 1] : undefined("there is no next item"));
    fields.emplace_back(Value{std::string("cycle")}, cycle);
    return dict_of_distinct_keys(std::move(fields));
}

Flow exec_for(Renderer& r, Scope& sc, const ForStmt& s, std::string& out) {
    const Value iterable = eval(r, sc, *s.iterable);
    std::shared_ptr<const List> items;
    try {
        items = items_of(iterable);
    } catch (const Failure& f) {
        fail_at(r, s.iterable->pos, f.what());
    }
    // Each iteration is a fresh scope: what the body sets is gone at the next item and after the loop.
    SetTarget target;
    target.unpack = s.unpack;
    for (const std::string& name : s.targets) target.targets.push_back({name, ""});
    std::vector<const Value*> selected;
    for (const Value& item : items->items) {
        if (s.filter) {
            step(r);
            Scope test_scope{{}, &sc};
            assign(test_scope, target, item);
            if (!truthy(eval(r, test_scope, *s.filter))) continue;
        }
        selected.push_back(&item);
    }
    const auto current = std::make_shared<std::size_t>(0);
    const Value cycle = callable("loop.cycle", [current](CallArgs& a) {
        if (a.positional.empty()) throw Failure("no items for cycling given");
        return a.positional[*current % a.positional.size()];
    });
    for (std::size_t i = 0; i < selected.size(); ++i) {
        step(r);
        Scope iteration{{}, &sc};
        assign(iteration, target, *selected[i]);
        *current = i;
        if (s.uses_loop) iteration.vars["loop"] = loop_object(i, selected, cycle);
        const Flow flow = exec_body(r, iteration, s.body, out);
        if (flow == Flow::Break) break;
    }
    if (selected.empty() && !s.otherwise.empty()) {
        Scope else_scope{{}, &sc};
        exec_body(r, else_scope, s.otherwise, out);
    }
    return Flow::Normal;
}

Value macro_value(Renderer& r, const MacroStmt& m, std::shared_ptr<Scope> closure);

// A macro sees the template's top-level names as they are when it is called, never its caller's locals.
// One defined inside a loop or another macro also sees the locals around its definition, as they were then.
Value call_macro(Renderer& r, const MacroStmt& m, const std::shared_ptr<Scope>& closure, CallArgs& a) {
    step(r);
    DepthGuard guard(r);
    Scope sc{{}, closure ? closure.get() : r.root};
    if (closure) sc.vars[m.name] = macro_value(r, m, closure);  // so it can call itself
    if (a.positional.size() > m.params.size())
        throw Failure("macro '" + m.name + "' takes not more than " + std::to_string(m.params.size()) +
                      " argument(s)");
    for (const auto& given : a.named)
        if (std::none_of(m.params.begin(), m.params.end(), [&](const MacroParam& p) { return p.name == given.first; }))
            throw Failure("macro '" + m.name + "' takes no keyword argument '" + given.first + "'");
    for (std::size_t i = 0; i < m.params.size(); ++i) {
        const MacroParam& p = m.params[i];
        const auto named = std::find_if(a.named.begin(), a.named.end(), [&](const auto& kv) { return kv.first == p.name; });
        if (i < a.positional.size()) {
            if (named != a.named.end()) throw Failure("macro '" + m.name + "' got multiple values for '" + p.name + "'");
            sc.vars[p.name] = a.positional[i];
        } else if (named != a.named.end()) {
            sc.vars[p.name] = named->second;
        } else if (p.default_value) {
            sc.vars[p.name] = eval(r, sc, *p.default_value);
        } else {
            sc.vars[p.name] = undefined("parameter '" + p.name + "' was not provided");
        }
    }
    std::string out;
    exec_body(r, sc, m.body, out);
    return string(std::move(out));
}

Value macro_value(Renderer& r, const MacroStmt& m, std::shared_ptr<Scope> closure) {
    Renderer* renderer = &r;
    const MacroStmt* macro = &m;
    return callable(m.name, [renderer, macro, closure](CallArgs& a) { return call_macro(*renderer, *macro, closure, a); });
}

Flow exec_node(Renderer& r, Scope& sc, const Stmt& stmt, std::string& out) {
    return std::visit(
        Overloaded{
            [&](const TextStmt& s) {
                check_output(out, s.text.size());
                out += s.text;
                return Flow::Normal;
            },
            [&](const OutputStmt& s) {
                const Value v = eval(r, sc, *s.expr);
                if (v.is(Kind::String)) {
                    check_output(out, v.str().size());
                    out += v.str();
                } else {
                    append_str(out, v);
                    check_output(out);
                }
                return Flow::Normal;
            },
            [&](const IfStmt& s) {
                for (const auto& [condition, body] : s.branches)
                    if (truthy(eval(r, sc, *condition))) return exec_body(r, sc, body, out);
                return exec_body(r, sc, s.otherwise, out);
            },
            [&](const ForStmt& s) { return exec_for(r, sc, s, out); },
            [&](const SetStmt& s) {
                if (s.value) {
                    assign(sc, s.target, eval(r, sc, *s.value));
                    return Flow::Normal;
                }
                std::string captured;
                const Flow flow = exec_body(r, sc, s.body, captured);
                assign(sc, s.target, apply_filters(r, sc, s.filters, string(std::move(captured))));
                return flow;
            },
            [&](const MacroStmt& s) {
                std::shared_ptr<Scope> closure;
                if (&sc != r.root) {
                    closure = std::make_shared<Scope>();
                    closure->parent = r.root;
                    for (Scope* outer = &sc; outer && outer != r.root; outer = outer->parent)
                        for (const auto& [name, value] : outer->vars) closure->vars.emplace(name, value);
                }
                sc.vars[s.name] = macro_value(r, s, std::move(closure));
                return Flow::Normal;
            },
            [&](const FilterBlockStmt& s) {
                if (s.filters.empty()) return exec_body(r, sc, s.body, out);
                std::string captured;
                const Flow flow = exec_body(r, sc, s.body, captured);
                append_str(out, apply_filters(r, sc, s.filters, string(std::move(captured))));
                check_output(out);
                return flow;
            },
            [&](const WithStmt& s) {
                Scope inner{{}, &sc};
                for (const auto& [name, value] : s.assignments) inner.vars[name] = eval(r, sc, *value);
                return exec_body(r, inner, s.body, out);
            },
            [&](const BreakStmt&) { return Flow::Break; },
            [&](const ContinueStmt&) { return Flow::Continue; },
        },
        stmt.node);
}

Flow exec_body(Renderer& r, Scope& sc, const Body& body, std::string& out) {
    for (const Stmt& stmt : body) {
        Flow flow;
        try {
            DepthGuard guard(r);
            flow = exec_node(r, sc, stmt, out);
        } catch (const Failure& f) {
            fail_at(r, stmt.pos, f.what());
        }
        if (flow != Flow::Normal) return flow;
    }
    return Flow::Normal;
}

// ---- checks before rendering and the globals ---------------------------------------------------------

// Jinja rejects an unknown filter or test when it compiles a template, except under an if (statement or
// expression), where it waits until the filter runs, so "{% if false %}{{ x|custom }}{% endif %}" renders.
// Loop bodies, macros and captured blocks are checked again even under an if.
void check_names(const Renderer& r, const Expr& e, bool deferred);

void check_names(const Renderer& r, const std::vector<Arg>& args, bool deferred) {
    for (const Arg& a : args) check_names(r, *a.value, deferred);
}

void check_filter(const Renderer& r, const FilterCall& f, bool deferred) {
    if (!deferred && !find_filter(f.name)) fail_at(r, f.pos, "unknown filter '" + f.name + "'");
    check_names(r, f.args, deferred);
}

void check_names(const Renderer& r, const Expr& e, bool deferred) {
    auto sub = [&](const ExprPtr& x) {
        if (x) check_names(r, *x, deferred);
    };
    std::visit(Overloaded{
                   [](const LiteralExpr&) {},
                   [](const NameExpr&) {},
                   [&](const ListExpr& x) {
                       for (const auto& item : x.items) sub(item);
                   },
                   [&](const DictExpr& x) {
                       for (const auto& [k, v] : x.items) {
                           sub(k);
                           sub(v);
                       }
                   },
                   [&](const AttrExpr& x) { sub(x.object); },
                   [&](const ItemExpr& x) {
                       sub(x.object);
                       sub(x.index);
                   },
                   [&](const SliceExpr& x) {
                       sub(x.object);
                       sub(x.start);
                       sub(x.stop);
                       sub(x.step);
                   },
                   [&](const CallExpr& x) {
                       sub(x.callee);
                       check_names(r, x.args, deferred);
                   },
                   [&](const FilterExpr& x) {
                       sub(x.operand);
                       check_filter(r, x.filter, deferred);
                   },
                   [&](const TestExpr& x) {
                       sub(x.operand);
                       if (!deferred && !find_test(x.name)) fail_at(r, e.pos, "unknown test '" + x.name + "'");
                       check_names(r, x.args, deferred);
                   },
                   [&](const UnaryExpr& x) { sub(x.operand); },
                   [&](const BinaryExpr& x) {
                       sub(x.left);
                       sub(x.right);
                   },
                   [&](const CompareExpr& x) {
                       sub(x.first);
                       for (const auto& [op, operand] : x.rest) sub(operand);
                   },
                   [&](const CondExpr& x) {
                       check_names(r, *x.condition, true);
                       check_names(r, *x.then, true);
                       if (x.otherwise) check_names(r, *x.otherwise, true);
                   },
               },
               e.node);
}

void check_names(const Renderer& r, const Body& body, bool deferred) {
    for (const Stmt& stmt : body)
        std::visit(Overloaded{
                       [](const TextStmt&) {},
                       [](const BreakStmt&) {},
                       [](const ContinueStmt&) {},
                       [&](const OutputStmt& s) { check_names(r, *s.expr, deferred); },
                       [&](const IfStmt& s) {
                           for (const auto& [condition, branch] : s.branches) {
                               check_names(r, *condition, true);
                               check_names(r, branch, true);
                           }
                           check_names(r, s.otherwise, true);
                       },
                       [&](const ForStmt& s) {
                           check_names(r, *s.iterable, deferred);
                           if (s.filter) check_names(r, *s.filter, false);
                           check_names(r, s.body, false);
                           check_names(r, s.otherwise, false);
                       },
                       [&](const SetStmt& s) {
                           if (s.value) check_names(r, *s.value, deferred);
                           for (const FilterCall& f : s.filters) check_filter(r, f, false);
                           check_names(r, s.body, false);
                       },
                       [&](const MacroStmt& s) {
                           for (const MacroParam& p : s.params)
                               if (p.default_value) check_names(r, *p.default_value, false);
                           check_names(r, s.body, false);
                       },
                       [&](const FilterBlockStmt& s) {
                           for (const FilterCall& f : s.filters) check_filter(r, f, false);
                           check_names(r, s.body, s.filters.empty() && deferred);
                       },
                       [&](const WithStmt& s) {
                           for (const auto& [name, value] : s.assignments) check_names(r, *value, deferred);
                           check_names(r, s.body, false);
                       },
                   },
                   stmt.node);
}

// A dict from dict(mapping or pairs, **named), as Python's dict() and Jinja's namespace() build it.
std::vector<std::pair<Value, Value>> dict_arguments(const CallArgs& a, const std::string& what) {
    if (a.positional.size() > 1) throw Failure(what + "() takes at most 1 positional argument");
    std::vector<std::pair<Value, Value>> pairs;
    if (!a.positional.empty()) {
        const Value& source = a.positional[0];
        if (source.is_undefined()) fail_undefined(source);  // Python's dict() asks it for .keys
        if (source.is(Kind::Dict)) {
            pairs = source.dict().items;
        } else {
            const auto iterated = items_of(source);  // keeps a freshly built list alive through the loop
            for (const Value& item : iterated->items) {
                const auto pair = items_of(item);
                if (pair->items.size() != 2) throw Failure(what + "() needs pairs of a key and a value");
                pairs.emplace_back(pair->items[0], pair->items[1]);
            }
        }
    }
    for (const auto& [name, value] : a.named) pairs.emplace_back(string(name), value);
    return pairs;
}

Value range_of(CallArgs& a) {
    if (!a.named.empty()) throw Failure("range() takes no keyword arguments");
    if (a.positional.empty() || a.positional.size() > 3) throw Failure("range() takes 1 to 3 arguments");
    std::int64_t start = 0, stop = 0, stride = 1;
    if (a.positional.size() == 1) {
        stop = int_arg(a.positional[0], "a range() argument");
    } else {
        start = int_arg(a.positional[0], "a range() argument");
        stop = int_arg(a.positional[1], "a range() argument");
        if (a.positional.size() == 3) stride = int_arg(a.positional[2], "a range() argument");
    }
    if (stride == 0) throw Failure("range() arg 3 must not be zero");
    const long double count = std::max<long double>(
        0, std::ceil((static_cast<long double>(stop) - static_cast<long double>(start)) / static_cast<long double>(stride)));
    if (count > kMaxRange)
        throw Failure("range too big: the sandbox allows at most " + std::to_string(kMaxRange) + " items");
    std::vector<Value> out;
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(count); ++i) out.push_back(integer(start + i * stride));
    return list(std::move(out));
}

}  // namespace

std::string render(const Template& t, const std::vector<std::pair<std::string, Value>>& variables) {
    Renderer r{t, nullptr, {}, 0, 0};
    check_names(r, t.body, false);
    Scope globals;
    Renderer* renderer = &r;
    globals.vars["range"] = callable("range", [](CallArgs& a) { return range_of(a); });
    globals.vars["dict"] = callable("dict", [](CallArgs& a) { return dict(dict_arguments(a, "dict")); });
    globals.vars["namespace"] = callable("namespace", [renderer](CallArgs& a) {
        if (renderer->namespaces.size() >= kMaxNamespaces)
            throw Failure("more than " + std::to_string(kMaxNamespaces) + " namespaces");
        Namespace& ns = renderer->namespaces.emplace_back();
        for (auto& [k, v] : dict_arguments(a, "namespace")) {
            if (!k.is(Kind::String)) throw Failure("namespace() keys must be strings");
            ns.set(k.str(), std::move(v));
        }
        return Value{&ns};
    });
    Scope root{{}, &globals};
    for (const auto& [name, value] : variables) root.vars[name] = value;
    r.root = &root;
    std::string out;
    exec_body(r, root, t.body, out);
    return out;
}

}  // namespace rill::jinja
