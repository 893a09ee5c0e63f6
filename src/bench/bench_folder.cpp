// The benchmarks' work folder: model, data and config written once, before the runs (see bench_folder.h).
#include "bench/bench_folder.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/files.h"
#include "data/arith.h"
#include "data/shapes.h"
#include "data/byte_model.h"
#include "demo/example_configs.h"

namespace grpo::cli {

BenchFolder prepare_bench_folder(const GrpoBenchOptions& o, const std::string& out, const char* command) {
  namespace fs = std::filesystem;
  BenchFolder f;
  f.out = out;
  if (f.out.empty()) {
    std::string name = std::string("grpo-") + command + "-XXXXXX";
    std::replace(name.begin(), name.end(), ' ', '-');
    std::string tmpl = (fs::temp_directory_path() / name).string();
    GRPO_CHECK(mkdtemp(tmpl.data()) != nullptr, "[", command, "] cannot create a folder in ", fs::temp_directory_path());
    f.out = tmpl;
  }
  make_dirs(f.out);
  std::fprintf(stderr, "[%s] work folder %s: random %s:%s model, %s, %s compute\n", command, f.out.c_str(),
               o.arch.c_str(), o.preset.c_str(), o.vl ? "shapes pictures and questions" : "arithmetic prompts",
               o.dtype.c_str());
  write_byte_model(f.out + "/model", o.arch, o.preset, 1234 + o.seed);
  const int64_t problems = std::max<int64_t>(o.vl ? 200 : 1000, o.prompts * o.steps);
  f.train_path = o.vl ? write_shapes_dataset(f.out + "/data", problems, 1, o.seed, "mixed").train_path
                      : write_arith_dataset(f.out + "/data", problems, 0, o.seed, "mixed").train_path;
  f.yaml = f.out + (o.vl ? "/shapes-grpo.yaml" : "/arith-grpo.yaml");
  write_file_atomic(f.yaml, o.vl ? kShapesGrpoYaml : kArithGrpoYaml);
  return f;
}

}  // namespace grpo::cli
