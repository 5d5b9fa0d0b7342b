// nxrt_genai's tokenizer on a hand-written tokenizer.json: merge order, added tokens,
// post-processing, decoding, the UTF-8 stream, NFC and the errors of malformed files.
// tests/python/test_genai_cpp_tokenizer.py compares it with Hugging Face on real ones.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "genai/char_class.h"
#include "genai/nfc.h"
#include "genai/tokenizer.h"
#include "genai/utf8.h"

namespace nxrt::genai {
namespace {

// Byte-level tokens: "Ġ" is the space, "Ã" "¤" the two bytes of "ä". Merge ranks: b+c
// first, then a+b, a+bc, Ġ+a; both forms of a merge appear.
constexpr const char* kTinyJson = R"({
  "version": "1.0",
  "added_tokens": [
    {"id": 10, "content": "<s>", "special": true, "lstrip": false, "rstrip": false,
     "normalized": false, "single_word": false},
    {"id": 11, "content": "<|x|>", "special": true},
    {"id": 12, "content": "<|x|>y", "special": false}
  ],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
                    "use_regex": true},
  "post_processor": POST,
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true},
  "model": {
    "type": "BPE", "dropout": null, "unk_token": null, "ignore_merges": IGNORE,
    "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5, "Ġ": 6, "Ġa": 7,
              "Ã": 8, "¤": 9, "x": 13, "y": 14, "ca": 15},
    "merges": [["b", "c"], "a b", ["a", "bc"], "Ġ a"]
  }
})";

std::string tiny_json(const std::string& post = "null", bool ignore_merges = false) {
  std::string json = kTinyJson;
  json.replace(json.find("POST"), 4, post);
  json.replace(json.find("IGNORE"), 6, ignore_merges ? "true" : "false");
  return json;
}

std::unique_ptr<Tokenizer> load(const std::string& json, const std::string& config = "") {
  auto tok = Tokenizer::from_json(json, config);
  EXPECT_TRUE(tok.ok()) << tok.status().message();
  return tok.ok() ? std::move(tok).value() : nullptr;
}

using Ids = std::vector<int32_t>;

TEST(GenaiTokenizer, MergesInRankOrder) {
  auto tok = load(tiny_json());
  ASSERT_TRUE(tok);
  // b+c (rank 0) before a+b (rank 1), so "abc" is a+bc -> abc, not ab c.
  EXPECT_EQ(tok->encode("abc"), Ids({5}));
  EXPECT_EQ(tok->encode("ab"), Ids({3}));
  EXPECT_EQ(tok->encode("abab"), Ids({3, 3}));  // equal ranks: leftmost first
  EXPECT_EQ(tok->encode("a b"), Ids({0, 6, 1}));
  EXPECT_EQ(tok->encode(" a"), Ids({7}));
  EXPECT_EQ(tok->encode("ca"), Ids({2, 0}));
  EXPECT_EQ(tok->encode("z"), Ids({}));  // no id and no unk_token: dropped
  EXPECT_EQ(tok->encode(""), Ids({}));
  EXPECT_EQ(tok->encode("abc"), Ids({5}));  // again, from the word cache

  auto whole = load(tiny_json("null", /*ignore_merges=*/true));
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->encode("ca"), Ids({15}));  // a whole-vocabulary piece skips merging
}

TEST(GenaiTokenizer, AddedTokensLongestFirst) {
  auto tok = load(tiny_json());
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->encode("x<|x|>y<s>"), Ids({13, 12, 10}));
  EXPECT_EQ(tok->encode("<|x|><|x|"), Ids({11, 13}));  // "<|x|": only "x" has an id
  EXPECT_EQ(tok->token_to_id("<s>"), 10);
  EXPECT_EQ(tok->token_to_id("Ġa"), 7);
  EXPECT_EQ(tok->token_to_id("nope"), std::nullopt);
  EXPECT_EQ(tok->id_to_token(7), "Ġa");
  EXPECT_EQ(tok->id_to_token(99), std::nullopt);
  EXPECT_EQ(tok->vocab_size(), 16);

  auto text = tok->decode(Ids{13, 12, 10, 7});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "x<|x|>y<s> a");
  auto skipped = tok->decode(Ids{13, 11, 12, 10}, /*skip_special_tokens=*/true);
  ASSERT_TRUE(skipped.ok());
  EXPECT_EQ(*skipped, "x<|x|>y");
  auto bad = tok->decode(Ids{0, 16});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("token id 16 is out of range"), std::string::npos);
}

