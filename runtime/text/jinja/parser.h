// The syntax tree of a Jinja template and the parser that builds it, following Jinja2's grammar and
// operator precedence (filters and tests bind tighter than arithmetic: `a + b | trim` trims b).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/text/jinja/value.h"

namespace rill::jinja {

struct Pos {
    int line = 0;
    int column = 0;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Arg {
    std::string name;  // empty: positional
    ExprPtr value;
};

struct FilterCall {
    Pos pos;
    std::string name;
    std::vector<Arg> args;
};

struct LiteralExpr {
    Value value;
};
struct ListExpr {
    std::vector<ExprPtr> items;
    bool tuple = false;
};
struct DictExpr {
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
};
struct NameExpr {
    std::string name;
};
struct AttrExpr {  // object.name
    ExprPtr object;
    std::string name;
};
struct ItemExpr {  // object[index]
    ExprPtr object;
    ExprPtr index;
};
struct SliceExpr {  // object[start:stop:step], each part optional
    ExprPtr object, start, stop, step;
};
struct CallExpr {
    ExprPtr callee;
    std::vector<Arg> args;
};
struct FilterExpr {
    ExprPtr operand;
    FilterCall filter;
};
struct TestExpr {  // operand is [not] name(args)
    ExprPtr operand;
    std::string name;
    std::vector<Arg> args;
    bool negated = false;
};
enum class UnaryOp { Not, Neg, Pos };
struct UnaryExpr {
    UnaryOp op;
    ExprPtr operand;
};
enum class BinaryOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Concat, And, Or };
struct BinaryExpr {
    BinaryOp op;
    ExprPtr left, right;
};
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };
struct CompareExpr {  // a < b < c compares pairwise, as in Python
    ExprPtr first;
    std::vector<std::pair<CompareOp, ExprPtr>> rest;
};
struct CondExpr {  // then if condition else otherwise; no else: undefined
    ExprPtr condition, then, otherwise;
};

struct Expr {
    using Node = std::variant<LiteralExpr, ListExpr, DictExpr, NameExpr, AttrExpr, ItemExpr, SliceExpr, CallExpr,
                              FilterExpr, TestExpr, UnaryExpr, BinaryExpr, CompareExpr, CondExpr>;
    Pos pos;
    int depth = 1;  // height of the tree below, bounded so evaluating it cannot exhaust the stack
    Node node;
};

struct Stmt;
using Body = std::vector<Stmt>;

struct TextStmt {
    std::string text;
};
struct OutputStmt {
    ExprPtr expr;
};
struct IfStmt {
    std::vector<std::pair<ExprPtr, Body>> branches;  // if and elifs
    Body otherwise;
};
struct ForStmt {
    std::vector<std::string> targets;
    bool unpack = false;  // "for k, v in …"
    ExprPtr iterable;
    ExprPtr filter;  // "for x in xs if cond"; may be null
    Body body;
    Body otherwise;         // runs when nothing was iterated
    bool uses_loop = true;  // whether the body mentions `loop`; building it for every item is costly
};
struct AssignTarget {
    std::string name;
    std::string attr;  // "set ns.attr = …": name is the namespace
};
struct SetTarget {
    std::vector<AssignTarget> targets;
    bool unpack = false;  // "set a, ns.b = …"
};
struct SetStmt {
    SetTarget target;
    ExprPtr value;  // null for a block set, which captures `body` through `filters`
    std::vector<FilterCall> filters;
    Body body;
};
struct MacroParam {
    std::string name;
    ExprPtr default_value;  // may be null
};
struct MacroStmt {
    std::string name;
    std::vector<MacroParam> params;
    Body body;
};
struct FilterBlockStmt {
    std::vector<FilterCall> filters;
    Body body;
};
struct WithStmt {
    std::vector<std::pair<std::string, ExprPtr>> assignments;
    Body body;
};
struct BreakStmt {};
struct ContinueStmt {};

struct Stmt {
    using Node = std::variant<TextStmt, OutputStmt, IfStmt, ForStmt, SetStmt, MacroStmt, FilterBlockStmt, WithStmt,
                              BreakStmt, ContinueStmt>;
    Pos pos;
    Node node;
};

struct Template {
    std::string source;  // as the lexer normalized it; error messages quote it
    Body body;
};

// Throws rill::Error naming the line and column of the first syntax error.
Template parse(std::string_view source);

}  // namespace rill::jinja
