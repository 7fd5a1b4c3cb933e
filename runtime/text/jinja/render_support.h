// What the renderer (render.cpp), its operations (operations.cpp) and its builtin filters and tests
// (filters.cpp) share: the state of one render with its bounds, argument binding, iteration, attribute
// and item access, and operators. Internal to the template engine.
#pragma once
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/text/jinja/parser.h"
#include "runtime/text/jinja/value.h"

namespace rill::jinja {

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

inline void step(Renderer& r, std::int64_t n = 1) {
    r.steps += n;
    if (r.steps > kMaxSteps)
        throw Failure("template ran too long (more than " + std::to_string(kMaxSteps) +
                      " loop iterations, macro calls and filter steps)");
}

// `adding`: bytes about to be appended, so a huge value is refused before it is copied.
inline void check_output(const std::string& out, std::size_t adding = 0) {
    if (out.size() + adding > kMaxBytes)
        throw Failure("output longer than " + std::to_string(kMaxBytes >> 20) + " MiB");
}

// ---- operations.cpp: helpers, access, methods and operators

[[noreturn]] void fail_undefined(const Value& v);
Value no_attribute(const Value& obj, const std::string& name);
// What a for loop, list() or `in` sees when it iterates a value.
std::shared_ptr<const List> items_of(const Value& v);
std::int64_t length_of(const Value& v);
bool contains(const Value& container, const Value& item);
// Python's binding of a call's arguments to parameters; a parameter not given stays Undefined.
std::vector<Value> bind(const CallArgs& a, std::initializer_list<std::string_view> params, const std::string& what);
bool given(const Value& v);
std::int64_t int_arg(const Value& v, const std::string& what);
std::string str_arg(const Value& v, const std::string& what);
std::optional<std::string> optional_str_arg(const Value& v, const std::string& what);

bool is_str_method(std::string_view name);
bool is_dict_method(std::string_view name);
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& stride);
// Follows "a.b.0" through items, as the attribute argument of selectattr, map, sort and join does.
Value attr_path(const Value& item, const std::string& path);
Value call_method(const Value& obj, const std::string& name, CallArgs& a);
double as_double(const Value& v);
Value arithmetic(BinaryOp op, const Value& a, const Value& b);
bool compare(CompareOp op, const Value& a, const Value& b);

// ---- filters.cpp: the builtin filters and tests

using FilterFn = Value (*)(Renderer&, const Value&, CallArgs&);
using TestFn = bool (*)(Renderer&, const Value&, CallArgs&);
FilterFn find_filter(std::string_view name);  // nullptr: no such filter
TestFn find_test(std::string_view name);
Value apply_filter(Renderer& r, const std::string& name, const Value& v, CallArgs& args);
bool run_test(Renderer& r, const std::string& name, const Value& v, CallArgs& args);

// ---- render.cpp

Value call(const Value& fn, CallArgs& args);

}  // namespace rill::jinja
