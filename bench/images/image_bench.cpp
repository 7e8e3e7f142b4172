// feeder-image-bench (`feeder bench images`): the C++ loader over a folder of images against a bare
// full decode of the same files, each by its format's library (libjpeg-turbo, libpng, libwebp), in
// one process without LibTorch or Python.
//
// Rows, images/s as the median of --repeats alternated passes over the whole set, each after a
// warm-up pass of the same loader with no other loader alive:
//   - training: RandomResizedCrop + RandomHorizontalFlip + normalise (ImageStage), batch and workers
//     as given, the folder held in memory;
//   - evaluation: Resize + CenterCrop + normalise;
//   - a bare full-size decode of the same files (in memory) on as many std::threads as workers: the
//     rate no loader that decodes whole images can pass;
//   - the training crops' decode alone, on as many threads: each image's RandomResizedCrop box
//     decoded as training decodes it (a JPEG: DCT scaling, the box's columns and rows, nothing below
//     it; a PNG or WebP: whole, as the stage decodes them),
//     not resampled: the rate no crop-aware pipeline that resamples can pass.
// Then the peak RSS of the process. The set is the one bench/images/images_bench.py builds (2000
// ImageNet-sized crops of Debian's wallpapers): its Python rows compare with these. --large-photos
// measures the wallpapers at full size instead; --uint8 asks for uint8 batches; --max-side N adds
// the training row over the same images as `feeder convert --max-side N` stores them.

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/statistics.h"
#include "feeder/data/loader.h"
#include "feeder/data/random.h"
#include "feeder/image/crop.h"
#include "feeder/image/image_decoder.h"
#include "feeder/image/image_folder.h"
#include "feeder/image/image_stage.h"
#include "feeder/image/max_side.h"
#include "feeder/image/resized_crop.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// One pass of a loader: images/s.
double pass(feeder::Loader& loader, int64_t epoch) {
  const auto start = Clock::now();
  int64_t images = 0;
  loader.start_epoch(epoch);
  while (auto batch = loader.next()) images += batch->size();
  return static_cast<double>(images) / seconds_since(start);
}

// Images/s of a pass over every image of `source` on `threads` std::threads, each taking the next
// image and doing `make_work()(i)` with work of its own (its own scratch). The first error (an
// image that does not decode) stops the pass and is thrown here, naming the file.
template <class MakeWork>
double rate_on_threads(const feeder::EncodedImageSource& source, int threads, const MakeWork& make_work) {
  const auto start = Clock::now();
  std::atomic<int64_t> next{0};
  std::mutex mutex;
  std::exception_ptr error;  // guarded by mutex
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      auto work = make_work();
      for (int64_t i = next++; i < source.size(); i = next++) {
        try {
          work(i);
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mutex);
          if (!error) error = std::make_exception_ptr(std::runtime_error(source.sample_name(i) + ": " + e.what()));
          next = source.size();
        }
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);
  return static_cast<double>(source.size()) / seconds_since(start);
}

double bare_decode(const feeder::EncodedImageSource& source, int threads) {
  return rate_on_threads(source, threads, [&] {
    return [&source, pixels = std::vector<uint8_t>()](int64_t i) mutable {
      feeder::decode_image(source.sample(i).bytes, 3, "image", pixels);
    };
  });
}

// The decode of each image's training crop (epoch `epoch`'s boxes), without the resampling.
double crop_decode(const feeder::EncodedImageSource& source, int threads, int64_t size, int64_t epoch) {
  feeder::ResizedCropOptions options;
  options.out_height = options.out_width = size;
  return rate_on_threads(source, threads, [&] {
    return [&source, &options, epoch, scratch = feeder::ImageScratch()](int64_t i) mutable {
      feeder::SplitMix64 rng = feeder::sample_generator(0, epoch, i);
      const auto box = [&](int64_t width, int64_t height) {
        return feeder::random_resized_crop(width, height, {}, [&] { return rng.uniform_double(); });
      };
      // PNG and WebP have no region decode: the stage decodes them whole, as this does.
      feeder::decode_crop_region(source.sample(i).bytes, "image", box, options, scratch);
    };
  });
}