TEST(GenaiTokenizer, SpecialTokensAroundTheIds) {
  auto templated = load(tiny_json(R"({"type": "Sequence", "processors": [
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false},
      {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                {"Sequence": {"id": "A", "type_id": 0}}],
       "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [10], "tokens": ["<s>"]}}}]})"));
  ASSERT_TRUE(templated);
  EXPECT_EQ(templated->encode("ab", /*add_special_tokens=*/true), Ids({10, 3}));
  EXPECT_EQ(templated->encode("ab"), Ids({3}));

  // Without a template, tokenizer_config.json's add_bos_token decides.
  auto configured = load(tiny_json(), R"({"bos_token": {"content": "<s>"}, "eos_token": "<|x|>",
                                          "add_bos_token": true, "add_eos_token": false})");
  ASSERT_TRUE(configured);
  EXPECT_EQ(configured->bos_id(), 10);
  EXPECT_EQ(configured->eos_id(), 11);
  EXPECT_EQ(configured->encode("ab", true), Ids({10, 3}));
}

TEST(GenaiTokenizer, StreamDecoderHoldsBackSplitCharacters) {
  auto tok = load(tiny_json());
  ASSERT_TRUE(tok);
  const Ids ids = tok->encode("aä");
  ASSERT_EQ(ids, Ids({0, 8, 9}));  // "ä" is two byte tokens
  StreamDecoder stream(*tok);
  EXPECT_EQ(stream.add(0).value(), "a");
  EXPECT_EQ(stream.add(8).value(), "");  // the first byte of "ä": held back
  EXPECT_EQ(stream.add(9).value(), "ä");
  EXPECT_EQ(stream.flush(), "");
  EXPECT_EQ(stream.add(8).value(), "");
  EXPECT_EQ(stream.flush(), "\uFFFD");  // a character cut off at the end
  EXPECT_FALSE(stream.add(-1).ok());
}

TEST(GenaiUtf8, StreamAndReplacement) {
  Utf8Stream stream;
  EXPECT_EQ(stream.push("\xE2\x82"), "");
  EXPECT_EQ(stream.push("\xAC!"), "\u20AC!");
  EXPECT_EQ(stream.push("\xF0\x9F"), "");
  EXPECT_EQ(stream.push("\x98"), "");
  EXPECT_EQ(stream.push("\x80"), "\U0001F600");
  EXPECT_EQ(stream.push("\xFF"), "\uFFFD");  // never valid: not held back
  EXPECT_EQ(stream.push("\xF0\x9F\x98"
                        "A"),
            "\uFFFDA");  // cut short: one U+FFFD
  EXPECT_EQ(stream.push("a\xE2"), "a");
  EXPECT_EQ(stream.finish(), "\uFFFD");
  EXPECT_EQ(stream.finish(), "");
  // Maximal subparts, as CPython's errors="replace": E0 80 is no valid start (overlong).
  EXPECT_EQ(utf8_replace_invalid("\xE0\x80\x80"), "\uFFFD\uFFFD\uFFFD");
  EXPECT_EQ(utf8_replace_invalid("\xED\xA0\x80"), "\uFFFD\uFFFD\uFFFD");  // a surrogate
  EXPECT_EQ(utf8_replace_invalid("ok \xC3\xA4"), "ok \xC3\xA4");
}

TEST(GenaiTokenizer, InvalidUtf8RoundTrips) {
  auto tok = load(tiny_json());
  ASSERT_TRUE(tok);
  // Bytes without ids are dropped, as for any piece; those with ids come back as bytes.
  EXPECT_EQ(tok->encode("a\xC3"), Ids({0, 8}));
}

TEST(GenaiUnicode, ClassesAndNfc) {
  EXPECT_EQ(char_class('a'), kLetter);
  EXPECT_EQ(char_class(0x4E2D), kLetter);   // 中
  EXPECT_EQ(char_class(0x20000), kLetter);  // CJK extension B
  EXPECT_EQ(char_class(0x0663), kNumber);   // Arabic-Indic three
  EXPECT_EQ(char_class(0x216B), kNumber);   // Roman numeral twelve (Nl)
  EXPECT_EQ(char_class(0x3000), kSpace);
  EXPECT_EQ(char_class(0x85), kSpace);
  EXPECT_EQ(char_class(0x1C), kOther);  // str.isspace() says yes, White_Space says no
  EXPECT_EQ(char_class(0x1F600), kOther);
  EXPECT_EQ(char_class(kRawByteBase + 0xFF), kOther);

  EXPECT_EQ(nfc("Cafe\u0301"), "Caf\u00E9");
  EXPECT_EQ(nfc("\u1100\u1161\u11A8"), "\uAC01");          // conjoining jamo
  EXPECT_EQ(nfc("\u1E0B\u0323"), "\u1E0D\u0307");          // reordered, then composed
  EXPECT_EQ(nfc("\u0958"), "\u0915\u093C");                // a composition exclusion
  EXPECT_EQ(nfc("\u212B"), "\u00C5");                      // a singleton (Angstrom sign)
  EXPECT_EQ(nfc("plain ascii \xFF"), "plain ascii \xFF");  // invalid bytes pass through
}

