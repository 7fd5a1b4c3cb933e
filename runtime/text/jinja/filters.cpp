// The builtin filters and tests chat templates use, as Jinja2 defines them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "runtime/text/jinja/py_str.h"
#include "runtime/text/jinja/render_support.h"

namespace rill::jinja {

namespace {

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

// The items of (sort key, item) pairs in key order (stable), as a list.
Value sorted_items(Renderer& r, std::vector<std::pair<Value, Value>> keyed, bool reverse) {
    step(r, static_cast<std::int64_t>(keyed.size()));
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        return reverse ? less(y.first, x.first) : less(x.first, y.first);
    });
    std::vector<Value> out;
    for (auto& [k, item] : keyed) out.push_back(std::move(item));
    return list(std::move(out));
}

Value f_sort(Renderer& r, const Value& v, CallArgs& a) {
    const auto args = bind(a, {"reverse", "case_sensitive", "attribute"}, "sort");
    const bool reverse = truthy(args[0]);
    std::vector<std::pair<Value, Value>> keyed;
    const auto iterated = items_of(v);  // keeps a freshly built list alive through the loop
    for (const Value& item : iterated->items) keyed.emplace_back(sort_key(item, args[2], truthy(args[1])), item);
    return sorted_items(r, std::move(keyed), reverse);
}

// A mapping's (key, value) pairs sorted by key (or by value), strings compared lowercased unless case-sensitive.
Value f_dictsort(Renderer& r, const Value& v, CallArgs& a) {
    const auto args = bind(a, {"case_sensitive", "by", "reverse"}, "dictsort");
    if (!v.is(Kind::Dict)) throw Failure("dictsort: can only sort a mapping, not '" + type_name(v) + "'");
    const std::string by = given(args[1]) ? to_str(args[1]) : "key";
    if (by != "key" && by != "value") throw Failure("You can only sort by either \"key\" or \"value\"");
    const bool reverse = truthy(args[2]);
    std::vector<std::pair<Value, Value>> keyed;
    for (const auto& [k, val] : v.dict().items)
        keyed.emplace_back(sort_key(by == "key" ? k : val, Value{}, truthy(args[0])), list({k, val}, true));
    return sorted_items(r, std::move(keyed), reverse);
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
    {"d", f_default}, {"default", f_default}, {"dictsort", f_dictsort}, {"e", f_escape}, {"escape", f_escape},
    {"first", f_first}, {"float", f_float}, {"indent", f_indent}, {"int", f_int},
    {"items", f_items}, {"join", f_join}, {"last", f_last}, {"length", f_length},
    {"list", f_list}, {"lower", f_lower}, {"map", f_map}, {"reject", f_reject},
    {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse}, {"safe", f_safe},
    {"select", f_select}, {"selectattr", f_selectattr}, {"sort", f_sort}, {"string", f_string},
    {"title", f_title}, {"tojson", f_tojson}, {"trim", f_trim}, {"unique", f_unique},
    {"upper", f_upper},
};


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

}  // namespace

FilterFn find_filter(std::string_view name) {
    for (const NamedFilter& f : kFilters)
        if (f.name == name) return f.fn;
    return nullptr;
}

TestFn find_test(std::string_view name) {
    for (const NamedTest& t : kTests)
        if (t.name == name) return t.fn;
    return nullptr;
}

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

}  // namespace rill::jinja
