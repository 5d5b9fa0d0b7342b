// The chat-template parser: recursive descent with Jinja2's grammar and precedence
// (inline if < or < and < not < comparisons < + - < ~ < * / // % < ** < unary - + <
// filters, tests, calls, attribute/item access). Written from the Python port's _Parser;
// error messages are the same, so both ports fail alike.
#include <algorithm>
#include <cmath>

#include "genai/template_ast.h"

namespace nxrt::genai::tmpl {
namespace {

constexpr int kMaxNesting = 64;  // blocks and parentheses, as the Python port

std::string alternatives(const std::vector<std::string>& names) {
  std::string out;
  for (size_t k = 0; k < names.size(); ++k) {
    if (k) out += k + 1 == names.size() ? " or " : ", ";
    out += "'" + names[k] + "'";
  }
  return out;
}

NodePtr make(NodeKind kind, size_t pos) { return std::make_unique<Node>(kind, pos); }

void collect_names(const Node* n, std::vector<std::string>& names) {
  if (!n) return;
  if (n->kind == NodeKind::kName) names.push_back(n->name);
  for (const auto& k : n->kids) collect_names(k.get(), names);
  for (const auto& k : n->args) collect_names(k.get(), names);
  for (const auto& kv : n->kwargs) collect_names(kv.second.get(), names);
  collect_names(n->star.get(), names);
  collect_names(n->dstar.get(), names);
  for (const auto& b : n->bodies)
    for (const auto& k : b) collect_names(k.get(), names);
}

struct Opener {
  std::string tag;
  int line = 0, column = 0;
};

class Parser {
 public:
  Parser(std::vector<Token> toks, const Locate& locate) : toks_(std::move(toks)), locate_(locate) {}

  Body parse() {
    std::string tag;
    return subparse({}, Opener{}, &tag);
  }