// Errors: Status values naming what is wrong, for every kind of bad file.
std::string load_error(const std::string& json, const std::string& config = "") {
  auto tok = Tokenizer::from_json(json, config);
  EXPECT_FALSE(tok.ok());
  return tok.ok() ? std::string() : tok.status().message();
}

std::string with(const std::string& json, const std::string& from, const std::string& to) {
  std::string out = json;
  const size_t at = out.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) out.replace(at, from.size(), to);
  return out;
}

TEST(GenaiTokenizer, MalformedFilesAreErrors) {
  const std::string json = tiny_json();
  EXPECT_NE(load_error("{\"model\": ").find("not valid JSON"), std::string::npos);
  EXPECT_NE(load_error("[1, 2]").find("top level"), std::string::npos);
  EXPECT_NE(load_error("{}").find("'model' is missing"), std::string::npos);
  EXPECT_NE(load_error(with(json, "\"type\": \"BPE\"", "\"type\": \"Unigram\""))
                .find("unsupported model type 'Unigram'"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"type\": \"BPE\"", "\"type\": \"WordPiece\""))
                .find("unsupported model type 'WordPiece'"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"type\": \"BPE\"", "\"type\": 7")).find("'model.type'"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"vocab\"", "\"vocabulary\"")).find("'model.vocab' is missing"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"a\": 0,", "\"a\": \"zero\",")).find("model.vocab['a']"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"a\": 0,", "\"a\": -3,")).find("model.vocab['a']"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"a\": 0,", "\"a\": 4000000000,")).find("must be a token id"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"a\": 0,", "\"a\": 1000000,")).find("too sparse"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"a b\"", "\"ab\"")).find("'model.merges[1]'"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"a b\"", "[\"a\"]")).find("'model.merges[1]'"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"merges\": [", "\"merges\": 3, \"x\": [")).find("model.merges"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"dropout\": null", "\"dropout\": 0.1")).find("dropout"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"lstrip\": false", "\"lstrip\": true"))
                .find("added token '<s>' ('added_tokens[0]'): lstrip is not supported"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "{\"id\": 11,", "{\"id\": \"11\",")).find("added_tokens[1].id"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"added_tokens\": [", "\"added_tokens\": 5, \"x\": ["))
                .find("'added_tokens' must be a list"),
            std::string::npos);
  EXPECT_NE(
      load_error(with(json, "\"normalizer\": null", "\"normalizer\": {\"type\": \"Lowercase\"}"))
          .find("unsupported normalizer"),
      std::string::npos);
  EXPECT_NE(load_error(with(json, "\"pre_tokenizer\": {\"type\": \"ByteLevel\"",
                            "\"pre_tokenizer\": {\"type\": \"Metaspace\""))
                .find("unsupported pre-tokenizer Metaspace"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"use_regex\": true", "\"use_regex\": \"yes\""))
                .find("'pre_tokenizer.use_regex' must be true or false"),
            std::string::npos);
  EXPECT_NE(load_error(with(json, "\"decoder\": {\"type\": \"ByteLevel\"",
                            "\"decoder\": {\"type\": \"WordPiece\""))
                .find("unsupported decoder 'WordPiece'"),
            std::string::npos);
  EXPECT_NE(load_error(tiny_json("{\"type\": \"RobertaProcessing\"}"))
                .find("unsupported post-processor 'RobertaProcessing'"),
            std::string::npos);
  EXPECT_NE(
      load_error(json, "{\"add_bos_token\": 1}").find("'add_bos_token' must be true or false"),
      std::string::npos);
  EXPECT_NE(load_error(json, "nope").find("tokenizer_config.json: not valid JSON"),
            std::string::npos);
}

TEST(GenaiTokenizer, MissingFile) {
  auto tok = Tokenizer::from_json_file("/nonexistent/tokenizer.json");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kNoSuchFile);
  EXPECT_NE(tok.status().message().find("'/nonexistent/tokenizer.json' does not exist"),
            std::string::npos);
}

}  // namespace
}  // namespace nxrt::genai
