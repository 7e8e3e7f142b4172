// Times loading an image file (IDX, CSV or Parquet) into the ImageStore, in one process, repeated;
// prints every run and the median. No LibTorch here, so process start-up is not part of any figure.
//   feeder_load_bench FILE [REPEATS]

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "feeder/formats/dataset_files.h"
#include "feeder/stopwatch.h"

int main(int argc, char** argv) {
  CLI::App app("Times loading an image file into the ImageStore, repeated; prints every run and the median",
               "feeder_load_bench");
  std::string file;
  int repeats = 5;
  app.add_option("FILE", file, "IDX, CSV or Parquet file")->required();
  app.add_option("REPEATS", repeats, "number of loads")->check(CLI::Range(1, 1000000))->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::vector<double> seconds;
  try {
    for (int run = 0; run < repeats; ++run) {
      const feeder::Stopwatch load_time;
      feeder::ImageStore store = feeder::load_images(file);
      seconds.push_back(load_time.seconds());
      if (run == 0)
        std::printf("%s: %lld images of %s\n", file.c_str(), static_cast<long long>(store.size()),
                    feeder::to_string(store.shape()).c_str());
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  std::printf("runs (s):");
  for (double s : seconds) std::printf(" %.3f", s);
  std::sort(seconds.begin(), seconds.end());
  std::printf("\nmedian %.3f s, best %.3f s\n", seconds[seconds.size() / 2], seconds.front());
  return 0;
}
