#include "feeder/image/encoded_summary.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "feeder/error.h"
#include "feeder/image/image_decoder.h"
#include "feeder/util/byte_size.h"

namespace feeder {
namespace {

struct Tally {
  int64_t images = 0;
  int64_t bytes = 0;
  int64_t unreadable = 0;
  std::string first_unreadable;
  std::map<std::string, int64_t> formats;
  std::map<int64_t, int64_t> labels;
  std::vector<int64_t> widths, heights;

  void add(std::span<const uint8_t> data, int64_t label, const std::string& name) {
    ++images;
    bytes += static_cast<int64_t>(data.size());
    ++labels[label];
    const auto format = sniff_image_format(data);
    ++formats[format ? to_string(*format) : "none"];
    try {
      const ImageHeader header = read_image_header(data, name);
      widths.push_back(header.width);
      heights.push_back(header.height);
    } catch (const DataError& error) {
      if (unreadable++ == 0) first_unreadable = error.what();
    }
  }
};

std::string range_text(std::vector<int64_t> values) {
  if (values.empty()) return "-";
  std::sort(values.begin(), values.end());
  return std::to_string(values.front()) + " / " + std::to_string(values[values.size() / 2]) + " / " +
         std::to_string(values.back());
}

}  // namespace

std::string describe_encoded_images(const SampleSource& source, const std::vector<std::string>& classes,
                                    int64_t max_blocks) {
  Tally tally;
  if (const RandomAccessSource* held = random_access(source)) {
    for (int64_t i = 0; i < source.size(); ++i) {
      const SampleView sample = held->sample(i);
      tally.add(sample.bytes, sample.label, source.sample_name(i));
    }
  } else {
    const int64_t num_blocks = source.num_blocks();
    const int64_t step = std::max<int64_t>(1, (num_blocks + max_blocks - 1) / std::max<int64_t>(max_blocks, 1));
    std::vector<uint8_t> scratch, bytes;
    std::vector<int64_t> ends, labels;
    BlockValues values;
    for (int64_t b = 0; b < num_blocks; b += step) {
      const int64_t rows = source.block_rows(b);
      bytes.resize(static_cast<size_t>(source.block_bytes(b)));
      ends.resize(static_cast<size_t>(rows));
      labels.resize(static_cast<size_t>(rows));
      source.read_block(b, scratch,
                        {.payload = bytes.data(), .capacity = static_cast<int64_t>(bytes.size()), .ends = ends.data(),
                         .labels = labels.data(), .values = values.block(source, b)});
      int64_t begin = 0;
      const int64_t first = source.block_starts()[static_cast<size_t>(b)];
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t end = ends[static_cast<size_t>(r)];
        tally.add(std::span<const uint8_t>(bytes.data() + begin, static_cast<size_t>(end - begin)),
                  labels[static_cast<size_t>(r)], source.sample_name(first + r));
        begin = end;
      }
    }
  }
  std::ostringstream out;
  const bool all = tally.images == source.size();
  out << "encoded images: " << source.size() << (all ? "" : " (the figures below are of " + std::to_string(tally.images) +
                                                           " of them, from blocks spread over the set)")
      << "\n";
  // By the file's signature; whether its header then reads is the "unreadable" line below.
  out << "formats:";
  for (const auto& [format, count] : tally.formats) out << " " << format << " " << count;
  if (tally.formats.count("none")) out << " (none: no JPEG, PNG or WebP signature)";
  out << "\n";
  out << "width min / median / max: " << range_text(tally.widths) << " px; height: " << range_text(tally.heights)
      << " px\n";
  out << "bytes per image: " << format_byte_size(tally.images ? tally.bytes / tally.images : 0) << " on average\n";
  if (tally.unreadable)
    out << "unreadable (not images, or headers cut short or damaged): " << tally.unreadable << ", the first: " << tally.first_unreadable
        << "\n";
  if (!source.labeled()) {
    out << "unlabeled\n";
  } else {
    out << "classes (" << (all ? "" : "of those, ") << "images per label):";
    int shown = 0;
    for (const auto& [label, count] : tally.labels) {
      if (++shown > 20) {
        out << " ... (" << tally.labels.size() << " labels)";
        break;
      }
      out << " " << label;
      if (label >= 0 && label < static_cast<int64_t>(classes.size())) out << " " << classes[static_cast<size_t>(label)];
      out << ": " << count << (shown < static_cast<int>(tally.labels.size()) ? "," : "");
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace feeder
