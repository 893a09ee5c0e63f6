// Template construction and the per-source cache of parsed templates.
#include "tokenizer/jinja/template.h"

#include <mutex>
#include <unordered_map>

#include "tokenizer/jinja/parser.h"

namespace grpo::jinja {

Template::Template(std::string_view source, std::string name)
    : name_(std::move(name)), body_(parse_template(source, name_)) {}

std::shared_ptr<const Template> cached_template(const std::string& source, const std::string& name) {
  constexpr size_t kMaxEntries = 64;  // a process uses a handful of templates; bound the memory anyway
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<const Template>> cache;
  std::string key = name;
  key += '\0';
  key += source;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  auto parsed = std::make_shared<const Template>(source, name);
  if (cache.size() >= kMaxEntries) cache.clear();
  cache.emplace(std::move(key), parsed);
  return parsed;
}

}  // namespace grpo::jinja
