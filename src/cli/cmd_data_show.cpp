// `grpo data show FILE [--rows N]`: prints a Parquet or JSONL data file's rows, one JSON object a line, with
// all their columns (Parquet: structs as objects, lists as arrays, nulls as null, binary values as their
// size in bytes), for a user to check their data before a run.
#include <algorithm>
#include <cstdio>

#include "cli/command.h"
#include "core/error.h"
#include "core/files.h"
#include "data/parquet/parquet_file.h"

namespace grpo::cli {
namespace {

// Binary values (pictures, raw bytes) are shown as their size in bytes.
void binary_as_size(nlohmann::json& v) {
  if (v.is_binary()) {
    v = static_cast<uint64_t>(v.get_binary().size());
  } else if (v.is_structured()) {
    for (auto& e : v) binary_as_size(e);
  }
}

void print_row(nlohmann::json& row) {
  binary_as_size(row);
  const std::string line = row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
}

bool is_parquet(const std::string& path) {
  const bool by_name = path.size() >= 8 && path.compare(path.size() - 8, 8, ".parquet") == 0;
  return by_name || (path != "-" && parquet::has_parquet_magic(path));
}

void show(const std::string& path, int64_t max_rows) {
  int64_t shown = 0;
  if (is_parquet(path)) {
    const parquet::ParquetFile file(path);
    for (int g = 0; g < file.num_row_groups(); ++g) {
      const int64_t n = file.row_group_rows(g);
      for (int64_t b = 0; b < n; b += parquet::ParquetFile::kRowsPerRead) {
        int64_t e = std::min(n, b + parquet::ParquetFile::kRowsPerRead);
        if (max_rows > 0) e = std::min(e, b + max_rows - shown);
        if (e <= b) return;
        for (auto& row : file.read_rows(g, b, e)) print_row(row);
        shown += e - b;
      }
    }
    return;
  }
  for_each_line(path, [&](int64_t line_no, const std::string& line) {
    if (max_rows > 0 && shown >= max_rows) return;
    if (line.find_first_not_of(" \t\r") == std::string::npos) return;
    nlohmann::json row;
    try {
      row = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail("[data] ", path, ":", line_no, ": not JSON (", e.what(), ")");
    }
    print_row(row);
    ++shown;
  });
}

void setup_data_show(CLI::App& app) {
  CLI::App* data = group_command(app, "data", "Datasets: built-in task generators");
  auto path = std::make_shared<std::string>();
  auto rows = std::make_shared<int64_t>(0);
  CLI::App* cmd = data->add_subcommand(
      "show", "Print a data file's rows (Parquet or JSONL), one JSON object a line; binary values as their size");
  cmd->add_option("file", *path, "A .parquet or .jsonl file")->required();
  cmd->add_option("--rows", *rows, "Print at most N rows (0: all)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->callback([path, rows] {
    show(*path, *rows);
    std::fflush(stdout);
  });
}

GRPO_REGISTER_COMMAND(setup_data_show);

}  // namespace
}  // namespace grpo::cli
