// What a generation engine needs from a model folder's genai_config.json (the layout of
// onnxruntime-genai's model builder, which nxrt.genai.convert also writes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace nxrt::genai {

struct SearchDefaults {
  bool do_sample = false;
  float temperature = 1.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float repetition_penalty = 1.0f;
  bool past_present_share_buffer = false;
};

struct ModelConfig {
  std::string model_file;  // decoder.filename, relative to the folder
  int layers = 0;
  int kv_heads = 0;
  int head_size = 0;
  int64_t context_length = 0;
  std::vector<int32_t> eos_token_ids;
  // Graph input and output names; the cache names are printf patterns with one %d.
  std::string input_ids = "input_ids", attention_mask = "attention_mask",
              position_ids = "position_ids", past_key = "past_key_values.%d.key",
              past_value = "past_key_values.%d.value";
  std::string logits = "logits", present_key = "present.%d.key", present_value = "present.%d.value";
  SearchDefaults search;

  // Reads `path`; errors name the file and the entry at fault.
  static Expected<ModelConfig> from_file(const std::string& path);
  static Expected<ModelConfig> from_json(std::string_view text, const std::string& path);
};

// "past_key_values.%d.key" with 3 -> "past_key_values.3.key".
std::string layer_name(const std::string& pattern, int layer);

}  // namespace nxrt::genai
