// Tests of the metrics JSONL writer/reader (append, torn last line, bad lines) and of the HTML report
// (an <svg> per plot, legends, escaping, "no data" charts, nice ticks; SFT's loss, learning rate and
// accuracy; whole-number step ticks; the step-time bars adding up to the step; actor statistics each on
// its own scale).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

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

// The <svg> element of the chart titled `title` ("" when there is none).
std::string chart(const std::string& html, const std::string& title) {
  const size_t t = html.find("<title>" + title + "</title>\n<rect");
  if (t == std::string::npos) return "";
  const size_t begin = html.rfind("<svg", t);
  return html.substr(begin, html.find("</svg>", t) + 6 - begin);
}

// The texts of the elements of class `cls` (tick labels) in an svg.
std::vector<std::string> texts_of(const std::string& svg, const std::string& cls) {
  std::vector<std::string> out;
  const std::string open = "class=\"" + cls + "\"";
  for (size_t p = svg.find(open); p != std::string::npos; p = svg.find(open, p + 1)) {
    const size_t b = svg.find('>', p) + 1;
    out.push_back(svg.substr(b, svg.find('<', b) - b));
  }
  return out;
}

// The number in attribute `name` of the element that starts at `pos`.
double attribute(const std::string& svg, size_t pos, const std::string& name) {
  const size_t a = svg.find(" " + name + "=\"", pos) + name.size() + 3;
  return std::stod(svg.substr(a, svg.find('"', a) - a));
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
  // 5 required plots + packing efficiency (present in the metrics); no actor metrics -> no actor plots.
  EXPECT_EQ(count_of(html, "<svg"), 6u);
  EXPECT_EQ(count_of(html, "</svg>"), 6u);
  for (const char* title : {"Reward", "Held-out accuracy", "Response length", "Step time", "Throughput"})
    EXPECT_NE(chart(html, title), "") << title;
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
  ReportInfo sft;
  sft.kind = ReportKind::Sft;
  const std::string sft_html = render_report({}, sft);
  EXPECT_EQ(count_of(sft_html, "<svg"), 3u);
  EXPECT_EQ(count_of(sft_html, "no data"), 3u);
}

// The metrics grpo sft writes: a line per step, then one validation line at the last step.
TEST(Report, SftShowsItsLossLearningRateAndAccuracy) {
  std::vector<nlohmann::json> metrics;
  for (int step = 1; step <= 30; ++step)
    metrics.push_back({{"step", step},
                       {"train/loss", 3.0 / step},
                       {"train/lr", 1e-3 * (step < 5 ? step / 5.0 : 1.0)},
                       {"actor/grad_norm", 2.0},
                       {"actor/entropy", 1.5},
                       {"perf/throughput", 1000.0},
                       {"perf/packing_efficiency", 0.95},
                       {"timing_s/step", 0.5},
                       {"training/epoch", 0}});
  metrics.push_back({{"step", 30}, {"val/accuracy", 0.42}, {"val/response_length/mean", 20.0}, {"timing_s/testing", 3}});
  ReportInfo info;
  info.kind = ReportKind::Sft;
  const std::string html = render_report(metrics, info);
  for (const char* title : {"Loss", "Learning rate", "Held-out accuracy"}) {
    const std::string svg = chart(html, title);
    ASSERT_NE(svg, "") << title;
    EXPECT_EQ(svg.find("no data"), std::string::npos) << title;
  }
  EXPECT_NE(chart(html, "Loss").find("<polyline"), std::string::npos);
  EXPECT_NE(chart(html, "Learning rate").find("<polyline"), std::string::npos);
  // GRPO's charts are not SFT's.
  for (const char* title : {"Reward", "Response length"}) EXPECT_EQ(chart(html, title), "") << title;
  // Accuracy is a percentage on a 0-100 axis, its one point marked.
  const std::string acc = chart(html, "Held-out accuracy");
  const std::vector<std::string> y = texts_of(acc, "ytick");
  ASSERT_FALSE(y.empty());
  EXPECT_EQ(y.front(), "0");
  EXPECT_EQ(y.back(), "100");
  EXPECT_EQ(count_of(acc, "<circle"), 1u);
  EXPECT_NE(html.find("held-out accuracy 42.0%"), std::string::npos);
  EXPECT_NE(html.find("loss 3 &rarr; 0.1"), std::string::npos);
}