 private:
  const Token& cur() const { return toks_[i_]; }
  const Token& look() const { return toks_[std::min(i_ + 1, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[i_];
    if (t.kind != TokKind::kEof) ++i_;
    return t;
  }
  [[noreturn]] void error(std::string message, const Token* tok = nullptr) const {
    throw TemplateException{std::move(message), (tok ? *tok : cur()).pos};
  }
  bool is_op(const char* v, const Token* t = nullptr) const {
    const Token& tok = t ? *t : cur();
    return tok.kind == TokKind::kOp && tok.text == v;
  }
  bool is_name(const char* v, const Token* t = nullptr) const {
    const Token& tok = t ? *t : cur();
    return tok.kind == TokKind::kName && tok.text == v;
  }
  bool skip_op(const char* v) {
    if (!is_op(v)) return false;
    ++i_;
    return true;
  }
  bool skip_name(const char* v) {
    if (!is_name(v)) return false;
    ++i_;
    return true;
  }
  const Token& expect_op(const char* v) {
    if (!is_op(v)) error(std::string("expected '") + v + "', got " + cur().describe());
    return next();
  }
  const Token& expect_name(const char* v = nullptr) {
    const Token& t = cur();
    if (t.kind != TokKind::kName || (v && t.text != v))
      error(std::string("expected ") + (v ? std::string("'") + v + "'" : "a name") + ", got " +
            t.describe());
    return next();
  }
  void expect_block_end(const std::string& tag) {
    if (cur().kind != TokKind::kBlockEnd)
      error("expected '%}' to end the '" + tag + "' tag, got " + cur().describe());
    next();
  }

  Body subparse(const std::vector<std::string>& end_tags, const Opener& opener,
                std::string* found) {
    Body nodes;
    while (true) {
      const Token& tok = cur();
      if (tok.kind == TokKind::kData) {
        auto n = make(NodeKind::kData, tok.pos);
        n->name = tok.text;
        nodes.push_back(std::move(n));
        next();
      } else if (tok.kind == TokKind::kVarBegin) {
        size_t pos = tok.pos;
        next();
        NodePtr expr = parse_tuple();
        if (cur().kind != TokKind::kVarEnd)
          error("expected '}}' to end the print statement, got " + cur().describe());
        next();
        auto n = make(NodeKind::kOutput, pos);
        n->kids.push_back(std::move(expr));
        nodes.push_back(std::move(n));
      } else if (tok.kind == TokKind::kBlockBegin) {
        size_t pos = tok.pos;
        next();
        const Token& name = cur();
        if (name.kind != TokKind::kName) error("expected a tag name, got " + name.describe());
        if (std::find(end_tags.begin(), end_tags.end(), name.text) != end_tags.end()) {
          *found = name.text;
          next();
          return nodes;
        }
        nodes.push_back(parse_statement(pos, end_tags, opener));
      } else if (tok.kind == TokKind::kEof) {
        if (!end_tags.empty())
          error("unexpected end of template: the '" + opener.tag + "' tag at line " +
                std::to_string(opener.line) + ", column " + std::to_string(opener.column) +
                " is not closed (expected " + alternatives(end_tags) + ")");
        found->clear();
        return nodes;
      } else {
        error("unexpected " + tok.describe());
      }
    }
  }

  NodePtr parse_statement(size_t begin, const std::vector<std::string>& end_tags,
                          const Opener& outer) {
    const Token& tok = cur();
    const std::string name = tok.text;
    static const char* const kKnown[] = {"if",     "for",  "set",        "macro", "call",
                                         "filter", "with", "generation", "break", "continue"};
    bool known =
        std::any_of(std::begin(kKnown), std::end(kKnown), [&](const char* k) { return name == k; });
    if (!known) {
      static const char* const kUnsupported[] = {"include", "import", "from",
                                                 "extends", "block",  "autoescape",
                                                 "do",      "trans",  "pluralize"};
      for (const char* u : kUnsupported)
        if (name == u) error("the '" + name + "' tag is not supported", &tok);
      if (!end_tags.empty())
        error("unexpected tag '" + name + "' (expected " + alternatives(end_tags) + " for the '" +
                  outer.tag + "' tag at line " + std::to_string(outer.line) + ", column " +
                  std::to_string(outer.column) + ")",
              &tok);
      if (name.rfind("end", 0) == 0 || name == "else" || name == "elif")
        error("unexpected tag '" + name + "': no open block takes it", &tok);
      error("unknown tag '" + name + "'", &tok);
    }
    auto [line, col] = locate_(tok.pos);
    Opener opener{name, line, col};
    const Token& tag_tok = tok;
    next();
    if (++nesting_ > kMaxNesting) error("blocks are nested too deeply", &tag_tok);
    NodePtr node;
    if (name == "if")
      node = stmt_if(begin, opener);
    else if (name == "for")
      node = stmt_for(begin, opener);
    else if (name == "set")
      node = stmt_set(begin, opener);
    else if (name == "macro")
      node = stmt_macro(begin, opener);
    else if (name == "call")
      node = stmt_call(begin, opener);
    else if (name == "filter")
      node = stmt_filter(begin, opener);
    else if (name == "with")
      node = stmt_with(begin, opener);
    else if (name == "generation")
      node = stmt_generation(begin, opener);
    else
      node = loop_control(begin, name);
    --nesting_;
    return node;
  }

  NodePtr stmt_if(size_t pos, const Opener& opener) {
    auto node = make(NodeKind::kIf, pos);
    NodePtr test = parse_tuple(false, false);
    while (true) {
      expect_block_end("if");
      std::string tag;
      Body body = subparse({"elif", "else", "endif"}, opener, &tag);
      node->kids.push_back(std::move(test));
      node->bodies.push_back(std::move(body));
      if (tag == "elif") {
        test = parse_tuple(false, false);
        continue;
      }
      Body otherwise;
      if (tag == "else") {
        expect_block_end("else");
        otherwise = subparse({"endif"}, opener, &tag);
      }
      expect_block_end("endif");
      node->bodies.push_back(std::move(otherwise));
      return node;
    }
  }

  void check_not_loop(const Node* target, const Token& tok) {
    std::vector<std::string> names;
    collect_names(target, names);
    if (std::find(names.begin(), names.end(), "loop") != names.end())
      error("cannot assign to the special 'loop' variable in a for loop", &tok);
  }

  NodePtr stmt_for(size_t pos, const Opener& opener) {
    const Token& tok = cur();
    NodePtr target = parse_assign_target({"in"});
    check_not_loop(target.get(), tok);
    expect_name("in");
    NodePtr iterable = parse_tuple(false, false, {"recursive"});
    NodePtr test;
    if (skip_name("if")) test = parse_expression();
    if (is_name("recursive")) error("recursive for loops are not supported");
    expect_block_end("for");
    ++loops_;
    ++for_bodies_;
    std::string tag;
    Body body = subparse({"endfor", "else"}, opener, &tag);
    --loops_;
    --for_bodies_;
    Body otherwise;
    if (tag == "else") {
      expect_block_end("else");
      otherwise = subparse({"endfor"}, opener, &tag);
    }
    expect_block_end("endfor");
    auto node = make(NodeKind::kFor, pos);
    node->kids.push_back(std::move(target));
    node->kids.push_back(std::move(iterable));
    node->kids.push_back(std::move(test));
    node->bodies.push_back(std::move(body));
    node->bodies.push_back(std::move(otherwise));
    return node;
  }

  NodePtr stmt_set(size_t pos, const Opener& opener) {
    const Token& tok = cur();
    NodePtr target = parse_assign_target({}, true);
    if (for_bodies_ && target->kind != NodeKind::kNSRef) check_not_loop(target.get(), tok);
    if (skip_op("=")) {
      NodePtr expr = parse_tuple();
      expect_block_end("set");
      auto node = make(NodeKind::kSet, pos);
      node->kids.push_back(std::move(target));
      node->kids.push_back(std::move(expr));
      return node;
    }
    auto node = make(NodeKind::kSetBlock, pos);
    node->kids.push_back(std::move(target));
    for (auto& f : parse_filter_chain(false)) node->kids.push_back(std::move(f));
    expect_block_end("set");
    std::string tag;
    node->bodies.push_back(subparse({"endset"}, opener, &tag));
    expect_block_end("endset");
    return node;
  }

  void parse_params(Node* macro) {
    expect_op("(");
    while (!is_op(")")) {
      if (!macro->ops.empty()) {
        expect_op(",");
        if (is_op(")")) break;
      }
      std::string name = expect_name().text;
      NodePtr def;
      if (skip_op("=")) def = parse_expression();
      if (!def && !macro->args.empty() && macro->args.back())
        error("a parameter without a default follows one with a default");
      macro->ops.push_back(name);
      macro->args.push_back(std::move(def));
    }
    next();
  }

  static void mark_uses(Node* macro) {
    std::vector<std::string> names;
    for (const auto& n : macro->bodies[0]) collect_names(n.get(), names);
    auto has = [&](const char* v) {
      return std::find(names.begin(), names.end(), v) != names.end();
    };
    macro->uses_varargs = has("varargs");
    macro->uses_kwargs = has("kwargs");
    macro->uses_caller = has("caller");
  }

  NodePtr stmt_macro(size_t pos, const Opener& opener) {
    auto node = make(NodeKind::kMacro, pos);
    node->name = expect_name().text;
    parse_params(node.get());
    expect_block_end("macro");
    int loops = loops_;
    loops_ = 0;  // break/continue do not reach out of a macro
    std::string tag;
    node->bodies.push_back(subparse({"endmacro"}, opener, &tag));
    loops_ = loops;
    expect_block_end("endmacro");
    mark_uses(node.get());
    return node;
  }

  NodePtr stmt_call(size_t pos, const Opener& opener) {
    auto caller = make(NodeKind::kMacro, pos);
    caller->name = "caller";
    if (is_op("(")) parse_params(caller.get());
    NodePtr call = parse_expression();
    if (call->kind != NodeKind::kCall) error("expected a call after 'call'");
    expect_block_end("call");
    int loops = loops_;
    loops_ = 0;
    std::string tag;
    caller->bodies.push_back(subparse({"endcall"}, opener, &tag));
    loops_ = loops;
    expect_block_end("endcall");
    mark_uses(caller.get());
    auto node = make(NodeKind::kCallBlock, pos);
    node->kids.push_back(std::move(call));
    node->kids.push_back(std::move(caller));
    return node;
  }

  NodePtr stmt_filter(size_t pos, const Opener& opener) {
    auto node = make(NodeKind::kFilterBlock, pos);
    node->kids = parse_filter_chain(true);
    expect_block_end("filter");
    std::string tag;
    node->bodies.push_back(subparse({"endfilter"}, opener, &tag));
    expect_block_end("endfilter");
    return node;
  }

  NodePtr stmt_with(size_t pos, const Opener& opener) {
    auto node = make(NodeKind::kScoped, pos);
    while (cur().kind != TokKind::kBlockEnd) {
      if (!node->kids.empty()) expect_op(",");
      NodePtr target = parse_assign_target({});
      expect_op("=");
      node->kids.push_back(std::move(target));
      node->kids.push_back(parse_expression());
    }
    next();
    std::string tag;
    node->bodies.push_back(subparse({"endwith"}, opener, &tag));
    expect_block_end("endwith");
    return node;
  }

  // transformers' {% generation %} marks assistant text for its token mask; the text
  // renders as it is, in a scope of its own.
  NodePtr stmt_generation(size_t pos, const Opener& opener) {
    expect_block_end("generation");
    auto node = make(NodeKind::kScoped, pos);
    std::string tag;
    node->bodies.push_back(subparse({"endgeneration"}, opener, &tag));
    expect_block_end("endgeneration");
    return node;
  }

  NodePtr loop_control(size_t pos, const std::string& name) {
    if (!loops_) error("'" + name + "' outside a for loop", &toks_[i_ - 1]);
    expect_block_end(name);
    return make(name == "break" ? NodeKind::kBreak : NodeKind::kContinue, pos);
  }

  // -- expressions
  NodePtr parse_assign_target(const std::vector<std::string>& extra_end,
                              bool with_namespace = false) {
    const Token& tok = cur();
    if (with_namespace && tok.kind == TokKind::kName && is_op(".", &look())) {
      auto node = make(NodeKind::kNSRef, tok.pos);
      node->name = tok.text;
      i_ += 2;
      node->attr = expect_name().text;
      return node;
    }
    NodePtr target = parse_tuple(true, true, extra_end);
    check_target(target.get(), tok);
    return target;
  }

  void check_target(const Node* target, const Token& tok) {
    if (target->kind == NodeKind::kSeq && target->flag) {
      for (const auto& item : target->kids) check_target(item.get(), tok);
    } else if (target->kind != NodeKind::kName) {
      error("cannot assign to this expression (expected a name or names)", &tok);
    }
  }

  bool tuple_end(const std::vector<std::string>& extra_end) const {
    const Token& t = cur();
    if (t.kind == TokKind::kVarEnd || t.kind == TokKind::kBlockEnd || t.kind == TokKind::kEof ||
        is_op(")"))
      return true;
    return t.kind == TokKind::kName &&
           std::find(extra_end.begin(), extra_end.end(), t.text) != extra_end.end();
  }

  NodePtr parse_tuple(bool simplified = false, bool with_condexpr = true,
                      const std::vector<std::string>& extra_end = {},
                      bool explicit_parentheses = false) {
    size_t pos = cur().pos;
    std::vector<NodePtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (tuple_end(extra_end)) break;
      if (simplified)
        items.push_back(parse_primary());
      else if (with_condexpr)
        items.push_back(parse_expression());
      else
        items.push_back(parse_or());
      if (is_op(","))
        is_tuple = true;
      else
        break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) error("expected an expression, got " + cur().describe());
    }
    auto node = make(NodeKind::kSeq, pos);
    node->kids = std::move(items);
    node->flag = true;
    return node;
  }

