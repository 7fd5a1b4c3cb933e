// Operations on template values: argument binding, iteration, Jinja's sandboxed attribute and item
// access, the str and dict methods, and the operators, with Python's semantics.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/text/jinja/py_str.h"
#include "runtime/text/jinja/render_support.h"

namespace rill::jinja {

[[noreturn]] void fail_undefined(const Value& v) {
    throw Failure(v.undefined_hint().empty() ? std::string("undefined value") : v.undefined_hint());
}

namespace {

// How Jinja names an object in "has no attribute" messages.
std::string object_name(const Value& v) { return v.is(Kind::None) ? "'None'" : "'" + type_name(v) + " object'"; }

const std::shared_ptr<const List>& list_ptr(const Value& v) { return std::get<std::shared_ptr<const List>>(v.v); }

}  // namespace

Value no_attribute(const Value& obj, const std::string& name) {
    return undefined(object_name(obj) + " has no attribute '" + name + "'");
}

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

namespace {

// Dict methods that would mutate, or that rill leaves out; Jinja's sandbox returns these as undefined
// instead of looking the name up as a key.
bool is_blocked_dict_method(std::string_view name) {
    return name == "pop" || name == "popitem" || name == "setdefault" || name == "update" || name == "clear" ||
           name == "copy" || name == "fromkeys";
}

}  // namespace


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

namespace {

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

}  // namespace

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

}  // namespace rill::jinja
