// Tests of the metrics JSONL writer/reader (append, torn last line, bad lines) and of the HTML report
// (an <svg> per plot, legends, escaping, "no data" charts, nice ticks).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/error.h"
#include "core/files.h"
#include "report/metrics.h"
#include "report/report.h"
#include "report/svg_chart.h"
#include "temp_dir.h"

using namespace grpo;

namespace {

size_t count_of(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(Metrics, AppendsOneLinePerStepAndReadsBack) {
  test::TempDir dir;
  const std::string path = dir.path() + "/metrics.jsonl";
  {
    MetricsWriter w(path, /*truncate=*/true);
    nlohmann::json m = {{"critic/rewards/mean", 0.5}, {"actor/grad_norm", std::nan("")}};
    std::vector<double> lengths = {10, 20, 30};
    add_summary(m, "response_length", lengths);
    w.write(1, m);
    w.write(2, {{"critic/rewards/mean", 0.75}});
    EXPECT_THROW(w.write(3, nlohmann::json::array()), Error);
  }
  {
    MetricsWriter again(path);  // appends
    again.write(3, {{"critic/rewards/mean", 0.8}});
  }
  auto lines = read_metrics(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["step"], 1);
  EXPECT_TRUE(lines[0]["actor/grad_norm"].is_null());  // NaN is not JSON
  EXPECT_DOUBLE_EQ(lines[0]["response_length/mean"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(lines[0]["response_length/max"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ(lines[0]["response_length/min"].get<double>(), 10.0);
  EXPECT_EQ(lines[2]["step"], 3);

  std::ofstream(path, std::ios::app) << "{\"step\": 4, \"critic/rew";  // torn by a crash
  EXPECT_EQ(read_metrics(path).size(), 3u);
  std::ofstream(path, std::ios::app) << "\n{\"step\": 5}\n";  // now the torn line is in the middle
  try {
    read_metrics(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("metrics.jsonl:4"), std::string::npos) << e.what();
  }
}

TEST(Report, HasAnSvgPerPlotWithLegends) {
  std::vector<nlohmann::json> metrics;
  for (int step = 1; step <= 20; ++step) {
    nlohmann::json m = {{"step", step},
                        {"critic/rewards/mean", 0.2 + 0.03 * step},
                        {"reward/math/mean", 0.1 + 0.03 * step},
                        {"response_length/mean", 40.0 - step},
                        {"response_length/max", 64.0},
                        {"response_length/min", 8.0},
                        {"timing_s/gen", 2.0},
                        {"timing_s/update_actor", 1.0},
                        {"timing_s/step", 3.2},
                        {"perf/throughput", 900.0 + step},
                        {"perf/packing_efficiency", 0.97}};
    if (step % 5 == 0) m["val/accuracy"] = 0.3 + 0.01 * step;
    metrics.push_back(m);
  }
  ReportInfo info;
  info.title = "arith <GRPO> & friends";
  info.config_yaml = "data:\n  train_files: \"a<b>.jsonl\"\n";
  const std::string html = render_report(metrics, info);
  // 5 required plots + packing efficiency (present in the metrics); no actor metrics -> no actor plot.
  EXPECT_EQ(count_of(html, "<svg"), 6u);
  EXPECT_EQ(count_of(html, "</svg>"), 6u);
  for (const char* title : {"Reward", "Accuracy", "Response length", "Step time breakdown", "Throughput"})
    EXPECT_NE(html.find(std::string("<title>") + title + "</title>"), std::string::npos) << title;
  EXPECT_NE(html.find(">timing_s/update_actor</text>"), std::string::npos);  // legend entry
  EXPECT_NE(html.find(">val/accuracy</text>"), std::string::npos);
  EXPECT_GE(count_of(html, "<polyline"), 9u);
  EXPECT_NE(html.find("arith &lt;GRPO&gt; &amp; friends"), std::string::npos);
  EXPECT_EQ(html.find("a<b>"), std::string::npos);
  EXPECT_NE(html.find("64 s of steps"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

TEST(Report, EmptyMetricsStillDrawEveryRequiredPlot) {
  test::TempDir dir;
  const std::string metrics = dir.write("metrics.jsonl", "");
  write_report(metrics, dir.path() + "/report.html", {});
  const std::string html = read_file(dir.path() + "/report.html");
  EXPECT_EQ(count_of(html, "<svg"), 5u);
  EXPECT_EQ(count_of(html, "no data"), 5u);
}

TEST(SvgChart, NiceTicksAndSinglePoints) {
  auto t = nice_ticks(0.13, 0.87, 5);
  ASSERT_GE(t.size(), 2u);
  EXPECT_LE(t.front(), 0.13);
  EXPECT_GE(t.back(), 0.87);
  EXPECT_NEAR(t[1] - t[0], 0.2, 1e-12);
  auto flat = nice_ticks(5, 5, 5);
  EXPECT_LT(flat.front(), 5);
  EXPECT_GT(flat.back(), 5);
  auto big = nice_ticks(0, 12345, 5);
  EXPECT_NEAR(big[1] - big[0], 5000, 1e-9);
  EXPECT_THROW(nice_ticks(2, 1, 5), Error);

  std::string svg = svg_line_chart({"one", "step", "y", 640, 320}, {{"a", {{1, 2}}}, {"b", {{1, NAN}, {2, 3}, {3, 4}}}});
  EXPECT_EQ(count_of(svg, "<circle"), 3u);  // sparse series are marked point by point
  EXPECT_EQ(count_of(svg, "<polyline"), 1u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
}
