#include "runtime/text/jinja/render.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "runtime/base/error.h"
#include "runtime/text/jinja/lexer.h"
#include "runtime/text/jinja/py_str.h"
#include "runtime/text/jinja/render_support.h"

namespace rill::jinja {


namespace {

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

}  // namespace

Value call(const Value& fn, CallArgs& args) {
    if (fn.is(Kind::Callable)) return fn.callable().fn(args);
    if (fn.is_undefined()) fail_undefined(fn);
    throw Failure("'" + type_name(fn) + "' object is not callable");
}

namespace {

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
