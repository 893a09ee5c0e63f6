// The tool runner: verl's truncation, argument checks against schemas, unknown tools, concurrency, and
// command tools that crash, fail, hang or flood (cut off, their process groups killed, no zombie left).
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>

#include "error_of.h"
#include "temp_dir.h"
#include "tools/command_tool.h"
#include "tools/tool_runner.h"

namespace grpo::tools {
namespace {

ToolSet with_command(const std::string& name, const std::string& command, ToolSet set = ToolSet::builtin({"calculator"})) {
  nlohmann::ordered_json schema = {{"type", "function"},
                                   {"function",
                                    {{"name", name},
                                     {"description", "test"},
                                     {"parameters", {{"type", "object"}, {"properties", nlohmann::ordered_json::object()}}}}}};
  set.add(ToolEntry{name, "grpo.tools.CommandTool", schema, make_command_tool(name, command)});
  return set;
}

std::string call_of(const std::string& name, const nlohmann::json& args) { return format_tool_call({name, args}); }

// Children of this process that are zombies (state Z in /proc/<pid>/stat).
int zombie_children() {
  int n = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
    std::string pid, comm, state;
    long ppid = 0;
    if (!(f >> pid >> comm >> state >> ppid)) continue;
    if (ppid == ::getpid() && state == "Z") ++n;
  }
  ::closedir(d);
  return n;
}

TEST(Truncation, VerlsThreeSides) {
  const std::string text = "abcdefghij";
  EXPECT_EQ(truncate_tool_response(text, 10, TruncateSide::Middle), text);
  EXPECT_EQ(truncate_tool_response(text, 4, TruncateSide::Left), "abcd...(truncated)");
  EXPECT_EQ(truncate_tool_response(text, 4, TruncateSide::Right), "(truncated)...ghij");
  EXPECT_EQ(truncate_tool_response(text, 4, TruncateSide::Middle), "ab...(truncated)...ij");
  EXPECT_EQ(truncate_tool_response(text, 5, TruncateSide::Middle), "ab...(truncated)...ij");  // verl halves with //
}

TEST(Truncation, CountsCharactersNotBytes) {
  const std::string text = "\xC3\xA9\xC3\xA9\xC3\xA9\xE2\x82\xAC\xE2\x82\xAC";  // ééé€€: 5 characters, 12 bytes
  EXPECT_EQ(truncate_tool_response(text, 5, TruncateSide::Left), text);
  EXPECT_EQ(truncate_tool_response(text, 2, TruncateSide::Left), "\xC3\xA9\xC3\xA9...(truncated)");
  EXPECT_EQ(truncate_tool_response(text, 2, TruncateSide::Right), "(truncated)...\xE2\x82\xAC\xE2\x82\xAC");
  EXPECT_EQ(truncate_tool_response(text, 2, TruncateSide::Middle), "\xC3\xA9...(truncated)...\xE2\x82\xAC");
}

TEST(ToolRunner, RunsEveryBlockInOrderWithItsFailure) {
  ToolRunner runner(ToolSet::builtin({"calculator"}), ToolRunnerOptions{});
  const std::string turn = call_of("calculator", {{"expression", "1234*5678"}}) + "\n" +
                           "<tool_call>{oops}</tool_call>" + call_of("search", {{"q", "x"}}) +
                           call_of("calculator", {{"expr", "1"}}) + call_of("calculator", {{"expression", 12}}) +
                           call_of("calculator", {{"expression", "1/0"}});
  const auto results = runner.run_turn(turn).get();
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(results[0].failure, ToolFailure::None);
  EXPECT_EQ(results[0].text, "7006652");
  EXPECT_EQ(results[1].failure, ToolFailure::BadJson);
  EXPECT_EQ(results[1].text.rfind("Error when executing tool: the tool call is not valid JSON", 0), 0u) << results[1].text;
  EXPECT_EQ(results[2].failure, ToolFailure::UnknownTool);
  EXPECT_EQ(results[2].text, "Error when executing tool: unknown tool 'search' (available: calculator)");
  EXPECT_EQ(results[3].failure, ToolFailure::BadArguments);
  EXPECT_EQ(results[3].text, "Error when executing tool: calculator: missing required argument 'expression'");
  EXPECT_EQ(results[4].failure, ToolFailure::BadArguments);
  EXPECT_EQ(results[4].text, "Error when executing tool: calculator: argument 'expression' must be of type string, got 12");
  EXPECT_EQ(results[5].failure, ToolFailure::ToolError);
  EXPECT_EQ(results[5].text, "Error when executing tool: calculator: division by zero");
  for (const auto& r : results) EXPECT_GE(r.seconds, 0.0);
  EXPECT_TRUE(runner.run_turn("no call here").get().empty());
}

TEST(ToolRunner, TruncatesResultsAndErrorsAsVerlDoes) {
  ToolRunnerOptions o;
  o.max_tool_response_length = 6;
  o.tool_response_truncate_side = TruncateSide::Left;
  ToolRunner runner(ToolSet::builtin({"calculator"}), o);
  const auto r = runner.run_turn(call_of("calculator", {{"expression", "123456789 * 1000"}}) + "<tool_call>x</tool_call>").get();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].text, "123456...(truncated)");
  EXPECT_EQ(r[1].text, "Error ...(truncated)");
}

