#include "genai/json_constraint.h"

#include <gtest/gtest.h>

namespace nxrt::genai {
namespace {

// Feeds `text` byte by byte: the number of bytes accepted before the first refusal.
size_t accepted(std::string_view text, bool object_only = true) {
  JsonPrefix p(object_only);
  for (size_t i = 0; i < text.size(); ++i)
    if (!p.feed(static_cast<unsigned char>(text[i]))) return i;
  return text.size();
}

bool complete(std::string_view text, bool object_only = true) {
  JsonPrefix p(object_only);
  return p.feed(text) && p.complete();
}

TEST(JsonPrefix, AcceptsWholeObjectsAndTheirPrefixes) {
  const char* objects[] = {
      "{}",
      " { } ",
      R"({"a": 1, "b": [true, false, null], "c": {"d": -0.5e+3}})",
      R"({"s": "tab\t quote\" u\u00e9 slash\/", "n": [0, 12, 3.25, 1E9, -7]})",
      "{\"utf8\": \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}",
      "{\"nested\": [[[], {}], [{\"x\": [1]}]]}\n",
  };
  for (const char* text : objects) {
    EXPECT_TRUE(complete(text)) << text;
    const std::string_view all(text);
    for (size_t n = 0; n < all.size(); ++n) EXPECT_EQ(accepted(all.substr(0, n)), n) << text;
  }
}

TEST(JsonPrefix, RefusesWhatNoObjectContinuesWith) {
  EXPECT_EQ(accepted("[1]"), 0u);  // the top level must be an object
  EXPECT_EQ(accepted("\"text\""), 0u);
  EXPECT_EQ(accepted("{a: 1}"), 1u);                     // keys are strings
  EXPECT_EQ(accepted("{\"a\" 1}"), 5u);                  // a colon after the key
  EXPECT_EQ(accepted("{\"a\": 01}"), 7u);                // no leading zeros
  EXPECT_EQ(accepted("{\"a\": 1.}"), 8u);                // digits after the dot
  EXPECT_EQ(accepted("{\"a\": tru}"), 9u);               // literals spelled out
  EXPECT_EQ(accepted("{\"a\": [1,]}"), 9u);              // no trailing comma
  EXPECT_EQ(accepted("{\"a\": 1]"), 7u);                 // brackets match
  EXPECT_EQ(accepted("{\"a\": \"\x01\"}"), 7u);          // control characters escaped
  EXPECT_EQ(accepted("{\"a\": \"\\x\"}"), 8u);           // only JSON escapes
  EXPECT_EQ(accepted("{\"a\": \"\xc0\x80\"}"), 7u);      // no overlong UTF-8
  EXPECT_EQ(accepted("{\"a\": \"\xed\xa0\x80\"}"), 8u);  // no surrogates
  EXPECT_EQ(accepted("{} x"), 3u);                       // nothing after the object
  EXPECT_TRUE(complete("[1, \"x\"]", /*object_only=*/false));
  EXPECT_FALSE(complete("{\"a\": 1"));
}

TEST(JsonPrefix, LimitsNesting) {
  std::string deep = "{\"a\": ";
  for (int i = 1; i < JsonPrefix::kMaxDepth; ++i) deep += "[";
  EXPECT_EQ(accepted(deep), deep.size());
  EXPECT_EQ(accepted(deep + "["), deep.size());
}

}  // namespace
}  // namespace nxrt::genai
