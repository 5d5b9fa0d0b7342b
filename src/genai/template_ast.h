// The lexer's tokens and the parser's tree for chat templates (nxrt::genai::tmpl). One
// Node type for expressions and statements keeps the port small; which fields a kind uses
// is written next to each kind.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "genai/template_value.h"

namespace nxrt::genai::tmpl {

enum class TokKind {
  kData,
  kVarBegin,
  kVarEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInt,
  kFloat,
  kOp,
  kEof
};

struct Token {
  TokKind kind;
  std::string text;  // data, name, string (unescaped), op, or the tag marker
  Value number;      // kInt, kFloat
  size_t pos;        // byte offset in the template
  std::string describe() const;
};

// Byte offset -> (line, column), columns counted in characters as Python counts them.
using Locate = std::function<std::pair<int, int>(size_t)>;

// Splits the template into data (whitespace control applied as Jinja2 does with
// trim_blocks and lstrip_blocks) and tag tokens. Throws TemplateException with a position.
std::vector<Token> lex(const std::string& src);

enum class NodeKind {
  // expressions
  kConst,    // value
  kName,     // name
  kSeq,      // kids: items; flag: tuple
  kDict,     // kids: key, value, key, value...
  kGetAttr,  // kids[0] object; name
  kGetItem,  // kids[0] object, kids[1] key
  kSlice,    // kids: start, stop, step (null when absent)
  kCall,     // kids[0] callee; args, kwargs, star, dstar
  kFilter,   // kids[0] value (null in a filter chain); name; args...
  kTest,     // kids[0] value; name; args...
  kBinOp,    // name: operator; kids: left, right
  kConcat,   // kids: parts
  kCompare,  // kids[0] first, then one per ops[k]
  kAnd,
  kOr,  // kids: left, right
  kNot,
  kNeg,
  kPos,       // kids[0]
  kCondExpr,  // kids: test, then, otherwise (null: none)
  kNSRef,     // name . attr
  // statements
  kData,         // name: the text
  kOutput,       // kids[0]
  kIf,           // kids: tests; bodies: one per test, then the else body
  kFor,          // kids: target, iterable, test (null); bodies: body, else body
  kSet,          // kids: target, expr
  kSetBlock,     // kids: target, filters...; bodies[0]
  kMacro,        // name; params (args: defaults or null; ops: names); bodies[0]; flags
  kCallBlock,    // kids: call, caller (a kMacro)
  kFilterBlock,  // kids: filters; bodies[0]
  kScoped,       // with / generation: kids: target, expr, target, expr...; bodies[0]
  kBreak,
  kContinue,
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  NodeKind kind;
  size_t pos = 0;
  std::string name, attr;
  Value value;
  bool flag = false;
  std::vector<NodePtr> kids;
  std::vector<std::string> ops;  // kCompare operators; kMacro parameter names
  std::vector<NodePtr> args;     // call / filter / test positional args; kMacro defaults
  std::vector<std::pair<std::string, NodePtr>> kwargs;
  NodePtr star, dstar;
  std::vector<Body> bodies;
  // kMacro: the body reads varargs / kwargs / caller
  bool uses_varargs = false, uses_kwargs = false, uses_caller = false;

  Node(NodeKind k, size_t p) : kind(k), pos(p) {}
};

// Parses the tokens. Throws TemplateException with a position.
Body parse_tokens(std::vector<Token> toks, const Locate& locate);

// The filter and test names (template_filters.cc, template_tests.cc): the parser refuses
// unknown ones.
bool has_filter(std::string_view name);
bool has_test(std::string_view name);

}  // namespace nxrt::genai::tmpl
