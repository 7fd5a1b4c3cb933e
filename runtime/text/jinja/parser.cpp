#include "runtime/text/jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include "runtime/base/error.h"
#include "runtime/text/jinja/lexer.h"

namespace rill::jinja {

namespace {

constexpr int kMaxRecursion = 100;  // nested blocks, parentheses and unary operators, together
constexpr int kMaxExprDepth = 256;  // height of one expression's tree (long "a + b + …" chains)

template <class... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

int tree_height(const Expr::Node& node) {
    int h = 0;
    auto take = [&](const ExprPtr& e) {
        if (e) h = std::max(h, e->depth);
    };
    auto args = [&](const std::vector<Arg>& a) {
        for (const Arg& x : a) take(x.value);
    };
    std::visit(Overloaded{
                   [](const LiteralExpr&) {},
                   [](const NameExpr&) {},
                   [&](const ListExpr& x) {
                       for (const auto& e : x.items) take(e);
                   },
                   [&](const DictExpr& x) {
                       for (const auto& [k, v] : x.items) {
                           take(k);
                           take(v);
                       }
                   },
                   [&](const AttrExpr& x) { take(x.object); },
                   [&](const ItemExpr& x) {
                       take(x.object);
                       take(x.index);
                   },
                   [&](const SliceExpr& x) {
                       take(x.object);
                       take(x.start);
                       take(x.stop);
                       take(x.step);
                   },
                   [&](const CallExpr& x) {
                       take(x.callee);
                       args(x.args);
                   },
                   [&](const FilterExpr& x) {
                       take(x.operand);
                       args(x.filter.args);
                   },
                   [&](const TestExpr& x) {
                       take(x.operand);
                       args(x.args);
                   },
                   [&](const UnaryExpr& x) { take(x.operand); },
                   [&](const BinaryExpr& x) {
                       take(x.left);
                       take(x.right);
                   },
                   [&](const CompareExpr& x) {
                       take(x.first);
                       for (const auto& [op, e] : x.rest) take(e);
                   },
                   [&](const CondExpr& x) {
                       take(x.condition);
                       take(x.then);
                       take(x.otherwise);
                   },
               },
               node);
    return h;
}

std::string describe(const Token& t) {
    switch (t.kind) {
        case TokenKind::Text: return "template text";
        case TokenKind::BlockBegin: return "'{%'";
        case TokenKind::BlockEnd: return "'%}'";
        case TokenKind::VarBegin: return "'{{'";
        case TokenKind::VarEnd: return "'}}'";
        case TokenKind::Name:
        case TokenKind::Op: return "'" + t.text + "'";
        case TokenKind::String: return "a string";
        case TokenKind::Int:
        case TokenKind::Float: return "the number " + t.text;
        case TokenKind::End: return "the end of the template";
    }
    return "?";
}

struct Parser {
    const Lexed& lexed;
    std::size_t i = 0;
    int recursion = 0;
    int loops = 0;  // for loops around the current statement, for break and continue
    int loop_mentions = 0;  // how many times the name `loop` has been parsed so far
    std::vector<std::pair<std::string, Pos>> open_blocks = {};

    struct Guard {
        Parser& p;
        Guard(Parser& parser, const Token& at) : p(parser) {
            if (++p.recursion > kMaxRecursion) p.fail(at, "template nested too deeply");
        }
        ~Guard() { --p.recursion; }
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;
    };

    [[noreturn]] void fail(const Token& at, const std::string& message) const {
        throw Error(error_at(lexed.source, at.line, at.column, message));
    }
    [[noreturn]] void fail(Pos at, const std::string& message) const {
        throw Error(error_at(lexed.source, at.line, at.column, message));
    }