  NodePtr parse_expression(bool with_condexpr = true) {
    if (++nesting_ > kMaxNesting) error("the expression is nested too deeply");
    NodePtr node = with_condexpr ? parse_condexpr() : parse_or();
    --nesting_;
    return node;
  }

  NodePtr parse_condexpr() {
    size_t pos = cur().pos;
    NodePtr node = parse_or();
    while (skip_name("if")) {
      NodePtr test = parse_or();
      NodePtr otherwise;
      if (skip_name("else")) otherwise = parse_condexpr();
      auto c = make(NodeKind::kCondExpr, pos);
      c->kids.push_back(std::move(test));
      c->kids.push_back(std::move(node));
      c->kids.push_back(std::move(otherwise));
      node = std::move(c);
    }
    return node;
  }

  NodePtr binary(NodeKind kind, size_t pos, NodePtr a, NodePtr b, std::string op = "") {
    auto n = make(kind, pos);
    n->name = std::move(op);
    n->kids.push_back(std::move(a));
    n->kids.push_back(std::move(b));
    return n;
  }
  NodePtr unary(NodeKind kind, size_t pos, NodePtr a) {
    auto n = make(kind, pos);
    n->kids.push_back(std::move(a));
    return n;
  }

  NodePtr parse_or() {
    NodePtr node = parse_and();
    while (is_name("or")) {
      size_t pos = next().pos;
      node = binary(NodeKind::kOr, pos, std::move(node), parse_and());
    }
    return node;
  }

