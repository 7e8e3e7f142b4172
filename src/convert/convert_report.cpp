// The report of a conversion as `feeder convert` prints it: the same text, byte for byte, that the
// command printed when it wrote the report itself (the tests pin it).

#include "feeder/convert/convert_report.h"

#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "feeder/formats/sharded.h"
#include "feeder/util/byte_size.h"
#include "feeder/util/printable.h"

namespace feeder {
namespace {

// printf into `out`.
__attribute__((format(printf, 2, 3))) void append(std::string& out, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (length > 0) {
    const size_t old_size = out.size();
    out.resize(old_size + static_cast<size_t>(length) + 1);
    std::vsnprintf(out.data() + old_size, static_cast<size_t>(length) + 1, format, again);
    out.resize(old_size + static_cast<size_t>(length));
  }
  va_end(again);
}

double megabytes(int64_t bytes) { return static_cast<double>(bytes) / 1e6; }

double ratio(const ConvertReport& report) {
  return report.output_bytes == 0 ? 0.0
                                  : static_cast<double>(report.input_bytes) / static_cast<double>(report.output_bytes);
}

void format_file(const ConvertReport& report, std::string& out) {
  out += "| input | output | format | rows | shape | input MB | output MB | ratio | read s | write s | total s |\n";
  out += "|---|---|---|---|---|---|---|---|---|---|---|\n";
  append(out, "| %s | %s | %s | %lld | %s | %.1f | %.1f | %.2fx | %.3f | %.3f | %.3f |\n",
         printable(report.input_name).c_str(), printable(report.output_name).c_str(), report.format.c_str(),
         static_cast<long long>(report.num_rows), to_string(report.shape).c_str(), megabytes(report.input_bytes),
         megabytes(report.output_bytes), ratio(report), report.read_seconds, report.write_seconds,
         report.read_seconds + report.write_seconds);
}

void format_sharded_pixels(const ConvertReport& report, std::string& out) {
  out += "| input | output | format | rows | shape | shards | input MB | output MB | ratio | read s | write s | total s |\n";
  out += "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  append(out, "| %s | %s | %s | %lld | %s | %zu | %.1f | %.1f | %.2fx | %.3f | %.3f | %.3f |\n",
         printable(report.input_name).c_str(), printable(report.output_name).c_str(), report.format.c_str(),
         static_cast<long long>(report.num_rows), to_string(report.shape).c_str(), report.shards.size(),
         megabytes(report.input_bytes), megabytes(report.output_bytes), ratio(report), report.read_seconds,
         report.write_seconds, report.read_seconds + report.write_seconds);
  out += "\n| shard | rows | row groups | MB |\n|---|---|---|---|\n";
  for (const ConvertedShard& shard : report.shards) {
    append(out, "| %s | %lld | %lld | %.1f |\n", printable(shard.name).c_str(), static_cast<long long>(shard.num_rows),
           static_cast<long long>(shard.num_row_groups), megabytes(shard.size_bytes));
  }
  if (report.shuffle_seed) {
    append(out, "\nrows shuffled with seed %llu (recorded in %s)\n",
           static_cast<unsigned long long>(*report.shuffle_seed), std::string(kShardIndexName).c_str());
  } else if (report.label_runs) {
    append(out,
           "\nrows in %lld runs of one label (%lld rows each on average, as in a set sorted by label): give "
           "--shuffle-on-write SEED for a set that streams well\n",
           static_cast<long long>(report.label_runs->num_runs), static_cast<long long>(report.label_runs->mean_rows));
  }
}

// "not images: 2, written as they are; the first: a.jpg: ...; b.jpg: ..."
void format_bad(const char* line, const BadImages& bad, std::string& out) {
  if (bad.count == 0) return;
  std::string names;
  for (const std::string& reason : bad.first) names += (names.empty() ? "" : "; ") + printable(reason);
  append(out, "%s: %lld, written as they are; the first: %s\n", line, static_cast<long long>(bad.count), names.c_str());
}

void format_encoded(const ConvertReport& report, std::string& out) {
  out += "| input | output | images | classes | shards | row groups | encoded | output | read s | write s |\n";
  out += "|---|---|---|---|---|---|---|---|---|---|\n";
  append(out, "| %s | %s | %lld | %lld | %zu | %lld | %s | %s | %.3f | %.3f |\n", printable(report.input_name).c_str(),
         printable(report.output_name).c_str(), static_cast<long long>(report.num_rows),
         static_cast<long long>(report.num_classes), report.shards.size(),
         static_cast<long long>(report.num_row_groups()), format_byte_size(report.input_bytes).c_str(),
         format_byte_size(report.output_bytes).c_str(), report.read_seconds, report.write_seconds);
  if (!report.class_names.empty()) {
    out += "\nlabels: ";
    for (size_t i = 0; i < report.class_names.size(); ++i)
      append(out, "%s%zu %s", i ? ", " : "", i, printable(report.class_names[i]).c_str());
    out += "\n";
  } else if (!report.labeled) {
    out += "\nunlabeled: no .cls members\n";
  }
  if (!report.skipped.empty()) out += "skipped: " + printable(report.skipped) + "\n";
  format_bad("not images", report.not_images, out);
  if (report.reencoded) {
    const ReencodedImages& images = *report.reencoded;
    append(out, "re-encoded: %lld images larger than %lld px on a side, as JPEG of quality %d: %s -> %s, %.3f s\n",
           static_cast<long long>(images.count), static_cast<long long>(images.max_side), images.jpeg_quality,
           format_byte_size(images.bytes_before).c_str(), format_byte_size(images.bytes_after).c_str(), images.seconds);
    format_bad("not decoded", report.not_decoded, out);
  }
  if (report.shuffle_seed)
    append(out, "rows shuffled with seed %llu\n", static_cast<unsigned long long>(*report.shuffle_seed));
  else
    out += "rows in " + report.order + ": give --shuffle-on-write SEED for a set that streams well\n";
}

}  // namespace

int64_t ConvertReport::num_row_groups() const {
  int64_t count = 0;
  for (const ConvertedShard& shard : shards) count += shard.num_row_groups;
  return count;
}

std::string format_convert_report(const ConvertReport& report) {
  std::string out;
  switch (report.set) {
    case ConvertedSet::kFile: format_file(report, out); break;
    case ConvertedSet::kShardedPixels: format_sharded_pixels(report, out); break;
    case ConvertedSet::kEncodedImages: format_encoded(report, out); break;
  }
  return out;
}

}  // namespace feeder