// The wallpapers as they are (1920 px and up), linked into `root`/class_<i % 10>/ once: an image
// folder of large photographs.
std::string large_photos(const std::string& root) {
  namespace fs = std::filesystem;
  const fs::path wallpapers = "/usr/share/wallpapers";
  std::vector<fs::path> photos;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(wallpapers, error); !error && it != fs::recursive_directory_iterator();
       it.increment(error))
    if (it->path().extension() == ".jpg" && it->path().parent_path().filename() == "images") photos.push_back(it->path());
  if (photos.empty())
    throw std::runtime_error("no photographs under " + wallpapers.string() + ": apt-get install plasma-workspace-wallpapers");
  std::sort(photos.begin(), photos.end());
  const fs::path train = fs::path(root) / "train";
  for (size_t i = 0; i < photos.size(); ++i) {
    const fs::path link = train / ("class_" + std::to_string(i % 10)) / (std::to_string(i) + ".jpg");
    if (fs::exists(link)) continue;
    fs::create_directories(link.parent_path());
    fs::create_symlink(photos[i], link);
  }
  return train.string();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("the C++ image loader against a bare full decode of the same images", "feeder bench images");
  std::string data = "build/bench-images/wallpapers-2000/train";
  int workers = 2;
  int64_t batch_size = 256;
  int64_t size = 224;
  int repeats = 3;
  app.add_option("--data", data, "an image folder (bench/images/images_bench.py builds the default once)")
      ->capture_default_str();
  app.add_option("--workers", workers, "loader workers, and the bare decode's threads")->capture_default_str();
  app.add_option("--batch-size", batch_size, "images per batch")->capture_default_str();
  app.add_option("--size", size, "output height and width")->capture_default_str();
  app.add_option("--repeats", repeats, "alternated passes of each row (medians)")->capture_default_str();
  bool large = false;
  bool uint8 = false;
  int64_t max_side = 0;
  app.add_option("--max-side", max_side, "also train on the images as feeder convert --max-side N stores them");
  app.add_flag("--uint8", uint8, "uint8 batches (not normalised) instead of float32");
  app.add_flag("--large-photos", large,
               "the wallpapers of plasma-workspace-wallpapers at full size (1920 px and up) instead of --data");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (large) data = large_photos("build/bench-images/wallpapers-full");
    const feeder::ImageFolder folder = feeder::open_image_folder(data);
    const auto& source = static_cast<const feeder::EncodedImageSource&>(*folder.source);
    std::printf("%s: %lld images, %.0f MiB encoded, %zu classes\n", data.c_str(), static_cast<long long>(source.size()),
                static_cast<double>(folder.encoded_bytes) / (1 << 20), folder.classes.size());
    const auto make = [&](feeder::ImageCrop crop) {
      feeder::LoaderOptions options;
      options.batch_size = batch_size;
      options.num_workers = workers;
      options.shuffle = crop == feeder::ImageCrop::kRandomResizedCrop;
      if (uint8) options.dtype = feeder::ImageDtype::kUint8;
      feeder::ImageStageOptions stage;
      stage.height = size;
      stage.width = size;
      stage.crop = crop;
      stage.resize = size * 256 / 224;
      stage.mean = {0.485f, 0.456f, 0.406f};
      stage.std = {0.229f, 0.224f, 0.225f};
      options.sample_stage = std::make_shared<feeder::ImageStage>(stage);
      return options;
    };
    const std::vector<std::pair<std::string, feeder::ImageCrop>> loaders = {
        {"training: feeder::Loader (RandomResizedCrop + flip)", feeder::ImageCrop::kRandomResizedCrop},
        {"evaluation: feeder::Loader (Resize + CenterCrop)", feeder::ImageCrop::kCenterCrop}};
    const std::string bare = "bare full decode (each format's library: libjpeg-turbo, libpng, libwebp; " +
                             std::to_string(workers) + " threads)";
    const std::string crops = "the training crops' decode alone, not resampled (" + std::to_string(workers) + " threads)";
    std::shared_ptr<const feeder::EncodedImageSource> smaller;
    const std::string smaller_name = "training, the images stored at --max-side " + std::to_string(max_side);
    if (max_side > 0) {
      feeder::MaxSideOptions options;
      options.max_side = max_side;
      feeder::MaxSideStats stats;
      smaller = feeder::limit_image_sides(source, options, stats);
      std::printf("--max-side %lld: %lld images re-encoded, %.0f MiB -> %.0f MiB in %.1f s\n",
                  static_cast<long long>(max_side), static_cast<long long>(stats.reencoded),
                  static_cast<double>(stats.bytes_before) / (1 << 20), static_cast<double>(stats.bytes_after) / (1 << 20),
                  stats.seconds);
    }
    std::map<std::string, std::vector<double>> rates;
    for (int repeat = 0; repeat < repeats; ++repeat) {
      for (const auto& [name, crop] : loaders) {
        feeder::Loader loader(folder.source, make(crop));
        pass(loader, 0);  // warm-up: buffers touched, decoders' scratch grown
        rates[name].push_back(pass(loader, 1 + repeat));
      }
      if (smaller) {
        feeder::Loader loader(smaller, make(feeder::ImageCrop::kRandomResizedCrop));
        pass(loader, 0);
        rates[smaller_name].push_back(pass(loader, 1 + repeat));
      }
      bare_decode(source, workers);
      rates[bare].push_back(bare_decode(source, workers));
      rates[crops].push_back(crop_decode(source, workers, size, 1 + repeat));
      std::printf("pass %d/%d:", repeat + 1, repeats);
      for (const auto& [name, values] : rates) std::printf(" %s %.0f;", name.c_str(), values.back());
      std::printf("\n");
    }
    const double bare_rate = *feeder::bench::median(rates[bare]);
    std::printf("\n| row | images/s (median of %d) | range | vs bare full decode |\n|---|---:|---:|---:|\n", repeats);
    for (const auto& [name, values] : rates) {
      const double median = *feeder::bench::median(values);
      std::printf("| %s | %.0f | %.0f-%.0f | %.2fx |\n", name.c_str(), median,
                  *std::min_element(values.begin(), values.end()), *std::max_element(values.begin(), values.end()),
                  median / bare_rate);
    }
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    std::printf("\npeak RSS of the process: %.0f MiB (the encoded images held, and each loader's batch buffers)\n",
                static_cast<double>(usage.ru_maxrss) / 1024);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "feeder bench images: " << e.what() << "\n";
    return 1;
  }
}