  NodePtr parse_and() {
    NodePtr node = parse_not();
    while (is_name("and")) {
      size_t pos = next().pos;
      node = binary(NodeKind::kAnd, pos, std::move(node), parse_not());
    }
    return node;
  }

  NodePtr parse_not() {
    if (is_name("not")) {
      size_t pos = next().pos;
      return unary(NodeKind::kNot, pos, parse_not());
    }
    return parse_compare();
  }

  NodePtr parse_compare() {
    size_t pos = cur().pos;
    NodePtr node = parse_math1();
    auto cmp = make(NodeKind::kCompare, pos);
    while (true) {
      const Token& t = cur();
      if (t.kind == TokKind::kOp && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                     t.text == "<=" || t.text == ">" || t.text == ">=")) {
        std::string op = t.text;
        next();
        cmp->ops.push_back(op);
        cmp->kids.push_back(parse_math1());
      } else if (is_name("in")) {
        next();
        cmp->ops.push_back("in");
        cmp->kids.push_back(parse_math1());
      } else if (is_name("not") && is_name("in", &look())) {
        i_ += 2;
        cmp->ops.push_back("not in");
        cmp->kids.push_back(parse_math1());
      } else {
        break;
      }
    }
    if (cmp->ops.empty()) return node;
    cmp->kids.insert(cmp->kids.begin(), std::move(node));
    return cmp;
  }

