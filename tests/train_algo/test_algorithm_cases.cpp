// verl's own numbers (../shared/reference/algorithms, computed by verl's core_algos.py): every case run
// through the training code (train/algorithm_cases.h) must give verl's outputs, 1e-5 relative on values and
// 1e-4 of the largest gradient; refused cases must be refused.
#include <gtest/gtest.h>

#include <cmath>

#include "grpo_case_reader.h"
#include "train/algorithm_cases.h"

using namespace grpo;
using namespace grpo::train;

namespace {

const std::string kDir = std::string(GRPO_SHARED_DIR) + "/reference/algorithms";

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

}  // namespace

TEST(AlgorithmCases, EveryVerlCaseMatches) {
  const nlohmann::json cases = read_algorithm_cases(kDir);
  int checked = 0;
  for (const auto& [name, c] : cases.items()) {
    SCOPED_TRACE(name);
    const AlgorithmCaseResult r = run_algorithm_case(kDir, name, c);
    const bool refused = c["kind"].get<std::string>().find("_refused") != std::string::npos;
    ASSERT_EQ(r.refused, refused) << r.error;
    if (refused) {
      if (c.contains("error")) {
        EXPECT_NE(r.error.find(c["error"].get<std::string>()), std::string::npos) << r.error;
      }
      ++checked;
      continue;
    }
    const auto expected = test::read_reference_tensors(kDir + "/" + name + ".safetensors");
    for (const auto& o : c["outputs"]) {
      const std::string out = o.get<std::string>();
      SCOPED_TRACE(out);
      ASSERT_TRUE(r.outputs.count(out));
      const std::vector<double>& want = expected.at(out);
      const std::vector<float>& got = r.outputs.at(out).data;
      ASSERT_EQ(got.size(), want.size());
      const bool gradient = out.rfind("grad.", 0) == 0;
      const double scale = max_abs(want);
      for (size_t i = 0; i < want.size(); ++i) {
        const double tol = gradient ? 1e-4 * scale + 1e-12 : 1e-5 * std::abs(want[i]) + 1e-7;
        ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 70);
}