    const Token& peek(std::size_t ahead = 0) const {
        return lexed.tokens[std::min(i + ahead, lexed.tokens.size() - 1)];
    }
    const Token& next() {
        const Token& t = peek();
        if (i < lexed.tokens.size() - 1) ++i;
        return t;
    }
    static Pos pos_of(const Token& t) { return {t.line, t.column}; }
    bool at_op(std::string_view op, std::size_t ahead = 0) const {
        return peek(ahead).kind == TokenKind::Op && peek(ahead).text == op;
    }
    bool at_name(std::string_view name, std::size_t ahead = 0) const {
        return peek(ahead).kind == TokenKind::Name && peek(ahead).text == name;
    }
    void expect_op(std::string_view op) {
        if (!at_op(op)) fail(peek(), "expected '" + std::string(op) + "', found " + describe(peek()));
        next();
    }
    void expect(TokenKind kind, std::string_view what) {
        if (peek().kind != kind) fail(peek(), "expected " + std::string(what) + ", found " + describe(peek()));
        next();
    }
    void expect_block_end() { expect(TokenKind::BlockEnd, "'%}'"); }
    // A tag that opens a body may end in a colon, Python style: "{% else: %}".
    void begin_body() {
        if (at_op(":")) next();
        expect_block_end();
    }
    std::string expect_name(std::string_view what) {
        if (peek().kind != TokenKind::Name) fail(peek(), "expected " + std::string(what) + ", found " + describe(peek()));
        return next().text;
    }

    ExprPtr make(Pos pos, Expr::Node node) {
        auto e = std::make_unique<Expr>();
        e->pos = pos;
        e->depth = 1 + tree_height(node);
        e->node = std::move(node);
        if (e->depth > kMaxExprDepth) fail(pos, "expression nested too deeply");
        return e;
    }

    // ---- statements ---------------------------------------------------------------------------

    // Parses statements into `body` until a block tag named in `ends`, returning that name with the cursor
    // on it. With no `ends`, runs to the end of the template.
    std::string parse_body(Body& body, std::initializer_list<std::string_view> ends) {
        while (true) {
            const Token& t = peek();
            switch (t.kind) {
                case TokenKind::Text:
                    body.push_back(Stmt{pos_of(t), TextStmt{t.text}});
                    next();
                    break;
                case TokenKind::VarBegin: {
                    next();
                    ExprPtr e = parse_tuple(true, false);
                    expect(TokenKind::VarEnd, "'}}'");
                    body.push_back(Stmt{pos_of(t), OutputStmt{std::move(e)}});
                    break;
                }
                case TokenKind::BlockBegin: {
                    const Token& name = peek(1);
                    if (name.kind == TokenKind::Name &&
                        std::find(ends.begin(), ends.end(), std::string_view(name.text)) != ends.end()) {
                        next();
                        return name.text;
                    }
                    next();
                    parse_statement(body, t);
                    break;
                }
                case TokenKind::End:
                    if (ends.size() == 0) return "";
                    fail(open_blocks.back().second, "'" + open_blocks.back().first + "' is never closed: no {% " +
                                                        std::string(*(ends.end() - 1)) + " %}");
                default: fail(t, "unexpected " + describe(t));
            }
        }
    }

    // After an end tag's name: the tag must close right there.
    void close_tag() {
        next();
        expect_block_end();
    }

    void parse_statement(Body& body, const Token& begin) {
        Guard guard(*this, begin);
        const Token& name_token = peek();
        if (name_token.kind != TokenKind::Name) fail(name_token, "expected a tag name, found " + describe(name_token));
        const std::string name = next().text;
        const Pos pos = pos_of(begin);
        if (name == "if") return body.push_back(Stmt{pos, parse_if(pos)});
        if (name == "for") return body.push_back(Stmt{pos, parse_for(pos)});
        if (name == "set") return body.push_back(Stmt{pos, parse_set(pos)});
        if (name == "macro") return body.push_back(Stmt{pos, parse_macro(pos)});
        if (name == "filter") return body.push_back(Stmt{pos, parse_filter_block(pos)});
        if (name == "with") return body.push_back(Stmt{pos, parse_with(pos)});
        if (name == "generation") {
            // Hugging Face's {% generation %} marks assistant text for masks; it renders its body unchanged.
            begin_body();
            FilterBlockStmt s;
            open_blocks.emplace_back("generation", pos);
            parse_body(s.body, {"endgeneration"});
            open_blocks.pop_back();
            close_tag();
            return body.push_back(Stmt{pos, std::move(s)});
        }
        if (name == "break" || name == "continue") {
            if (loops == 0) fail(name_token, "'" + name + "' outside a for loop");
            expect_block_end();
            if (name == "break") return body.push_back(Stmt{pos, BreakStmt{}});
            return body.push_back(Stmt{pos, ContinueStmt{}});
        }
        static constexpr std::string_view kUnsupported[] = {"call", "include", "import", "from", "extends", "block",
                                                            "do", "autoescape", "trans", "raw"};
        if (std::find(std::begin(kUnsupported), std::end(kUnsupported), name) != std::end(kUnsupported))
            fail(name_token, "the '" + name + "' tag is not supported");
        static constexpr std::string_view kEnds[] = {"elif", "else", "endif", "endfor", "endset", "endmacro",
                                                     "endfilter", "endwith", "endgeneration", "endraw"};
        if (std::find(std::begin(kEnds), std::end(kEnds), name) != std::end(kEnds)) {
            if (open_blocks.empty()) fail(name_token, "unexpected '" + name + "': no block is open");
            fail(name_token, "unexpected '" + name + "' inside the '" + open_blocks.back().first + "' from line " +
                                 std::to_string(open_blocks.back().second.line));
        }
        fail(name_token, "unknown tag '" + name + "'");
    }