// Steps are whole numbers: a three-step run's axes show 1, 2, 3, never 1.5, and span the run's steps.
TEST(Report, StepAxesHaveWholeNumberTicks) {
  for (int steps : {2, 3, 7, 40, 1}) {
    std::vector<nlohmann::json> metrics;
    for (int step = 1; step <= steps; ++step)
      metrics.push_back({{"step", step}, {"critic/rewards/mean", 0.1 * step}, {"timing_s/step", 1.0}});
    const std::string html = render_report(metrics, {});
    const std::string svg = chart(html, "Reward");
    const std::vector<std::string> x = texts_of(svg, "xtick");
    ASSERT_GE(x.size(), 2u) << steps;
    for (const std::string& t : x) {
      EXPECT_EQ(t.find('.'), std::string::npos) << steps << " steps: tick " << t;
      if (steps > 1) {  // the axis spans the run's steps (one step: a range around it)
        EXPECT_GE(std::stod(t), 1) << steps << " steps: tick " << t;
        EXPECT_LE(std::stod(t), steps) << steps << " steps: tick " << t;
      }
    }
  }
  EXPECT_EQ(nice_ticks(1, 3, 6, /*integer=*/true), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(nice_ticks(4, 4, 6, /*integer=*/true), (std::vector<double>{3, 4, 5}));
}

// The step-time chart stacks the parts of each step: the stack of a step reaches its timing_s/step, which
// is drawn over the bars, and communication is one of the parts.
TEST(Report, StepTimeBarsAddUpToTheStep) {
  std::vector<nlohmann::json> metrics;
  for (int step = 1; step <= 4; ++step) {
    nlohmann::json m = {{"step", step}};
    const double parts[] = {2.0 + step, 0.25, 0.01, 0.0, 0.0, 1.5, 0.05, 0.125, 0.0625};
    double total = 0;
    for (size_t i = 0; i < step_time_parts().size(); ++i) {
      m["timing_s/" + step_time_parts()[i]] = parts[i];
      total += parts[i];
    }
    m["timing_s/step"] = total;
    m["timing_s/vision_gen"] = 1.0;  // inside gen: not a part
    metrics.push_back(m);
  }
  EXPECT_NE(std::find(step_time_parts().begin(), step_time_parts().end(), "comm"), step_time_parts().end());
  const std::string svg = chart(render_report(metrics, {}), "Step time");
  ASSERT_NE(svg, "");
  EXPECT_NE(svg.find(">timing_s/comm</text>"), std::string::npos);
  EXPECT_EQ(svg.find(">timing_s/ref</text>"), std::string::npos) << "an all-zero part has no legend entry";
  EXPECT_EQ(svg.find("vision"), std::string::npos);
  // Bars: x centre -> [top, bottom] of its stack (pixels).
  std::map<double, std::pair<double, double>> stacks;
  size_t bars = 0;
  for (size_t p = svg.find("<rect x="); p != std::string::npos; p = svg.find("<rect x=", p + 1)) {
    if (svg.compare(svg.find('>', p) + 1, 7, "<title>") != 0) continue;  // a legend swatch or the frame
    const double x = attribute(svg, p, "x") + attribute(svg, p, "width") / 2, y = attribute(svg, p, "y");
    const double h = attribute(svg, p, "height");
    auto it = std::find_if(stacks.begin(), stacks.end(), [x](const auto& e) { return std::abs(e.first - x) < 0.3; });
    if (it == stacks.end()) it = stacks.emplace(x, std::make_pair(y, y + h)).first;
    it->second = {std::min(it->second.first, y), std::max(it->second.second, y + h)};
    ++bars;
  }
  ASSERT_EQ(stacks.size(), 4u);
  EXPECT_EQ(bars, 4u * 7);  // 7 non-zero parts a step
  // The totals line passes through the top of each stack (coordinates are rounded to 0.1 pixel).
  const size_t line = svg.find("<polyline");
  ASSERT_NE(line, std::string::npos);
  const size_t pts = svg.find("points=\"", line) + 8;
  std::string points = svg.substr(pts, svg.find('"', pts) - pts);
  for (auto& c : points) if (c == ',') c = ' ';
  std::istringstream in(points);
  double x, y;
  size_t matched = 0;
  while (in >> x >> y) {
    auto it = std::find_if(stacks.begin(), stacks.end(), [x](const auto& e) { return std::abs(e.first - x) < 0.3; });
    ASSERT_NE(it, stacks.end()) << x;
    EXPECT_NEAR(it->second.first, y, 0.25) << "the parts do not reach the step at x " << x;
    ++matched;
  }
  EXPECT_EQ(matched, 4u);
}

// A grad norm of ~6 and losses of ~0.01 are not drawn on one axis: each actor statistic has its own chart.
TEST(Report, ActorStatisticsEachOnTheirOwnScale) {
  std::vector<nlohmann::json> metrics;
  for (int step = 1; step <= 10; ++step)
    metrics.push_back({{"step", step},
                       {"actor/pg_loss", 0.01 * (step % 3)},
                       {"actor/kl_loss", 0.001},
                       {"actor/entropy", 0.8},
                       {"actor/pg_clipfrac", 0.002 * step},
                       {"actor/ppo_kl", 1e-4},
                       {"actor/grad_norm", 6.0 + step},
                       {"actor/lr", 2e-5}});
  const std::string html = render_report(metrics, {});
  for (const auto& [title, key] : std::vector<std::pair<std::string, std::string>>{
           {"Policy loss", "actor/pg_loss"},
           {"KL loss (vs reference)", "actor/kl_loss"},
           {"Entropy", "actor/entropy"},
           {"Clip fraction", "actor/pg_clipfrac"},
           {"Policy KL (vs old policy)", "actor/ppo_kl"},
           {"Grad norm", "actor/grad_norm"},
           {"Learning rate", "actor/lr"}}) {
    const std::string svg = chart(html, title);
    ASSERT_NE(svg, "") << title;
    EXPECT_EQ(count_of(svg, "<polyline"), 1u) << title << ": one metric a chart";
    EXPECT_NE(svg.find(">" + key + "</text>"), std::string::npos) << title;
  }
  const std::vector<std::string> loss_ticks = texts_of(chart(html, "Policy loss"), "ytick");
  ASSERT_FALSE(loss_ticks.empty());
  EXPECT_LE(std::stod(loss_ticks.back()), 0.05) << "the loss axis spans the losses, not the grad norm";
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
  EXPECT_EQ(nice_ticks(0, 0, 5).front(), 0) << "an all-zero series needs no negative axis";
  EXPECT_GE(nice_ticks(0, 0, 5).back(), 1);
  auto big = nice_ticks(0, 12345, 5);
  EXPECT_NEAR(big[1] - big[0], 5000, 1e-9);
  EXPECT_THROW(nice_ticks(2, 1, 5), Error);

  ChartOptions o;
  o.title = "one";
  std::string svg = svg_line_chart(o, {{"a", {{1, 2}}}, {"b", {{1, NAN}, {2, 3}, {3, 4}}}});
  EXPECT_EQ(count_of(svg, "<circle"), 3u);  // sparse series are marked point by point
  EXPECT_EQ(count_of(svg, "<polyline"), 1u);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
}