TEST(Truncation, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(valid_utf8("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z"), "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z");
  EXPECT_EQ(valid_utf8("a\xEF\xBF"), "a\xEF\xBF\xBD\xEF\xBF\xBD");   // a character cut short: each byte replaced
  std::string five_replacements;
  for (int i = 0; i < 5; ++i) five_replacements += "\xEF\xBF\xBD";
  EXPECT_EQ(valid_utf8("\xC0\xAF\xED\xA0\x80"), five_replacements);  // overlong, stray, surrogate
  EXPECT_EQ(truncate_tool_response("\xFF"
                                   "abc",
                                   10, TruncateSide::Left),
            "\xEF\xBF\xBD"
            "abc");
}

TEST(ToolRunner, ACallOfAnyBytesGivesValidUtf8) {
  // What a byte-level model writes may be any bytes: the error text quoting it must still be text (the tool
  // turn is tokenized), also where the quote is cut inside a character.
  ToolRunner runner(ToolSet::builtin({"calculator"}), ToolRunnerOptions{});
  const std::string cut_char = "<tool_call>{\"na\xEF\xBF</tool_call>";
  const std::string long_quote = "<tool_call>[" + std::string(198, 'x') + "\xC3\xA9\xC3\xA9]</tool_call>";
  const auto results = runner.run_turn(cut_char + long_quote).get();
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.failure, ToolFailure::BadJson);
    EXPECT_EQ(valid_utf8(r.text), r.text);
  }
}

TEST(ToolRunner, RefusesBadOptions) {
  const auto tools = ToolSet::builtin({"calculator"});
  ToolRunnerOptions o;
  o.threads = 0;
  EXPECT_NE(test::error_of([&] { ToolRunner r(tools, o); }).find("threads"), std::string::npos);
  o = {};
  o.max_tool_response_length = 0;
  EXPECT_NE(test::error_of([&] { ToolRunner r(tools, o); }).find("max_tool_response_length"), std::string::npos);
}

TEST(ToolRunner, ChecksArgumentsAgainstTheSchema) {
  ToolSet set;
  set.add(ToolEntry{"f", "grpo.tools.CommandTool", nlohmann::ordered_json::parse(R"({"type": "function", "function": {
      "name": "f", "parameters": {"type": "object", "additionalProperties": false,
      "properties": {"n": {"type": "integer"}, "x": {"type": ["number", "null"]}, "mode": {"type": "string", "enum": ["a", "b"]},
                     "flag": {"type": "boolean"}, "items": {"type": "array"}},
      "required": ["n"]}}})"), make_command_tool("f", "cat")});
  ToolRunner runner(set, ToolRunnerOptions{});
  auto one = [&](const nlohmann::json& args) { return runner.run_call({"f", args}); };
  EXPECT_EQ(one({{"n", 3}}).failure, ToolFailure::None);
  EXPECT_EQ(one({{"n", 3}}).text, "{\"n\":3}\n");  // the command got the arguments on stdin
  EXPECT_EQ(one({{"n", 3.0}, {"x", nullptr}, {"mode", "b"}, {"flag", true}, {"items", {1, 2}}}).failure, ToolFailure::None);
  EXPECT_EQ(one({{"n", 3.5}}).text, "Error when executing tool: f: argument 'n' must be of type integer, got 3.5");
  EXPECT_EQ(one({{"x", 1}}).text, "Error when executing tool: f: missing required argument 'n'");
  EXPECT_EQ(one({{"n", 1}, {"x", "1"}}).text,
            "Error when executing tool: f: argument 'x' must be of type number or null, got \"1\"");
  EXPECT_EQ(one({{"n", 1}, {"mode", "c"}}).text,
            "Error when executing tool: f: argument 'mode' must be one of [\"a\",\"b\"], got \"c\"");
  EXPECT_EQ(one({{"n", 1}, {"flag", 1}}).failure, ToolFailure::BadArguments);
  EXPECT_EQ(one({{"n", 1}, {"other", 1}}).text, "Error when executing tool: f: unexpected argument 'other'");
}

