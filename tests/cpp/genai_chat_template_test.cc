// nxrt_genai's chat-template renderer: a template in the ChatML style rendered from JSON,
// Jinja2's scoping and filters, a syntax error and a runtime error with their positions.
// tests/python/test_genai_chat_template.py holds it to every case of the Python port.
#include <gtest/gtest.h>

#include <string>

#include "genai/chat_template.h"

namespace nxrt::genai {
namespace {

constexpr const char* kChatml = R"({%- for m in messages %}
    {{- '<|im_start|>' ~ m.role ~ '\n' ~ m.content | trim ~ '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %})";

TEST(GenaiChatTemplate, RendersMessagesFromJson) {
  auto t = ChatTemplate::parse(kChatml);
  ASSERT_TRUE(t) << t.status().message();
  auto text = (*t)->render_json(
      R"({"messages": [{"role": "system", "content": " Be brief. "},
                       {"role": "user", "content": "Grüße"}],
          "add_generation_prompt": true})");
  ASSERT_TRUE(text) << text.status().message();
  EXPECT_EQ(*text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nGrüße<|im_end|>\n"
            "<|im_start|>assistant\n");
  // add_generation_prompt defaults to false.
  text = (*t)->render_json(R"({"messages": []})");
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "");
}

TEST(GenaiChatTemplate, ScopingFiltersAndPythonPrinting) {
  auto t = ChatTemplate::parse(
      "{% set ns = namespace(n=0) %}{% for x in xs if x > 1 %}{% set ns.n = ns.n + x %}"
      "{% endfor %}{{ ns.n }} {{ xs | sort | list }} {{ d | tojson }} {{ 7 / 2 }} "
      "{{ 'a' if u is defined else 'b' }} {{ d.k.upper() }}");
  ASSERT_TRUE(t) << t.status().message();
  auto text = (*t)->render_json(R"({"xs": [3, 1, 2], "d": {"k": "v", "a": [1, 2.5, null]}})");
  ASSERT_TRUE(text) << text.status().message();
  EXPECT_EQ(*text, R"(5 [1, 2, 3] {"k": "v", "a": [1, 2.5, null]} 3.5 b V)");
}

TEST(GenaiChatTemplate, ErrorsSayWhere) {
  TemplateError error;
  EXPECT_EQ(ChatTemplate::parse("x\n  {% if x %}\nyes", {}, &error), nullptr);
  EXPECT_EQ(error.line, 3);
  EXPECT_EQ(error.column, 4);
  EXPECT_EQ(error.message,
            "unexpected end of template: the 'if' tag at line 2, column 6 is not closed "
            "(expected 'elif', 'else' or 'endif')");

  auto t = ChatTemplate::parse("ok\n  {{ raise_exception('Role ' ~ messages[0].role) }}");
  ASSERT_TRUE(t);
  auto text = (*t)->render_json(R"({"messages": [{"role": "tool"}]})");
  ASSERT_FALSE(text);
  EXPECT_EQ(text.status().message(), "line 2, column 3: Role tool");

  text = (*t)->render_json("[1]");
  ASSERT_FALSE(text);
}

TEST(GenaiChatTemplate, LimitsStopRunawayTemplates) {
  TemplateLimits limits;
  limits.max_iterations = 1000;
  auto t = ChatTemplate::parse(
      "{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", limits);
  ASSERT_TRUE(t);
  auto text = (*t)->render_json("{}");
  ASSERT_FALSE(text);
  EXPECT_NE(text.status().message().find("more than 1000 loop iterations"), std::string::npos);
  t = ChatTemplate::parse("{{ messages.__class__ }}");
  ASSERT_TRUE(t);
  text = (*t)->render_json(R"({"messages": []})");
  ASSERT_FALSE(text);
  EXPECT_NE(text.status().message().find("refused"), std::string::npos);
}

}  // namespace
}  // namespace nxrt::genai
