// Metrics JSONL writer and reader (see metrics.h).
#include "report/metrics.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/files.h"

namespace grpo {

namespace {

nlohmann::json finite_or_null(const nlohmann::json& v) {
  if (v.is_number_float() && !std::isfinite(v.get<double>())) return nullptr;
  if (v.is_object() || v.is_array()) {
    nlohmann::json out = v;
    for (auto& item : out) item = finite_or_null(item);
    return out;
  }
  return v;
}

}  // namespace

MetricsWriter::MetricsWriter(const std::string& path, bool truncate) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
  if (fd_ < 0) fail("[metrics] cannot open ", path, ": ", std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsWriter::write(int64_t step, const nlohmann::json& metrics) {
  GRPO_CHECK(metrics.is_object(), "[metrics] step ", step, ": metrics must be a JSON object, got ", metrics.type_name());
  nlohmann::json line = {{"step", step}};
  for (const auto& [k, v] : metrics.items()) line[k] = finite_or_null(v);
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // One write() on an O_APPEND descriptor: the line lands whole or (on a crash) torn at the end.
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("[metrics] cannot write ", path_, ": ", std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

std::vector<nlohmann::json> read_metrics(const std::string& path) {
  std::vector<std::pair<int64_t, std::string>> lines;
  for_each_line(path, [&](int64_t n, const std::string& line) {
    if (!line.empty()) lines.emplace_back(n, line);
  });
  std::vector<nlohmann::json> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    auto j = nlohmann::json::parse(lines[i].second, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() && i + 1 == lines.size()) break;  // torn by a crash while writing
    GRPO_CHECK(j.is_object(), "[metrics] ", path, ":", lines[i].first, ": expected a JSON object");
    out.push_back(std::move(j));
  }
  return out;
}

void add_summary(nlohmann::json& m, const std::string& prefix, std::span<const double> values) {
  if (values.empty()) return;
  double sum = 0;
  for (double v : values) sum += v;
  m[prefix + "/mean"] = sum / static_cast<double>(values.size());
  m[prefix + "/max"] = *std::max_element(values.begin(), values.end());
  m[prefix + "/min"] = *std::min_element(values.begin(), values.end());
}

}  // namespace grpo
