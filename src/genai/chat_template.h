// Chat templates in C++: the port of nxrt.genai.chat_template
// (python/nxrt/genai/chat_template.py), which renders a model's Jinja2 chat template to the
// same text as jinja2 set up as Hugging Face transformers sets it up (sandboxed,
// trim_blocks, lstrip_blocks, loopcontrols, its tojson, raise_exception, strftime_now).
// tests/python/test_genai_chat_template.py runs every case against both ports.
//
//   auto t = ChatTemplate::parse(source);           // syntax errors say line and column
//   auto text = (*t)->render_json(R"({"messages": [...], "add_generation_prompt": true})");
//
// The context is JSON (messages, tools, bos_token, ...); a variable not given is undefined,
// add_generation_prompt defaults to false. Templates may call only the filters, tests,
// globals, macros and the non-mutating str/dict/list methods; names starting with '_' are
// refused; output size, loop iterations, macro depth and time are bounded per render.
//
// Where it still differs from the Python port (each an error here, or rare text):
//   - ints are 64-bit: a result Python would make a big int fails ("too large"); a negative
//     number to a fractional power (a Python complex) fails;
//   - upper/lower/title/capitalize map ASCII, Latin-1, Latin Extended-A, Greek and
//     Cyrillic (and ß to SS); other scripts' letters stay as they are;
//     str.isalpha/isalnum know letters by case or by the common CJK, kana, Arabic and
//     Hangul blocks;
//   - \N{NAME} escapes in string literals know a few names only (BULLET, EM DASH, ...);
//   - dict.items()/keys()/values() are lists (Python's views print as dict_items([...]));
//     a generator prints as "<generator object>" (Python adds its address);
//   - Python's own exception texts (TypeError: ...) can differ where the two evaluate a
//     failing expression in another order inside a lazy filter.
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace nxrt::genai {

namespace tmpl {
struct Node;
}

// The per-render budgets (the Python ChatTemplate's keyword arguments).
struct TemplateLimits {
  size_t max_output = size_t(16) << 20;  // characters written, and the size of any value built
  size_t max_iterations = 1000000;       // loop iterations plus macro calls
  int max_depth = 40;                    // nested macro calls
  double max_seconds = 10.0;             // <= 0: no time limit
};

// What failed and where: line and column are 1-based, 0 when unknown. to_string() is the
// Python TemplateError's str(): "line L, column C: message".
struct TemplateError {
  std::string message;
  int line = 0, column = 0;
  std::string to_string() const;
};

class ChatTemplate {
 public:
  // Parses once; render as often as wanted (render is const and keeps no state).
  static Expected<std::unique_ptr<ChatTemplate>> parse(std::string_view source,
                                                       const TemplateLimits& limits = {});
  // The same, with the error's parts for callers that report them separately.
  static std::unique_ptr<ChatTemplate> parse(std::string_view source, const TemplateLimits& limits,
                                             TemplateError* error);

  ~ChatTemplate();
  ChatTemplate(const ChatTemplate&) = delete;
  ChatTemplate& operator=(const ChatTemplate&) = delete;

  // Renders with `context` (a JSON object; ordered_json keeps its keys' order, which
  // tojson and iteration show). Errors are Status(kInvalidArgument, error.to_string()).
  Expected<std::string> render(const nlohmann::ordered_json& context) const;
  Expected<std::string> render_json(std::string_view context_json) const;
  // false and *error on failure.
  bool render(const nlohmann::ordered_json& context, std::string* out, TemplateError* error) const;

 private:
  ChatTemplate() = default;
  std::string text_;  // newlines normalized, the source of positions
  std::vector<size_t> line_starts_;
  std::shared_ptr<std::vector<std::unique_ptr<tmpl::Node>>> nodes_;
  TemplateLimits limits_;
};

}  // namespace nxrt::genai
