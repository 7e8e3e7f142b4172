#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "feeder/system/runtime.h"

namespace feeder {
namespace {

// Two processors of an x86 /proc/cpuinfo, cut down; `flags` is the line that matters.
std::string sample_cpuinfo(const std::string& flags) {
  std::string block =
      "processor\t: 0\n"
      "vendor_id\t: AuthenticAMD\n"
      "model name\t: AMD EPYC 9R14 96-Core Processor\n"
      "cpu MHz\t\t: 2600.000\n"
      "flags\t\t: " + flags + "\n"
      "bogomips\t: 5200.00\n"
      "\n";
  std::string second = block;
  second.replace(second.find("processor\t: 0"), 13, "processor\t: 1");
  return block + second;
}

TEST(ParseCpuinfo, ReadsModelCountAndFlags) {
  const CpuInfo info = parse_cpuinfo(sample_cpuinfo("fpu sse2 avx2 avx512f"));
  EXPECT_EQ(info.model, "AMD EPYC 9R14 96-Core Processor");
  EXPECT_EQ(info.num_logical_cpus, 2);
  EXPECT_TRUE(info.has_flag("avx2"));
  EXPECT_TRUE(info.has_flag("avx512f"));
  EXPECT_FALSE(info.has_flag("avx512"));  // whole words only
}

TEST(ParseCpuinfo, NativeBf16NeedsAvx512Bf16OrAmxBf16) {
  EXPECT_FALSE(parse_cpuinfo(sample_cpuinfo("fpu avx2 avx512f avx512_vnni")).has_native_bf16());
  EXPECT_TRUE(parse_cpuinfo(sample_cpuinfo("fpu avx512f avx512_bf16 avx512_vnni")).has_native_bf16());
  EXPECT_TRUE(parse_cpuinfo(sample_cpuinfo("fpu avx512f amx_bf16 amx_tile")).has_native_bf16());
  EXPECT_FALSE(parse_cpuinfo(sample_cpuinfo("fpu avx512f amx_tile amx_int8")).has_native_bf16());
}

TEST(ParseCpuinfo, EmptyOrForeignTextGivesNoFlags) {
  EXPECT_EQ(parse_cpuinfo("").num_logical_cpus, 0);
  EXPECT_FALSE(parse_cpuinfo("").has_native_bf16());
  // arm64 names the line "Features" and has no "model name".
  const CpuInfo arm = parse_cpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd bf16\n");
  EXPECT_EQ(arm.num_logical_cpus, 1);
  EXPECT_EQ(arm.model, "");
  EXPECT_FALSE(arm.has_native_bf16());
}

TEST(ReadCpuinfo, FindsAtLeastOneProcessorOnThisMachine) {
  EXPECT_GE(read_cpuinfo().num_logical_cpus, 1);
  EXPECT_GE(num_usable_cpus(), 1);
}

// Restores OMP_NUM_THREADS as it was when the test started.
class SavedOmpNumThreads {
 public:
  SavedOmpNumThreads() {
    if (const char* value = std::getenv("OMP_NUM_THREADS")) saved_ = value;
  }
  ~SavedOmpNumThreads() {
    if (saved_) {
      ::setenv("OMP_NUM_THREADS", saved_->c_str(), 1);
    } else {
      ::unsetenv("OMP_NUM_THREADS");
    }
  }

 private:
  std::optional<std::string> saved_;
};

TEST(OmpNumThreadsFromEnv, AcceptsOnlyAPositiveInteger) {
  SavedOmpNumThreads saved;
  ::unsetenv("OMP_NUM_THREADS");
  EXPECT_EQ(omp_num_threads_from_env(), std::nullopt);
  ::setenv("OMP_NUM_THREADS", "3", 1);
  EXPECT_EQ(omp_num_threads_from_env(), 3);
  ::setenv("OMP_NUM_THREADS", " 2 ", 1);
  EXPECT_EQ(omp_num_threads_from_env(), 2);
  for (const char* bad : {"0", "-1", "two", "4,2", ""}) {
    ::setenv("OMP_NUM_THREADS", bad, 1);
    EXPECT_EQ(omp_num_threads_from_env(), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace feeder