  NodePtr parse_math1() {
    NodePtr node = parse_concat();
    while (cur().kind == TokKind::kOp && (cur().text == "+" || cur().text == "-")) {
      const Token& t = next();
      node = binary(NodeKind::kBinOp, t.pos, std::move(node), parse_concat(), t.text);
    }
    return node;
  }

  NodePtr parse_concat() {
    size_t pos = cur().pos;
    std::vector<NodePtr> parts;
    parts.push_back(parse_math2());
    while (skip_op("~")) parts.push_back(parse_math2());
    if (parts.size() == 1) return std::move(parts[0]);
    auto n = make(NodeKind::kConcat, pos);
    n->kids = std::move(parts);
    return n;
  }

  NodePtr parse_math2() {
    NodePtr node = parse_pow();
    while (cur().kind == TokKind::kOp &&
           (cur().text == "*" || cur().text == "/" || cur().text == "//" || cur().text == "%")) {
      const Token& t = next();
      node = binary(NodeKind::kBinOp, t.pos, std::move(node), parse_pow(), t.text);
    }
    return node;
  }

  // The value of a node made of number literals and unary signs only, as Jinja2 folds
  // it; false when not such a constant. (Arithmetic inside is left unfolded here.)
  static bool constant_number(const Node* n, double* out) {
    if (n->kind == NodeKind::kConst &&
        (n->value.kind == Kind::kInt || n->value.kind == Kind::kFloat)) {
      *out = n->value.kind == Kind::kInt ? double(n->value.i) : n->value.f;
      return true;
    }
    if ((n->kind == NodeKind::kNeg || n->kind == NodeKind::kPos) &&
        constant_number(n->kids[0].get(), out)) {
      if (n->kind == NodeKind::kNeg) *out = -*out;
      return true;
    }
    return false;
  }
  static bool is_constant(const Node* n) {
    if (n->kind == NodeKind::kConst) return n->value.is_number();
    if (n->kind == NodeKind::kNeg || n->kind == NodeKind::kPos || n->kind == NodeKind::kBinOp) {
      for (const auto& k : n->kids)
        if (!is_constant(k.get())) return false;
      return true;
    }
    return false;
  }

  NodePtr parse_pow() {
    NodePtr node = parse_unary();
    while (is_op("**")) {  // left-associative in Jinja2: 2 ** 3 ** 2 is 64
      const Token& t = next();
      size_t pos = t.pos;
      NodePtr right = parse_unary();
      double base = 0;
      if (constant_number(node.get(), &base) && std::signbit(base) && !is_constant(right.get())) {
        // Jinja2 folds a constant base such as -3 and writes it unparenthesized into
        // Python code, so -3 ** x computes -(3 ** x).
        // Literals are never negative: the sign comes from unary minus nodes above one.
        const Node* lit = node.get();
        while (lit->kind != NodeKind::kConst) lit = lit->kids[0].get();
        auto positive = make(NodeKind::kConst, node->pos);
        positive->value = lit->value;
        node = unary(NodeKind::kNeg, pos,
                     binary(NodeKind::kBinOp, pos, std::move(positive), std::move(right), "**"));
      } else {
        node = binary(NodeKind::kBinOp, pos, std::move(node), std::move(right), "**");
      }
    }
    return node;
  }