TEST(CommandTool, OutputCrashesExitsHangsAndFloods) {
  ToolSet set = with_command("echo_args", "cat");
  set = with_command("fails", "echo 'bad input' >&2; exit 3", set);
  set = with_command("dies", "kill -SEGV $$", set);
  set = with_command("missing", "/nonexistent/tool", set);
  set = with_command("hangs", "sleep 30", set);
  set = with_command("hangs_child", "sleep 30 & wait", set);
  set = with_command("floods", "yes", set);
  set = with_command("ignores_stdin", "echo done", set);
  set = with_command("lingers", "exec >&- 2>&-; sleep 0.2; exit 0", set);
  ToolRunnerOptions o;
  o.timeout_s = 1;
  o.max_tool_output_bytes = 1 << 16;
  o.max_tool_response_length = 1000;
  ToolRunner runner(set, o);
  auto run = [&](const std::string& name) { return runner.run_call({name, nlohmann::json::object()}); };

  EXPECT_EQ(run("echo_args").text, "{}\n");
  const auto fails = run("fails");
  EXPECT_EQ(fails.failure, ToolFailure::Crashed);
  EXPECT_EQ(fails.text, "Error when executing tool: fails exited with status 3: bad input");
  const auto dies = run("dies");
  EXPECT_EQ(dies.failure, ToolFailure::Crashed);
  EXPECT_EQ(dies.text, "Error when executing tool: dies was killed by signal 11");
  const auto missing = run("missing");
  EXPECT_EQ(missing.failure, ToolFailure::Crashed);
  EXPECT_NE(missing.text.find("command not found"), std::string::npos) << missing.text;
  for (const char* name : {"hangs", "hangs_child"}) {
    const auto hang = run(name);
    EXPECT_EQ(hang.failure, ToolFailure::Timeout) << name;
    EXPECT_EQ(hang.text, cat("Error when executing tool: ", name, " timed out after 1 s"));
  }
  const auto flood = run("floods");
  EXPECT_EQ(flood.failure, ToolFailure::OutputTooLong);
  EXPECT_EQ(flood.text, "Error when executing tool: floods wrote more than 65536 bytes of output");
  EXPECT_EQ(run("ignores_stdin").text, "done\n");
  EXPECT_EQ(run("lingers").failure, ToolFailure::None);  // closing its output early is not the end of it
  EXPECT_EQ(zombie_children(), 0);
}

TEST(CommandTool, ACommandThatStopsReadingItsArgumentsIsNoSignalToUs) {
  ToolSet set = with_command("deaf", "exec 0<&-; sleep 0.1; echo ok");
  ToolRunner runner(set, ToolRunnerOptions{});
  // 1 MB of arguments: more than a socket buffer holds, so the write meets the closed end (EPIPE, no SIGPIPE).
  const auto r = runner.run_call({"deaf", {{"text", std::string(1 << 20, 'x')}}});
  EXPECT_EQ(r.failure, ToolFailure::None);
  EXPECT_EQ(r.text, "ok\n");
}

TEST(CommandTool, NothingOfAHungToolIsLeftRunning) {
  test::TempDir dir;
  const std::string marker = dir.path() + "/alive";
  // The tool starts a grandchild that would write the marker after the timeout, then hangs.
  ToolSet set = with_command("spawns", cat("(sleep 2; touch ", marker, ") & sleep 30"));
  ToolRunnerOptions o;
  o.timeout_s = 0.5;
  ToolRunner runner(set, o);
  EXPECT_EQ(runner.run_call({"spawns", nlohmann::json::object()}).failure, ToolFailure::Timeout);
  ::usleep(2500 * 1000);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the tool's process group survived its timeout";
  EXPECT_EQ(zombie_children(), 0);
}

TEST(ToolRunner, RunsCallsConcurrentlyAndNeverBlocksTheCaller) {
  test::TempDir dir;
  const std::string arrived = dir.path() + "/arrived", go = dir.path() + "/go";
  std::filesystem::create_directories(arrived);
  // Each call checks in, then waits until all four have and the caller has said go: run one after
  // another, or with run_turn waiting for them, the calls would time out instead.
  ToolSet set = with_command("barrier", cat("touch ", arrived, "/$$; while [ $(ls ", arrived, " | wc -l) -lt 4 ] || [ ! -e ",
                                            go, " ]; do sleep 0.01; done; echo ok"));
  ToolRunnerOptions o;
  o.threads = 4;
  o.timeout_s = 60;
  ToolRunner runner(set, o);
  std::string turn;
  for (int i = 0; i < 4; ++i) turn += call_of("barrier", nlohmann::json::object());
  auto first = runner.run_turn(turn);
  std::ofstream(go).put('\n');
  const auto r1 = first.get();
  ASSERT_EQ(r1.size(), 4u);
  for (const auto& r : r1) EXPECT_EQ(r.text, "ok\n") << failure_name(r.failure);
}

TEST(ToolRunner, ManyTurnsFromManyThreads) {
  ToolRunnerOptions o;
  o.threads = 3;
  ToolRunner runner(ToolSet::builtin({"calculator"}), o);
  std::vector<std::thread> callers;
  std::vector<int> wrong(8, 0);
  for (int t = 0; t < 8; ++t)
    callers.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string turn =
            call_of("calculator", {{"expression", cat(t, "*", i)}}) + call_of("calculator", {{"expression", cat(i, "+", t)}});
        const auto r = runner.run_turn(turn).get();
        wrong[static_cast<size_t>(t)] += r.size() != 2 || r[0].text != std::to_string(t * i) || r[1].text != std::to_string(i + t);
      }
    });
  for (auto& c : callers) c.join();
  for (int w : wrong) EXPECT_EQ(w, 0);
}

}  // namespace
}  // namespace grpo::tools
