// A model folder's chat template (tokenizer_config.json "chat_template", as Hugging Face
// and nxrt.genai.convert write it) with the token strings Hugging Face passes to it:
// messages in, the prompt text out, as nxrt.genai.Engine.apply_chat_template renders it.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "genai/chat_template.h"

namespace nxrt::genai {

class ChatPrompt {
 public:
  // Reads <folder>/tokenizer_config.json; an error when it has no template or the
  // template does not parse (the message says where).
  static Expected<std::unique_ptr<ChatPrompt>> from_folder(const std::string& folder);

  // `messages` is a JSON array of {"role", "content", ...}; `extra` adds template
  // variables (tools, ...) and may be null.
  Expected<std::string> render(const nlohmann::ordered_json& messages,
                               bool add_generation_prompt = true,
                               const nlohmann::ordered_json* extra = nullptr) const;

 private:
  std::unique_ptr<ChatTemplate> template_;
  nlohmann::ordered_json tokens_;  // bos_token, eos_token, unk_token, pad_token
};

}  // namespace nxrt::genai