  NodePtr parse_unary(bool with_filter = true) {
    const Token& tok = cur();
    NodePtr node;
    if (is_op("-")) {
      next();
      node = unary(NodeKind::kNeg, tok.pos, parse_unary(false));
    } else if (is_op("+")) {
      next();
      node = unary(NodeKind::kPos, tok.pos, parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  NodePtr parse_primary() {
    const Token& tok = cur();
    if (tok.kind == TokKind::kName) {
      next();
      auto n = make(NodeKind::kConst, tok.pos);
      if (tok.text == "true" || tok.text == "True")
        n->value = Value::boolean(true);
      else if (tok.text == "false" || tok.text == "False")
        n->value = Value::boolean(false);
      else if (tok.text == "none" || tok.text == "None")
        n->value = Value::none();
      else {
        n->kind = NodeKind::kName;
        n->name = tok.text;
      }
      return n;
    }
    if (tok.kind == TokKind::kString) {
      auto n = make(NodeKind::kConst, tok.pos);
      std::string s;
      while (cur().kind == TokKind::kString) s += next().text;  // adjacent literals join
      n->value = Value::str(s);
      return n;
    }
    if (tok.kind == TokKind::kInt || tok.kind == TokKind::kFloat) {
      auto n = make(NodeKind::kConst, tok.pos);
      n->value = tok.number;
      next();
      return n;
    }
    if (is_op("(")) {
      next();
      NodePtr node = parse_tuple(false, true, {}, true);
      expect_op(")");
      return node;
    }
    if (is_op("[")) return parse_list();
    if (is_op("{")) return parse_dict();
    error("expected an expression, got " + tok.describe());
  }

  NodePtr parse_list() {
    auto n = make(NodeKind::kSeq, expect_op("[").pos);
    while (!is_op("]")) {
      if (!n->kids.empty()) {
        expect_op(",");
        if (is_op("]")) break;
      }
      n->kids.push_back(parse_expression());
    }
    next();
    return n;
  }

  NodePtr parse_dict() {
    auto n = make(NodeKind::kDict, expect_op("{").pos);
    while (!is_op("}")) {
      if (!n->kids.empty()) {
        expect_op(",");
        if (is_op("}")) break;
      }
      n->kids.push_back(parse_expression());
      expect_op(":");
      n->kids.push_back(parse_expression());
    }
    next();
    return n;
  }

  NodePtr parse_postfix(NodePtr node) {
    while (true) {
      if (is_op(".") || is_op("["))
        node = parse_subscript(std::move(node));
      else if (is_op("("))
        node = parse_call(std::move(node));
      else
        return node;
    }
  }

  NodePtr parse_filter_expr(NodePtr node) {
    while (true) {
      if (is_op("|"))
        node = parse_filter(std::move(node), false);
      else if (is_name("is"))
        node = parse_test(std::move(node));
      else if (is_op("("))
        node = parse_call(std::move(node));
      else
        return node;
    }
  }

  NodePtr parse_subscript(NodePtr node) {
    const Token& tok = next();
    size_t pos = tok.pos;
    if (tok.text == ".") {
      const Token& attr = next();
      if (attr.kind == TokKind::kName) {
        auto n = unary(NodeKind::kGetAttr, pos, std::move(node));
        n->name = attr.text;
        return n;
      }
      if (attr.kind == TokKind::kInt) {
        auto key = make(NodeKind::kConst, attr.pos);
        key->value = attr.number;
        return binary(NodeKind::kGetItem, pos, std::move(node), std::move(key));
      }
      error("expected an attribute name after '.', got " + attr.describe(), &attr);
    }
    std::vector<NodePtr> keys;
    while (!is_op("]")) {
      if (!keys.empty()) expect_op(",");
      keys.push_back(parse_subscribed());
    }
    next();
    if (keys.empty()) error("expected a subscript inside '[]'", &tok);
    NodePtr key;
    if (keys.size() == 1) {
      key = std::move(keys[0]);
    } else {
      key = make(NodeKind::kSeq, pos);
      key->kids = std::move(keys);
      key->flag = true;
    }
    return binary(NodeKind::kGetItem, pos, std::move(node), std::move(key));
  }

  NodePtr parse_subscribed() {
    size_t pos = cur().pos;
    auto slice = make(NodeKind::kSlice, pos);
    if (is_op(":")) {
      next();
      slice->kids.push_back(nullptr);
    } else {
      NodePtr node = parse_expression();
      if (!skip_op(":")) return node;
      slice->kids.push_back(std::move(node));
    }
    if (is_op(":") || is_op("]") || is_op(","))
      slice->kids.push_back(nullptr);
    else
      slice->kids.push_back(parse_expression());
    if (skip_op(":")) {
      if (is_op("]") || is_op(","))
        slice->kids.push_back(nullptr);
      else
        slice->kids.push_back(parse_expression());
    } else {
      slice->kids.push_back(nullptr);
    }
    return slice;
  }

  void parse_call_args(Node* n) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) {
        expect_op(",");
        if (is_op(")")) break;
      }
      first = false;
      if (skip_op("*")) {
        n->star = parse_expression();
      } else if (skip_op("**")) {
        n->dstar = parse_expression();
      } else if (cur().kind == TokKind::kName && is_op("=", &look())) {
        std::string key = next().text;
        next();
        n->kwargs.emplace_back(key, parse_expression());
      } else {
        if (!n->kwargs.empty() || n->star || n->dstar)
          error("a positional argument follows keyword arguments");
        n->args.push_back(parse_expression());
      }
    }
    next();
  }

