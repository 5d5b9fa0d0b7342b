// ChatTemplate: the entry points (chat_template.h) over the lexer, parser and interpreter
// in template_*.cc. Those report failures by throwing TemplateException (the interpreter
// is deeply recursive and every value operation can fail); it is caught here and turned
// into the project's Status, so nothing throws across the API.
#include "genai/chat_template.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "genai/template_ast.h"
#include "genai/template_eval.h"

namespace nxrt::genai {
namespace {

using tmpl::Kind;
using tmpl::Value;

// JSON -> template values: objects keep their keys' order (Python dicts do).
Value from_json(const nlohmann::ordered_json& j, int depth = 0) {
  if (depth > 512) tmpl::fail("the context is nested too deeply");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      if (j.get<uint64_t>() > uint64_t(INT64_MAX)) return Value::number(j.get<double>());
      return Value::integer(int64_t(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float:
      return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::str(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      tmpl::List items;
      for (const auto& item : j) items.push_back(from_json(item, depth + 1));
      return Value::make_list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = Value::make_dict();
      for (auto it = j.begin(); it != j.end(); ++it)
        d.dict->items.emplace_back(Value::str(it.key()), from_json(it.value(), depth + 1));
      return d;
    }
    default:
      tmpl::fail("the context holds a value JSON cannot give a template (binary)");
  }
}

// Newlines normalized to \n and one trailing newline dropped, as Jinja2 does
// (keep_trailing_newline=False).
std::string normalize(std::string_view source) {
  std::string text;
  text.reserve(source.size());
  for (size_t k = 0; k < source.size(); ++k) {
    if (source[k] == '\r') {
      text += '\n';
      if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
    } else {
      text += source[k];
    }
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

std::string TemplateError::to_string() const {
  if (line == 0) return message;
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message;
}

ChatTemplate::~ChatTemplate() = default;

std::unique_ptr<ChatTemplate> ChatTemplate::parse(std::string_view source,
                                                  const TemplateLimits& limits,
                                                  TemplateError* error) {
  std::unique_ptr<ChatTemplate> t(new ChatTemplate());
  t->limits_ = limits;
  t->text_ = normalize(source);
  t->line_starts_.push_back(0);
  for (size_t k = 0; k < t->text_.size(); ++k)
    if (t->text_[k] == '\n') t->line_starts_.push_back(k + 1);
  const ChatTemplate* self = t.get();
  tmpl::Locate locate = [self](size_t pos) {
    auto it = std::upper_bound(self->line_starts_.begin(), self->line_starts_.end(), pos);
    size_t line = size_t(it - self->line_starts_.begin());
    size_t start = self->line_starts_[line - 1];
    size_t end = std::min(pos, self->text_.size());
    int column =
        int(tmpl::char_count(std::string_view(self->text_).substr(start, end - start))) + 1;
    return std::make_pair(int(line), column);
  };
  try {
    auto body = tmpl::parse_tokens(tmpl::lex(t->text_), locate);
    t->nodes_ = std::make_shared<std::vector<std::unique_ptr<tmpl::Node>>>(std::move(body));
  } catch (const tmpl::TemplateException& e) {
    *error = TemplateError{e.message, 0, 0};
    if (e.pos != std::string::npos) std::tie(error->line, error->column) = locate(e.pos);
    return nullptr;
  }
  return t;
}

Expected<std::unique_ptr<ChatTemplate>> ChatTemplate::parse(std::string_view source,
                                                            const TemplateLimits& limits) {
  TemplateError error;
  auto t = parse(source, limits, &error);
  if (!t) return invalid_argument(error.to_string());
  return t;
}

bool ChatTemplate::render(const nlohmann::ordered_json& context, std::string* out,
                          TemplateError* error) const {
  tmpl::State state;
  state.max_output = limits_.max_output;
  state.max_iterations = limits_.max_iterations;
  state.max_depth = limits_.max_depth;
  state.max_seconds = limits_.max_seconds;
  if (state.max_seconds > 0)
    state.deadline = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(state.max_seconds));
  auto root = std::make_shared<tmpl::Scope>();
  root->state = &state;
  bool ok = true;
  try {
    tmpl::add_globals(*root);
    if (!context.is_null()) {
      if (!context.is_object()) tmpl::fail("the context must be a JSON object");
      for (auto it = context.begin(); it != context.end(); ++it)
        root->vars[it.key()] = from_json(it.value());
    }
    if (!root->vars.count("add_generation_prompt") ||
        root->vars["add_generation_prompt"].kind == Kind::kNone)
      root->vars["add_generation_prompt"] = Value::boolean(false);
    out->clear();
    tmpl::render_body(*nodes_, root, *out);
  } catch (const tmpl::TemplateException& e) {
    *error = TemplateError{e.message, 0, 0};
    if (e.pos != std::string::npos) {
      auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), e.pos);
      size_t line = size_t(it - line_starts_.begin());
      size_t start = line_starts_[line - 1];
      error->line = int(line);
      error->column =
          int(tmpl::char_count(std::string_view(text_).substr(start, e.pos - start))) + 1;
    }
    ok = false;
  }
  // Macros hold the scope they were defined in, which holds them: break the cycles.
  for (auto& scope : state.macro_scopes) scope->vars.clear();
  for (auto& ns : state.namespaces) ns->items.clear();
  root->vars.clear();
  return ok;
}

Expected<std::string> ChatTemplate::render(const nlohmann::ordered_json& context) const {
  std::string out;
  TemplateError error;
  if (!render(context, &out, &error)) return invalid_argument(error.to_string());
  return out;
}

Expected<std::string> ChatTemplate::render_json(std::string_view context_json) const {
  nlohmann::ordered_json context;
  try {
    context = context_json.empty() ? nlohmann::ordered_json::object()
                                   : nlohmann::ordered_json::parse(context_json);
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument("the chat template context is not valid JSON: ", e.what());
  }
  return render(context);
}

}  // namespace nxrt::genai
