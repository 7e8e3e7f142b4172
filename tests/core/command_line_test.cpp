// run_command_line: how a feeder command line turns into an exit code and messages.

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "app/command_line.h"
#include "feeder/error.h"

namespace feeder::cli {
namespace {

struct Outcome {
  int exit_code = 0;
  std::string out;
  std::string err;
};

// An app with one command, `demo --count N` (N >= 1), whose run() does what `action` says.
Outcome run_demo(const std::vector<std::string>& args, const std::function<int()>& action = [] { return 0; }) {
  CLI::App app("demo app", "feeder");
  app.require_subcommand(1);
  CLI::App* demo = app.add_subcommand("demo", "a demo command");
  int count = 1;
  demo->add_option("--count", count, "how many")->check(at_least(1));
  CLI::App* hidden = app.add_subcommand("internal", "not for people");
  hidden->group("");
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  Outcome outcome;
  outcome.exit_code = run_command_line(app, args, {{demo, action}, {hidden, [] { return 0; }}});
  outcome.out = ::testing::internal::GetCapturedStdout();
  outcome.err = ::testing::internal::GetCapturedStderr();
  return outcome;
}

TEST(CommandLine, RunsTheChosenCommandAndReturnsItsCode) {
  EXPECT_EQ(run_demo({"demo", "--count", "3"}, [] { return 7; }).exit_code, 7);
}

TEST(CommandLine, UnknownCommandExitsTwoNamingIt) {
  const Outcome outcome = run_demo({"frob", "--count", "3"});
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_EQ(outcome.err.rfind("feeder: unknown command 'frob'\n", 0), 0u) << outcome.err;
}

TEST(CommandLine, HelpExitsZeroAndListsNoHiddenCommand) {
  const Outcome outcome = run_demo({"--help"});
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_NE(outcome.out.find("demo"), std::string::npos) << outcome.out;
  EXPECT_EQ(outcome.out.find("internal"), std::string::npos) << outcome.out;
}

TEST(CommandLine, CommandHelpShowsTheFullCommandName) {
  const Outcome outcome = run_demo({"demo", "--help"});
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_NE(outcome.out.find("Usage: feeder demo"), std::string::npos) << outcome.out;
}

TEST(CommandLine, BadValueExitsTwoNamingTheCommandAndTheOption) {
  const Outcome outcome = run_demo({"demo", "--count", "0"});
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_EQ(outcome.err.rfind("feeder demo: --count: needs an integer >= 1, got '0'\n", 0), 0u) << outcome.err;
  EXPECT_NE(outcome.err.find("Usage: feeder demo"), std::string::npos) << outcome.err;
}

TEST(CommandLine, SaneRangeCallsAValueAboveItsBoundAbsurd) {
  CLI::App app("demo app", "feeder");
  int threads = 1;
  app.add_option("--threads", threads, "threads")->check(sane_range(1, 256));
  EXPECT_NO_THROW(app.parse(std::vector<std::string>{"256", "--threads"}));
  EXPECT_EQ(threads, 256);
  try {
    app.parse(std::vector<std::string>{"100000", "--threads"});
    FAIL() << "100000 threads accepted";
  } catch (const CLI::ValidationError& e) {
    EXPECT_EQ(std::string(e.what()), "--threads: 100000 is absurd; use at most 256");
  }
  EXPECT_THROW(app.parse(std::vector<std::string>{"0", "--threads"}), CLI::ValidationError);
}

TEST(CommandLine, UnknownOptionExitsTwo) {
  const Outcome outcome = run_demo({"demo", "--frobnicate"});
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_NE(outcome.err.find("--frobnicate"), std::string::npos) << outcome.err;
}

TEST(CommandLine, NoCommandExitsTwo) { EXPECT_EQ(run_demo({}).exit_code, 2); }

TEST(CommandLine, OptionsErrorFromTheCommandExitsTwo) {
  const Outcome outcome = run_demo({"demo"}, []() -> int { throw OptionsError("--x and --y go together"); });
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_EQ(outcome.err, "feeder demo: --x and --y go together\n");
}

TEST(CommandLine, OtherErrorFromTheCommandExitsOne) {
  const Outcome outcome = run_demo({"demo"}, []() -> int { throw DataError("in.csv: line 3: bad value"); });
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.err, "feeder demo: in.csv: line 3: bad value\n");
}

}  // namespace
}  // namespace feeder::cli