    IfStmt parse_if(Pos pos) {
        IfStmt s;
        open_blocks.emplace_back("if", pos);
        ExprPtr condition = parse_tuple(false, false);
        begin_body();
        while (true) {
            Body branch;
            const std::string end = parse_body(branch, {"elif", "else", "endif"});
            s.branches.emplace_back(std::move(condition), std::move(branch));
            next();
            if (end == "elif") {
                condition = parse_tuple(false, false);
                begin_body();
                continue;
            }
            if (end == "else") begin_body();
            else expect_block_end();
            if (end == "else") {
                parse_body(s.otherwise, {"endif"});
                close_tag();
            }
            break;
        }
        open_blocks.pop_back();
        return s;
    }

    ForStmt parse_for(Pos pos) {
        ForStmt s;
        open_blocks.emplace_back("for", pos);
        const bool parenthesized = at_op("(");
        if (parenthesized) next();
        s.targets.push_back(expect_name("a loop variable"));
        while (at_op(",")) {
            next();
            s.unpack = true;
            if (peek().kind != TokenKind::Name) break;
            s.targets.push_back(next().text);
        }
        if (parenthesized) expect_op(")");  // "(a)" is just a; only a comma makes a tuple
        if (!at_name("in")) fail(peek(), "expected 'in', found " + describe(peek()));
        next();
        s.iterable = parse_tuple(false, false);
        if (at_name("if")) {
            next();
            s.filter = parse_expression(true);
        }
        if (at_name("recursive")) fail(peek(), "recursive for loops are not supported");
        begin_body();
        ++loops;
        const int mentions_before = loop_mentions;
        const std::string end = parse_body(s.body, {"else", "endfor"});
        s.uses_loop = loop_mentions != mentions_before;
        --loops;
        if (end == "else") {
            next();
            begin_body();
            parse_body(s.otherwise, {"endfor"});
        }
        close_tag();
        open_blocks.pop_back();
        return s;
    }

    SetStmt parse_set(Pos pos) {
        SetStmt s;
        const bool parenthesized = at_op("(");
        if (parenthesized) next();
        while (true) {
            AssignTarget target{expect_name("a variable name"), ""};
            if (at_op(".")) {
                next();
                target.attr = expect_name("an attribute name");
            }
            s.target.targets.push_back(std::move(target));
            if (!at_op(",")) break;
            next();
            s.target.unpack = true;
            if (parenthesized && at_op(")")) break;
        }
        if (parenthesized) expect_op(")");
        if (at_op("=")) {
            next();
            s.value = parse_tuple(true, false);
            expect_block_end();
            return s;
        }
        if (s.target.unpack) fail(peek(), "expected '=', found " + describe(peek()));
        while (at_op("|")) {
            next();
            s.filters.push_back(parse_filter_call());
        }
        begin_body();
        open_blocks.emplace_back("set", pos);
        parse_body(s.body, {"endset"});
        open_blocks.pop_back();
        close_tag();
        return s;
    }

    MacroStmt parse_macro(Pos pos) {
        MacroStmt s;
        s.name = expect_name("a macro name");
        expect_op("(");
        while (!at_op(")")) {
            if (!s.params.empty()) expect_op(",");
            if (at_op(")")) break;
            const Token& param = peek();
            MacroParam p{expect_name("a parameter name"), nullptr};
            if (at_op("=")) {
                next();
                p.default_value = parse_expression(true);
            } else if (!s.params.empty() && s.params.back().default_value) {
                fail(param, "a parameter without a default follows one with a default");
            }
            s.params.push_back(std::move(p));
        }
        next();
        begin_body();
        open_blocks.emplace_back("macro", pos);
        const int outer_loops = loops;
        loops = 0;
        parse_body(s.body, {"endmacro"});
        loops = outer_loops;
        open_blocks.pop_back();
        close_tag();
        return s;
    }

