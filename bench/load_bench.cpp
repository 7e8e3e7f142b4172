// Times loading an image file (IDX, CSV or Parquet) into the ImageStore, in one process, repeated;
// prints every run and the median. No LibTorch here, so process start-up is not part of any figure.
//   feeder_load_bench FILE [REPEATS]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "feeder/formats/dataset_files.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: feeder_load_bench FILE [REPEATS]\n");
    return 2;
  }
  const int repeats = argc == 3 ? std::max(1, std::atoi(argv[2])) : 5;
  std::vector<double> seconds;
  try {
    for (int run = 0; run < repeats; ++run) {
      const auto start = std::chrono::steady_clock::now();
      feeder::ImageStore store = feeder::load_images(argv[1]);
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      if (run == 0)
        std::printf("%s: %lld images of %s\n", argv[1], static_cast<long long>(store.size()),
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
