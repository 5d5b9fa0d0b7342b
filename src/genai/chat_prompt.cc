#include "genai/chat_prompt.h"

#include "core/mapped_file.h"

namespace nxrt::genai {

Expected<std::unique_ptr<ChatPrompt>> ChatPrompt::from_folder(const std::string& folder) {
  const std::string path = folder + "/tokenizer_config.json";
  auto file = MappedFile::open(path);
  if (!file)
    return invalid_argument(folder,
                            ": the model has no chat template (no readable "
                            "tokenizer_config.json)");
  nlohmann::ordered_json config;
  try {
    config = nlohmann::ordered_json::parse((*file)->data(), (*file)->data() + (*file)->size());
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(path, ": not valid JSON (", e.what(), ")");
  }
  if (!config.is_object()) return invalid_argument(path, ": not a JSON object");
  const nlohmann::ordered_json* source = nullptr;
  if (auto it = config.find("chat_template"); it != config.end()) {
    if (it->is_string()) {
      source = &*it;
    } else if (it->is_array()) {  // named templates: [{"name", "template"}, ...]
      for (const auto& entry : *it)
        if (entry.is_object() && entry.value("name", "") == "default" &&
            entry.contains("template") && entry["template"].is_string())
          source = &entry["template"];
    }
  }
  if (source == nullptr || source->get_ref<const std::string&>().empty())
    return invalid_argument(folder,
                            ": the model has no chat template (no 'chat_template' in "
                            "tokenizer_config.json)");
  auto parsed = ChatTemplate::parse(source->get_ref<const std::string&>());
  if (!parsed)
    return invalid_argument(path,
                            ": the chat template does not parse: ", parsed.status().message());
  auto prompt = std::unique_ptr<ChatPrompt>(new ChatPrompt());
  prompt->template_ = std::move(*parsed);
  prompt->tokens_ = nlohmann::ordered_json::object();
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    auto it = config.find(key);
    if (it == config.end()) continue;
    const nlohmann::ordered_json* value = &*it;
    if (value->is_object() && value->contains("content"))  // an AddedToken
      value = &(*value)["content"];
    if (value->is_string()) prompt->tokens_[key] = *value;
  }
  return prompt;
}

Expected<std::string> ChatPrompt::render(const nlohmann::ordered_json& messages,
                                         bool add_generation_prompt,
                                         const nlohmann::ordered_json* extra) const {
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = messages;
  context["add_generation_prompt"] = add_generation_prompt;
  for (const auto& [key, value] : tokens_.items()) context[key] = value;
  if (extra != nullptr && extra->is_object())
    for (const auto& [key, value] : extra->items()) context[key] = value;
  return template_->render(context);
}

}  // namespace nxrt::genai