  NodePtr parse_call(NodePtr node) {
    auto n = unary(NodeKind::kCall, cur().pos, std::move(node));
    parse_call_args(n.get());
    return n;
  }

  std::string dotted_name() {
    std::string name = expect_name().text;
    while (is_op(".") && look().kind == TokKind::kName) {
      next();
      name += "." + next().text;
    }
    return name;
  }

  NodePtr parse_filter(NodePtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      const Token& tok = cur();
      std::string name = dotted_name();
      if (!has_filter(name)) error("no filter named '" + name + "'", &tok);
      auto n = unary(NodeKind::kFilter, tok.pos, std::move(node));
      n->name = name;
      if (is_op("(")) parse_call_args(n.get());
      node = std::move(n);
    }
    return node;
  }

  // The filters of a block set or filter block, in the order they apply.
  std::vector<NodePtr> parse_filter_chain(bool start_inline) {
    std::vector<NodePtr> filters;
    if (!start_inline && !is_op("|")) return filters;
    NodePtr node = parse_filter(nullptr, start_inline);
    while (node && node->kind == NodeKind::kFilter) {
      NodePtr inner = std::move(node->kids[0]);
      node->kids[0] = nullptr;
      filters.push_back(std::move(node));
      node = std::move(inner);
    }
    std::reverse(filters.begin(), filters.end());
    return filters;
  }

  NodePtr parse_test(NodePtr node) {
    size_t pos = next().pos;  // 'is'
    bool negated = skip_name("not");
    const Token& tok = cur();
    std::string name = dotted_name();
    if (!has_test(name)) error("no test named '" + name + "'", &tok);
    auto n = unary(NodeKind::kTest, tok.pos, std::move(node));
    n->name = name;
    const Token& c = cur();
    if (is_op("(")) {
      parse_call_args(n.get());
    } else if ((c.kind == TokKind::kName || c.kind == TokKind::kString || c.kind == TokKind::kInt ||
                c.kind == TokKind::kFloat ||
                (c.kind == TokKind::kOp && (c.text == "(" || c.text == "[" || c.text == "{"))) &&
               !(c.kind == TokKind::kName &&
                 (c.text == "else" || c.text == "or" || c.text == "and"))) {
      if (is_name("is")) error("tests cannot be chained with 'is'");
      n->args.push_back(parse_postfix(parse_primary()));
    }
    return negated ? unary(NodeKind::kNot, pos, std::move(n)) : std::move(n);
  }

  std::vector<Token> toks_;
  size_t i_ = 0;
  const Locate& locate_;
  int loops_ = 0, for_bodies_ = 0, nesting_ = 0;
};

}  // namespace

Body parse_tokens(std::vector<Token> toks, const Locate& locate) {
  return Parser(std::move(toks), locate).parse();
}

}  // namespace nxrt::genai::tmpl