    FilterBlockStmt parse_filter_block(Pos pos) {
        FilterBlockStmt s;
        s.filters.push_back(parse_filter_call());
        while (at_op("|")) {
            next();
            s.filters.push_back(parse_filter_call());
        }
        begin_body();
        open_blocks.emplace_back("filter", pos);
        parse_body(s.body, {"endfilter"});
        open_blocks.pop_back();
        close_tag();
        return s;
    }

    WithStmt parse_with(Pos pos) {
        WithStmt s;
        while (peek().kind != TokenKind::BlockEnd && !at_op(":")) {
            if (!s.assignments.empty()) expect_op(",");
            std::string name = expect_name("a variable name");
            expect_op("=");
            s.assignments.emplace_back(std::move(name), parse_expression(true));
        }
        begin_body();
        open_blocks.emplace_back("with", pos);
        parse_body(s.body, {"endwith"});
        open_blocks.pop_back();
        close_tag();
        return s;
    }

    // ---- expressions, from the loosest binding to the tightest ----------------------------------------

    // A comma-separated list without brackets is a tuple: "{% set a, b = 1, 2 %}".
    ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens) {
        const Pos pos = pos_of(peek());
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) expect_op(",");
            const Token& t = peek();
            if (t.kind == TokenKind::VarEnd || t.kind == TokenKind::BlockEnd || t.kind == TokenKind::End ||
                (t.kind == TokenKind::Op && t.text == ")"))
                break;
            items.push_back(parse_expression(with_condexpr));
            if (!at_op(",")) break;
            is_tuple = true;
        }
        if (!is_tuple) {
            if (!items.empty()) return std::move(items.front());
            if (!explicit_parens) fail(peek(), "expected an expression, found " + describe(peek()));
        }
        return make(pos, ListExpr{std::move(items), true});
    }

    ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

    ExprPtr parse_condexpr() {
        ExprPtr e = parse_or();
        while (at_name("if")) {
            const Pos pos = pos_of(next());
            ExprPtr condition = parse_or();
            ExprPtr otherwise;
            if (at_name("else")) {
                next();
                otherwise = parse_condexpr();
            }
            e = make(pos, CondExpr{std::move(condition), std::move(e), std::move(otherwise)});
        }
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr e = parse_and();
        while (at_name("or")) {
            const Pos pos = pos_of(next());
            e = make(pos, BinaryExpr{BinaryOp::Or, std::move(e), parse_and()});
        }
        return e;
    }

    ExprPtr parse_and() {
        ExprPtr e = parse_not();
        while (at_name("and")) {
            const Pos pos = pos_of(next());
            e = make(pos, BinaryExpr{BinaryOp::And, std::move(e), parse_not()});
        }
        return e;
    }

    ExprPtr parse_not() {
        if (at_name("not")) {
            Guard guard(*this, peek());
            const Pos pos = pos_of(next());
            return make(pos, UnaryExpr{UnaryOp::Not, parse_not()});
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        const Pos pos = pos_of(peek());
        ExprPtr first = parse_math1();
        std::vector<std::pair<CompareOp, ExprPtr>> rest;
        while (true) {
            CompareOp op;
            const Token& t = peek();
            if (t.kind == TokenKind::Op && t.text == "==") op = CompareOp::Eq;
            else if (t.kind == TokenKind::Op && t.text == "!=") op = CompareOp::Ne;
            else if (t.kind == TokenKind::Op && t.text == "<") op = CompareOp::Lt;
            else if (t.kind == TokenKind::Op && t.text == "<=") op = CompareOp::Le;
            else if (t.kind == TokenKind::Op && t.text == ">") op = CompareOp::Gt;
            else if (t.kind == TokenKind::Op && t.text == ">=") op = CompareOp::Ge;
            else if (at_name("in")) op = CompareOp::In;
            else if (at_name("not") && at_name("in", 1)) {
                next();
                op = CompareOp::NotIn;
            } else break;
            next();
            rest.emplace_back(op, parse_math1());
        }
        if (rest.empty()) return first;
        return make(pos, CompareExpr{std::move(first), std::move(rest)});
    }

    ExprPtr parse_binary_level(ExprPtr (Parser::*operand)(),
                               std::initializer_list<std::pair<std::string_view, BinaryOp>> ops) {
        ExprPtr e = (this->*operand)();
        while (true) {
            const Token& t = peek();
            if (t.kind != TokenKind::Op) return e;
            const auto op = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.first == t.text; });
            if (op == ops.end()) return e;
            const Pos pos = pos_of(next());
            ExprPtr right = (this->*operand)();
            e = make(pos, BinaryExpr{op->second, std::move(e), std::move(right)});
        }
    }

    ExprPtr parse_math1() {
        return parse_binary_level(&Parser::parse_concat, {{"+", BinaryOp::Add}, {"-", BinaryOp::Sub}});
    }
    ExprPtr parse_concat() { return parse_binary_level(&Parser::parse_math2, {{"~", BinaryOp::Concat}}); }
    ExprPtr parse_math2() {
        return parse_binary_level(&Parser::parse_pow, {{"*", BinaryOp::Mul},
                                                       {"/", BinaryOp::Div},
                                                       {"//", BinaryOp::FloorDiv},
                                                       {"%", BinaryOp::Mod}});
    }
    ExprPtr parse_pow() { return parse_binary_level(&Parser::parse_unary_filtered, {{"**", BinaryOp::Pow}}); }
    ExprPtr parse_unary_filtered() { return parse_unary(true); }

    ExprPtr parse_unary(bool with_filter) {
        Guard guard(*this, peek());
        ExprPtr e;
        if (at_op("-") || at_op("+")) {
            const Token& t = next();
            const UnaryOp op = t.text == "-" ? UnaryOp::Neg : UnaryOp::Pos;
            e = make(pos_of(t), UnaryExpr{op, parse_unary(false)});
        } else {
            e = parse_primary();
        }
        e = parse_postfix(std::move(e));
        if (with_filter) e = parse_filter_expr(std::move(e));
        return e;
    }

    ExprPtr parse_primary() {
        const Token& t = peek();
        const Pos pos = pos_of(t);
        switch (t.kind) {
            case TokenKind::Name: {
                next();
                if (t.text == "true" || t.text == "True") return make(pos, LiteralExpr{boolean(true)});
                if (t.text == "false" || t.text == "False") return make(pos, LiteralExpr{boolean(false)});
                if (t.text == "none" || t.text == "None") return make(pos, LiteralExpr{none()});
                if (t.text == "loop") ++loop_mentions;
                return make(pos, NameExpr{t.text});
            }
            case TokenKind::String: {
                std::string text;
                while (peek().kind == TokenKind::String) text += next().text;  // "a" "b" is "ab"
                return make(pos, LiteralExpr{string(std::move(text))});
            }
            case TokenKind::Int: next(); return make(pos, LiteralExpr{integer(t.int_value)});
            case TokenKind::Float: next(); return make(pos, LiteralExpr{number(t.float_value)});
            case TokenKind::Op:
                if (t.text == "(") {
                    next();
                    ExprPtr e = parse_tuple(true, true);
                    expect_op(")");
                    return e;
                }
                if (t.text == "[") {
                    next();
                    std::vector<ExprPtr> items;
                    while (!at_op("]")) {
                        if (!items.empty()) expect_op(",");
                        if (at_op("]")) break;
                        items.push_back(parse_expression(true));
                    }
                    next();
                    return make(pos, ListExpr{std::move(items)});
                }
                if (t.text == "{") {
                    next();
                    std::vector<std::pair<ExprPtr, ExprPtr>> items;
                    while (!at_op("}")) {
                        if (!items.empty()) expect_op(",");
                        if (at_op("}")) break;
                        ExprPtr key = parse_expression(true);
                        expect_op(":");
                        items.emplace_back(std::move(key), parse_expression(true));
                    }
                    next();
                    return make(pos, DictExpr{std::move(items)});
                }
                break;
            default: break;
        }
        fail(t, "unexpected " + describe(t));
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            const Token& t = peek();
            const Pos pos = pos_of(t);
            if (at_op(".")) {
                next();
                const Token& member = peek();
                if (member.kind == TokenKind::Name) {
                    e = make(pos, AttrExpr{std::move(e), next().text});
                } else if (member.kind == TokenKind::Int) {
                    next();
                    e = make(pos, ItemExpr{std::move(e), make(pos_of(member), LiteralExpr{integer(member.int_value)})});
                } else {
                    fail(member, "expected an attribute name after '.', found " + describe(member));
                }
            } else if (at_op("[")) {
                next();
                e = parse_subscript(std::move(e), pos);
            } else if (at_op("(")) {
                const Pos start = e->pos;  // errors in a call point at what is called
                std::vector<Arg> args = parse_args();
                e = make(start, CallExpr{std::move(e), std::move(args)});
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr object, Pos pos) {
        ExprPtr start;
        if (at_op("]")) {  // x[] is x[()], as in Jinja
            next();
            return make(pos, ItemExpr{std::move(object), make(pos, ListExpr{{}, true})});
        }
        if (!at_op(":")) {
            start = parse_expression(true);
            if (at_op(",")) {  // x[a, b] is x[(a, b)]
                std::vector<ExprPtr> items;
                items.push_back(std::move(start));
                while (at_op(",")) {
                    next();
                    if (at_op("]")) break;
                    items.push_back(parse_expression(true));
                }
                expect_op("]");
                return make(pos, ItemExpr{std::move(object), make(pos, ListExpr{std::move(items), true})});
            }
            if (!at_op(":")) {
                expect_op("]");
                return make(pos, ItemExpr{std::move(object), std::move(start)});
            }
        }
        next();
        ExprPtr stop, step;
        if (!at_op("]") && !at_op(":")) stop = parse_expression(true);
        if (at_op(":")) {
            next();
            if (!at_op("]")) step = parse_expression(true);
        }
        expect_op("]");
        return make(pos, SliceExpr{std::move(object), std::move(start), std::move(stop), std::move(step)});
    }

    std::vector<Arg> parse_args() {
        expect_op("(");
        std::vector<Arg> args;
        bool named = false;
        while (!at_op(")")) {
            if (!args.empty()) expect_op(",");
            if (at_op(")")) break;
            if (at_op("*") || at_op("**")) fail(peek(), "*args and **kwargs in calls are not supported");
            if (peek().kind == TokenKind::Name && at_op("=", 1)) {
                std::string name = next().text;
                next();
                args.push_back(Arg{std::move(name), parse_expression(true)});
                named = true;
            } else {
                if (named) fail(peek(), "a positional argument follows a keyword argument");
                args.push_back(Arg{"", parse_expression(true)});
            }
        }
        next();
        return args;
    }

    std::string dotted_name(std::string_view what) {
        std::string name = expect_name(what);
        while (at_op(".") && peek(1).kind == TokenKind::Name) {
            next();
            name += "." + next().text;
        }
        return name;
    }

    FilterCall parse_filter_call() {
        FilterCall f;
        f.pos = pos_of(peek());
        f.name = dotted_name("a filter name");
        if (at_op("(")) f.args = parse_args();
        return f;
    }

    ExprPtr parse_filter_expr(ExprPtr e) {
        while (true) {
            const Pos pos = pos_of(peek());
            if (at_op("|")) {
                next();
                FilterCall f = parse_filter_call();
                e = make(f.pos, FilterExpr{std::move(e), std::move(f)});
            } else if (at_name("is")) {
                next();
                e = parse_test(std::move(e), pos);
            } else if (at_op("(")) {
                const Pos start = e->pos;
                std::vector<Arg> args = parse_args();
                e = make(start, CallExpr{std::move(e), std::move(args)});
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_test(ExprPtr operand, Pos pos) {
        TestExpr t;
        t.operand = std::move(operand);
        if (at_name("not")) {
            next();
            t.negated = true;
        }
        t.name = dotted_name("a test name");
        const Token& a = peek();
        if (at_op("(")) {
            t.args = parse_args();
        } else if ((a.kind == TokenKind::Name && a.text != "else" && a.text != "or" && a.text != "and") ||
                   a.kind == TokenKind::String || a.kind == TokenKind::Int || a.kind == TokenKind::Float ||
                   at_op("[") || at_op("{")) {
            // One argument without parentheses: "x is divisibleby 3", "x is sameas none".
            if (at_name("is")) fail(a, "tests cannot be chained with 'is'");
            t.args.push_back(Arg{"", parse_postfix(parse_primary())});
        }
        return make(pos, std::move(t));
    }
};

}  // namespace

Template parse(std::string_view source) {
    Lexed lexed = lex(source);
    Parser parser{lexed};
    Template t;
    parser.parse_body(t.body, {});
    t.source = std::move(lexed.source);
    return t;
}

}  // namespace rill::jinja
