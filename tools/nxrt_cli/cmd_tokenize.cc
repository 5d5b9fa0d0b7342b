// `nxrt tokenize`: the ids of a text under a tokenizer.json, or (--decode) the text of ids.
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>

#include "commands.h"
#include "core/mapped_file.h"
#include "genai/tokenizer.h"

namespace nxrt::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

Expected<std::string> read_input(const TokenizeArgs& args) {
  if (args.text_given == args.file_given)
    return invalid_argument("give the input with exactly one of --text and --file");
  if (args.text_given) return args.text;
  auto file = MappedFile::open(args.file);
  if (!file) {
    Status s = std::move(file).status();
    if (s.code() == StatusCode::kNoSuchFile)
      return make_error(StatusCode::kNoSuchFile, "input file '", args.file,
                        "' does not exist or is not a file");
    return s;
  }
  return std::string((*file)->data(), (*file)->size());
}

// Ids separated by white space or commas.
Expected<std::vector<int32_t>> parse_ids(std::string_view text) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    const auto separator = [&](size_t k) {
      return std::isspace(static_cast<unsigned char>(text[k])) || text[k] == ',';
    };
    if (separator(i)) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && !separator(end)) ++end;
    const std::string_view word = text.substr(i, end - i);
    int32_t id = 0;
    const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), id);
    if (ec != std::errc() || ptr != word.data() + word.size())
      return invalid_argument("'", word,
                              "' is not a token id (ids are integers separated by "
                              "spaces or commas)");
    ids.push_back(id);
    i = end;
  }
  return ids;
}

}  // namespace

Status tokenize_command(const TokenizeArgs& args) {
  NXRT_ASSIGN_OR_RETURN(std::string input, read_input(args));
  const auto load_start = Clock::now();
  NXRT_ASSIGN_OR_RETURN(std::unique_ptr<genai::Tokenizer> tokenizer,
                        genai::Tokenizer::from_json_file(args.tokenizer));
  const double load_ms = ms_since(load_start);

  if (args.decode) {
    NXRT_ASSIGN_OR_RETURN(std::vector<int32_t> ids, parse_ids(input));
    const auto start = Clock::now();
    NXRT_ASSIGN_OR_RETURN(std::string text, tokenizer->decode(ids, args.skip_special_tokens));
    const double decode_ms = ms_since(start);
    // As it is, without a newline, so that decoding gives back the encoded text exactly.
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (args.stats)
      std::fprintf(stderr, "tokenizer loaded in %.1f ms; decoded %zu tokens in %.2f ms\n", load_ms,
                   ids.size(), decode_ms);
    return Status();
  }

  const auto start = Clock::now();
  const std::vector<int32_t> ids = tokenizer->encode(input, args.add_special_tokens);
  const double encode_ms = ms_since(start);
  std::string line;
  line.reserve(ids.size() * 6);
  for (size_t k = 0; k < ids.size(); ++k) {
    if (k) line += ' ';
    line += std::to_string(ids[k]);
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  if (args.stats) {
    // Again with the word cache filled by the first call, as a long-running process sees.
    const auto again = Clock::now();
    const size_t n = tokenizer->encode(input, args.add_special_tokens).size();
    const double warm_ms = ms_since(again);
    std::fprintf(stderr,
                 "tokenizer loaded in %.1f ms; encoded %zu bytes into %zu tokens in %.2f ms "
                 "(%.0f tokens/s), again with the word cache filled in %.2f ms (%.0f tokens/s)\n",
                 load_ms, input.size(), ids.size(), encode_ms, ids.size() / (encode_ms / 1e3),
                 warm_ms, n / (warm_ms / 1e3));
  }
  return Status();
}

}  // namespace nxrt::cli
