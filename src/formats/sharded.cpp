// Sharded Parquet sets: opening (index, directory, glob or file), writing and describing them. The
// streaming source over a set is in sharded_source.cpp.

#include "feeder/formats/sharded.h"

#include <fnmatch.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "feeder/data/sampler.h"
#include "feeder/error.h"
#include "feeder/formats/dataset_kind.h"
#include "feeder/io/file_system.h"
#include "feeder/formats/parquet/row_group_reader.h"
#include "feeder/image/encoded_rows.h"
#include "feeder/image/image_folder.h"
#include "feeder/io/file.h"
#include "feeder/io/object_storage.h"
#include "feeder/util/byte_size.h"
#include "feeder/util/interrupt.h"
#include "feeder/util/parallel_for.h"
#include "formats/detail/shard_index.h"

namespace feeder {

namespace {

namespace fs = std::filesystem;

using parquet::ParquetImageOptions;
using parquet::ParquetRowGroupReader;

constexpr std::string_view kParquetExtension = ".parquet";
// Shards of a remote set asked for their size and ETag at once when it is opened (a HEAD each).
constexpr int kRemoteStatThreads = 16;

// Spark, Hive and Hadoop keep their own files (_SUCCESS, _metadata, .crc) beside the data.
bool is_hidden(const std::string& name) { return !name.empty() && (name[0] == '.' || name[0] == '_'); }

std::vector<fs::path> list_parquet_files(const fs::path& dir) {
  std::vector<fs::path> paths;
  for (const FileEntry& entry : file_system_for(dir).list(dir)) {
    const std::string name = entry.path.filename().string();
    if (!is_hidden(name) && name.ends_with(kParquetExtension) && entry.file()) paths.push_back(dir / name);
  }
  std::sort(paths.begin(), paths.end(), [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  return paths;
}

// Regular files of the directory whose names match the last component of `spec`, sorted by name.
std::vector<fs::path> match_glob(const std::string& spec) {
  const fs::path pattern_path(spec);
  const fs::path dir = pattern_path.has_parent_path() ? pattern_path.parent_path() : fs::path(".");
  const std::string pattern = pattern_path.filename().string();
  if (pattern_path.has_parent_path() && has_glob_chars(dir.string())) {
    throw DataError(spec + ": only the last path component may hold a glob (*, ?, [...])");
  }
  const FileSystem& files = file_system_for(dir);
  if (!files.stat(dir).directory()) throw DataError(spec + ": no such directory " + dir.string());
  std::vector<fs::path> paths;
  for (const FileEntry& entry : files.list(dir)) {
    const std::string name = entry.path.filename().string();
    if (name != kShardIndexName && ::fnmatch(pattern.c_str(), name.c_str(), FNM_PERIOD) == 0 && entry.file())
      paths.push_back(pattern_path.has_parent_path() ? dir / name : fs::path(name));
  }
  if (paths.empty()) throw DataError(spec + ": no files match");
  std::sort(paths.begin(), paths.end(), [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  return paths;
}

std::vector<int64_t> row_group_rows(const ParquetRowGroupReader& reader) {
  std::vector<int64_t> rows;
  for (int64_t rg = 0; rg < reader.num_row_groups(); ++rg) rows.push_back(reader.row_group_rows(rg));
  return rows;
}

ShardInfo shard_info(const fs::path& path, const ParquetRowGroupReader& reader) {
  ShardInfo shard;
  shard.path = path;
  shard.num_rows = reader.num_rows();
  shard.row_group_rows = row_group_rows(reader);
  shard.row_group_max_compressed_bytes = reader.max_row_group_read_bytes();
  if (reader.encoded()) {
    // Encoded sets stream whole row groups (no pieces): their images' bounds, for the budget.
    for (int64_t rg = 0; rg < reader.num_row_groups(); ++rg) shard.row_group_encoded_bytes.push_back(reader.encoded_bytes_bound(rg));
  } else {
    shard.piece_read_bytes = reader.max_rows_read_bytes(stream_piece_rows(reader.shape(), 0));
    shard.largest_page_rows = reader.largest_page_rows(stream_piece_rows(reader.shape(), 0));
    shard.page_maps = reader.page_maps();
  }
  shard.size_bytes = reader.size_bytes();
  shard.version = reader.file_version();
  return shard;
}

std::string label_presence(const ParquetRowGroupReader& reader, const ParquetImageOptions& options) {
  return (reader.labeled() ? "has a label column '" : "no label column '") + options.label_column + "'";
}

// A set without an index: every footer is read, and every shard checked against the first.
ShardedDataset describe_from_footers(const fs::path& root, const std::vector<fs::path>& paths,
                                     const ParquetImageOptions& options) {
  ShardedDataset dataset;
  dataset.root = root;
  const std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> fingerprint(XXH3_createState(), &XXH3_freeState);
  if (!fingerprint || XXH3_64bits_reset(fingerprint.get()) != XXH_OK) throw std::bad_alloc();
  bool label_range_known = true;
  for (size_t i = 0; i < paths.size(); ++i) {
    const ParquetRowGroupReader reader = ParquetRowGroupReader::open(paths[i], options);
    const std::string name = paths[i].string();
    const std::string first = paths[0].filename().string();
    if (i == 0) {
      dataset.shape = reader.shape();
      dataset.labeled = reader.labeled();
      dataset.columns = reader.columns();
      dataset.values = reader.value_fields();
      dataset.encoded = reader.encoded();
    } else if (reader.encoded() != dataset.encoded) {
      // Encoded images have no shape of their own: say what each file holds, not 0x0x0.
      const auto holds = [](bool encoded, const ImageShape& shape) {
        return encoded ? std::string("encoded images (image files' bytes)") : "pixels of " + to_string(shape);
      };
      throw DataError(name + ": holds " + holds(reader.encoded(), reader.shape()) + ", but " + first + " holds " +
                      holds(dataset.encoded, dataset.shape) + ": a set is one or the other");
    } else if (reader.shape() != dataset.shape) {
      throw DataError(name + ": images are " + to_string(reader.shape()) + ", but " + first + " has " +
                      to_string(dataset.shape));
    } else if (reader.labeled() != dataset.labeled) {
      throw DataError(name + ": " + label_presence(reader, options) + ", but " + first +
                      (dataset.labeled ? " has one" : " has none"));
    } else if (reader.columns() != dataset.columns) {
      throw DataError(name + ": columns " + reader.columns() + " differ from those of " + first + ": " + dataset.columns);
    }
    ShardInfo shard = shard_info(paths[i], reader);
    dataset.num_rows += shard.num_rows;
    dataset.shards.push_back(std::move(shard));
    XXH3_64bits_update(fingerprint.get(), reader.footer_bytes().data(), reader.footer_bytes().size());
    const uint64_t size_bytes = reader.size_bytes();
    XXH3_64bits_update(fingerprint.get(), &size_bytes, sizeof(size_bytes));
    if (const auto range = reader.label_range()) {
      dataset.label_min = std::min(dataset.label_min.value_or(range->first), range->first);
      dataset.label_max = std::max(dataset.label_max.value_or(range->second), range->second);
    } else if (reader.num_rows() > 0) {
      label_range_known = false;
    }
  }
  if (!label_range_known || !dataset.labeled) dataset.label_min = dataset.label_max = std::nullopt;
  dataset.fingerprint = XXH3_64bits_digest(fingerprint.get());
  return dataset;
}

std::string row_groups_text(const std::vector<int64_t>& rows) {
  std::string text;
  for (size_t i = 0; i < rows.size(); ++i) text += (i ? " " : "") + std::to_string(rows[i]);
  return "[" + text + "]";
}

// A set of encoded images with an index: the index lists the shards (their sizes checked by the
// caller), the footers describe the rest as for a set without one (so the same set gives the
// same fingerprint, and the same order, with its index or through a glob); rows must agree.
ShardedDataset describe_encoded_index(const ShardedDataset& index, const ParquetImageOptions& options) {
  std::vector<fs::path> paths;
  for (const ShardInfo& shard : index.shards) paths.push_back(shard.path);
  if (paths.empty()) throw DataError((index.root / kShardIndexName).string() + ": lists no shards");
  ShardedDataset dataset = describe_from_footers(index.root, paths, options);
  if (!dataset.encoded) {
    throw DataError(paths.front().string() + ": holds pixels of " + to_string(dataset.shape) + ", but " +
                    std::string(kShardIndexName) + " records encoded images");
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    ShardInfo& shard = dataset.shards[i];
    if (shard.num_rows != index.shards[i].num_rows || shard.row_group_rows != index.shards[i].row_group_rows) {
      throw DataError(shard.path.string() + ": row groups of " + row_groups_text(shard.row_group_rows) + " rows, but " +
                      std::string(kShardIndexName) + " records " + row_groups_text(index.shards[i].row_group_rows));
    }
    shard.content_hash = index.shards[i].content_hash;
  }
  dataset.indexed = true;
  dataset.shuffled_on_write = index.shuffled_on_write;
  return dataset;
}

// A set with an index: its files must exist with the recorded sizes; the first shard's footer
// resolves the columns and must agree with the index.
ShardedDataset open_indexed(const fs::path& dir, const ParquetImageOptions& options) {
  const fs::path index_path = dir / kShardIndexName;
  const FileBytes index_file = file_system_for(index_path).read_all(index_path);
  const std::span<const uint8_t> bytes = index_file.bytes();
  ShardedDataset dataset = detail::parse_shard_index(std::string(bytes.begin(), bytes.end()), dir);
  if (options.shape) {
    if (options.shape->num_pixels() != dataset.shape.num_pixels()) {
      throw DataError(index_path.string() + ": images are " + to_string(dataset.shape) + ", the shape asked for, " +
                      to_string(*options.shape) + ", has another number of pixels");
    }
    dataset.shape = *options.shape;
  }
  const FileSystem& files = file_system_for(dir);
  // Each shard asked for at once where asking is a round trip (a HEAD an object); the first error
  // in the index's order is the one raised, whatever the timing.
  const int threads = is_remote_path(dir.string()) ? kRemoteStatThreads : 1;
  parallel_for(static_cast<int64_t>(dataset.shards.size()), threads, [&](int64_t i) {
    ShardInfo& shard = dataset.shards[static_cast<size_t>(i)];
    const FileEntry found = files.stat(shard.path);
    shard.version = found.version;
    if (found.kind == FileKind::kMissing) {
      throw DataError(shard.path.string() + ": listed in " + std::string(kShardIndexName) + " but missing");
    }
    if (!found.file()) throw DataError(shard.path.string() + ": not a regular file");
    const auto size_bytes = static_cast<uint64_t>(found.size);
    if (size_bytes != shard.size_bytes) {
      throw DataError(shard.path.string() + ": " + std::to_string(size_bytes) + " bytes, but " +
                      std::string(kShardIndexName) + " records " + std::to_string(shard.size_bytes) +
                      " (changed after the index was written)");
    }
  });
  if (dataset.encoded) return describe_encoded_index(dataset, options);
  if (dataset.shards.empty()) return dataset;
  const ShardInfo& first = dataset.shards.front();
  const ParquetRowGroupReader reader = ParquetRowGroupReader::open(first.path, options);
  const std::string name = first.path.string();
  const std::string index_name(kShardIndexName);
  if (reader.shape() != dataset.shape) {
    throw DataError(name + ": images are " + to_string(reader.shape()) + ", but " + index_name + " records " +
                    to_string(dataset.shape));
  }
  if (reader.labeled() != dataset.labeled) {
    throw DataError(name + ": " + label_presence(reader, options) + ", but " + index_name + " records " +
                    (dataset.labeled ? "a labeled set" : "an unlabeled set"));
  }
  // The row groups alone: the rest of shard_info would find the shard's pages, which reads its
  // chunks (the index records what they tell).
  const std::vector<int64_t> found_rows = row_group_rows(reader);
  if (found_rows != first.row_group_rows) {
    throw DataError(name + ": row groups of " + row_groups_text(found_rows) + " rows, but " + index_name +
                    " records " + row_groups_text(first.row_group_rows));
  }
  dataset.columns = reader.columns();
  dataset.values = reader.value_fields();
  return dataset;
}

void check_write_options(const ShardWriteOptions& options) {
  if (options.shard_rows < 0) throw OptionsError("shard rows must be positive, got " + std::to_string(options.shard_rows));
  if (options.shard_size_bytes < 0) {
    throw OptionsError("shard size must be positive, got " + std::to_string(options.shard_size_bytes) + " bytes");
  }
  if (options.shard_rows > 0 && options.shard_size_bytes > 0) {
    throw OptionsError("give either the rows per shard or the size of a shard, not both");
  }
  if (options.shard_rows == 0 && options.shard_size_bytes == 0) {
    throw OptionsError("give the rows per shard or the size of a shard");
  }
}

// A sharded set's output directory while the set is written: made when missing, refused when it
// holds a set already, and marked unfinished (kUnfinishedMarker) until commit(). Destroyed without
// commit() (an error, an interrupt), it removes the files it was given, the marker, and the
// directory when it made it and nothing else is left in it. Owned by the writing thread.
class OutputDirectory {
 public:
  explicit OutputDirectory(const fs::path& dir) : dir_(dir), file_system_(file_system_for(dir)) {
    const FileEntry what = file_system_.stat(dir);
    if (what.kind != FileKind::kMissing && !what.directory()) {
      throw OptionsError(dir.string() + ": exists and is not a directory");
    }
    made_ = what.kind == FileKind::kMissing;
    file_system_.make_directories(dir);
    std::vector<std::string> found;
    if (!made_) {
      for (const FileEntry& entry : file_system_.list(dir)) {
        const std::string name = entry.path.filename().string();
        if (name == kShardIndexName || name.ends_with(kParquetExtension)) found.push_back(name);
      }
    }
    if (!found.empty()) {
      std::sort(found.begin(), found.end());
      throw OptionsError(dir.string() + ": already holds " + found.front() +
                         (found.size() > 1 ? " and " + std::to_string(found.size() - 1) + " more" : std::string()) +
                         "; write a sharded set into an empty or new directory");
    }
    // An object store has no rename: the marker is what keeps a reader from taking the shards
    // written so far for a set, until the index is written and the marker removed.
    write_file_atomically(dir / kUnfinishedMarker,
                          "feeder convert is writing a sharded set here; if no process is, it was cut short\n");
  }
  ~OutputDirectory() {
    if (committed_) return;
    const auto remove = [&](const fs::path& path) {
      try {
        file_system_.remove(path);
      } catch (const std::exception&) {
        // Unwinding already; what is left is named by the marker, removed last.
      }
    };
    for (const fs::path& file : files_) remove(file);
    remove(dir_ / kUnfinishedMarker);
    try {
      if (made_ && file_system_.stat(dir_).directory() && file_system_.list(dir_).empty()) remove(dir_);
    } catch (const std::exception&) {
    }
  }
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;

  // A file of the set (or a temporary one), removed unless the set is committed.
  void add(const fs::path& file) { files_.push_back(file); }
  void commit() {
    committed_ = true;  // first: whatever happens next, the set is complete and stays
    try {
      file_system_.remove(dir_ / kUnfinishedMarker);
    } catch (const DataError& error) {
      throw DataError((dir_ / kUnfinishedMarker).string() + ": the set is written, but its marker cannot be removed: " +
                      error.what());
    }
  }

 private:
  fs::path dir_;
  const FileSystem& file_system_;
  bool made_ = false;
  bool committed_ = false;
  std::vector<fs::path> files_;
};

// Writes the first shard for a target size to `candidate` and returns its rows, which every other
// shard then gets (see ShardWriteOptions). The encoded size is a step function of the rows: each row
// group adds its own dictionary pages, page headers and footer entries. So a shard that holds more
// than one row group holds whole row groups: the first one and two row groups are encoded, the
// most groups that a straight line through the two sizes keeps within the target are encoded as
// the candidate, and groups are dropped while it is over. A shard smaller than one row group is
// found by secant steps on its rows (at most kSizeSteps), aiming at 95% of the target, until it
// lands within 90..100%; failing that, the largest count tried that fitted, or one row.
int64_t write_first_shard_for_size(const ImageStore& store, const fs::path& candidate, const ShardWriteOptions& options) {
  constexpr int kSizeSteps = 4;
  const int64_t num_rows = store.size();
  const auto target = static_cast<double>(options.shard_size_bytes);
  int64_t encoded_rows = -1;  // what the candidate file holds
  const auto encode = [&](int64_t rows) {
    parquet::write_parquet(store, 0, rows, candidate, options.parquet);
    encoded_rows = rows;
    return static_cast<double>(file_system_for(candidate).stat(candidate).size);
  };
  const auto finish = [&](int64_t rows) {
    if (encoded_rows != rows) encode(rows);
    return rows;
  };
  const int64_t group_rows = std::min(num_rows, std::max<int64_t>(options.parquet.row_group_size, 1));
  const double one_group = encode(group_rows);
  if (one_group <= target) {
    if (group_rows == num_rows) return finish(num_rows);
    const int64_t two_rows = std::min(num_rows, 2 * group_rows);
    const double two_groups = encode(two_rows);
    if (two_groups > target) return finish(group_rows);
    const double group_bytes =
        std::max(1.0, (two_groups - one_group) * static_cast<double>(group_rows) / static_cast<double>(two_rows - group_rows));
    const auto most_groups = static_cast<int64_t>(std::floor((target - one_group) / group_bytes)) + 1;
    int64_t groups = std::clamp<int64_t>(most_groups, 2, (num_rows + group_rows - 1) / group_rows);
    double bytes = groups * group_rows == two_rows ? two_groups : encode(std::min(num_rows, groups * group_rows));
    while (bytes > target && groups > 2) {
      groups = std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(groups) * target / bytes), 2, groups - 1);
      bytes = encode(std::min(num_rows, groups * group_rows));
    }
    return finish(bytes <= target ? std::min(num_rows, groups * group_rows) : two_rows);
  }
  // Smaller than one row group.
  const auto fits = [&](double size_bytes) { return size_bytes <= target && size_bytes >= 0.9 * target; };
  const auto clamp_rows = [&](double rows) {
    return static_cast<int64_t>(std::clamp(std::floor(rows), 1.0, static_cast<double>(group_rows)));
  };
  std::vector<std::pair<int64_t, double>> tried = {{group_rows, one_group}};  // (rows, bytes), in order
  int64_t next = clamp_rows(0.95 * target * static_cast<double>(group_rows) / one_group);
  for (int step = 0; step < kSizeSteps && !fits(tried.back().second) && next != tried.back().first; ++step) {
    tried.emplace_back(next, encode(next));
    const auto [rows1, bytes1] = tried[tried.size() - 2];
    const auto [rows2, bytes2] = tried.back();
    double bytes_per_row = (bytes2 - bytes1) / static_cast<double>(rows2 - rows1);
    if (!(bytes_per_row > 0)) bytes_per_row = bytes2 / static_cast<double>(rows2);
    next = clamp_rows(static_cast<double>(rows2) + (0.95 * target - bytes2) / bytes_per_row);
  }
  int64_t best = 1;
  for (const auto& [rows, bytes] : tried) {
    if (bytes <= target) best = std::max(best, rows);
  }
  return finish(best);
}

// "part-00042.parquet": the number zero-padded to `digits`.
std::string shard_name(int64_t shard_idx, size_t digits) {
  std::string number = std::to_string(shard_idx);
  if (number.size() < digits) number.insert(0, digits - number.size(), '0');
  return "part-" + number + std::string(kParquetExtension);
}

}  // namespace

int64_t ShardedDataset::num_row_groups() const {
  int64_t count = 0;
  for (const ShardInfo& shard : shards) count += static_cast<int64_t>(shard.row_group_rows.size());
  return count;
}

namespace {

// A set feeder convert has not finished writing (its marker beside `files`, or in `directory`):
// some of its shards may be missing, and what is there would read as a whole set.
void refuse_unfinished(const std::string& spec, const fs::path& directory) {
  if (file_system_for(directory).stat(directory / kUnfinishedMarker).kind == FileKind::kMissing) return;
  throw DataError(spec + ": feeder convert has not finished writing " +
                  (spec == directory.string() ? std::string("this set") : "the set in " + directory.string()) + " (" +
                  std::string(kUnfinishedMarker) + " is there): it is being written, or it was cut short (the "
                  "process killed), and shards may be missing; then convert it again into an empty directory");
}

ShardedDataset open_sharded_spec(const std::string& spec, const ParquetImageOptions& options) {
  const fs::path path(spec);
  const FileSystem& files = file_system_for(path);
  const FileEntry what = files.stat(path);
  if (what.directory()) {
    refuse_unfinished(spec, path);
    if (files.stat(path / kShardIndexName).kind != FileKind::kMissing) return open_indexed(path, options);
    const std::vector<fs::path> paths = list_parquet_files(path);
    if (paths.empty()) {
      // A folder of images without class folders is a likely mistake: say what the layout is.
      bool images = false;
      for (const FileEntry& entry : files.list(path))
        images = images || is_image_file_name(entry.path.filename().string());
      throw DataError(spec + ": no .parquet files and no " + std::string(kShardIndexName) +
                      (images ? " (its images are not in class folders: an image folder has one folder of images per "
                                "class, as torchvision's ImageFolder reads)"
                              : ""));
    }
    return describe_from_footers(path, paths, options);
  }
  const fs::path root = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (has_glob_chars(path.filename().string())) {
    const std::vector<fs::path> files = match_glob(spec);
    for (const fs::path& file : files) refuse_unfinished(spec, file.parent_path().empty() ? "." : file.parent_path());
    return describe_from_footers(root, files, options);
  }
  if (what.file()) {
    refuse_unfinished(spec, root);
    return describe_from_footers(root, {path}, options);
  }
  throw DataError(spec + ": no such file or directory");
}

}  // namespace

ShardedDataset open_sharded_dataset(const std::string& spec, const ParquetImageOptions& options) {
  if (spec.empty()) throw DataError("no data set given (empty path)");
  ShardedDataset dataset = open_sharded_spec(spec, options);
  dataset.name = spec;
  return dataset;
}

ShardedDataset write_sharded(const ImageStore& given, const fs::path& out_dir, const ShardWriteOptions& options,
                             const std::function<void(int64_t, int64_t)>& progress) {
  check_write_options(options);
  OutputDirectory out(out_dir);
  std::optional<ImageStore> shuffled;
  if (options.shuffle_seed) {
    const std::vector<int64_t> order = epoch_order(given.size(), true, *options.shuffle_seed, 0);
    shuffled.emplace(given.shape(), given.size(), given.labeled());
    for (int64_t row = 0; row < given.size(); ++row) {
      const int64_t source_row = order[static_cast<size_t>(row)];
      std::memcpy(shuffled->image(row), given.image(source_row), static_cast<size_t>(given.image_bytes()));
      shuffled->labels()[static_cast<size_t>(row)] = given.labels()[static_cast<size_t>(source_row)];
    }
  }
  const ImageStore& store = shuffled ? *shuffled : given;
  ShardedDataset dataset;
  dataset.shuffled_on_write = options.shuffle_seed;
  dataset.root = out_dir;
  dataset.shape = store.shape();
  dataset.labeled = store.labeled();
  dataset.indexed = true;
  dataset.num_rows = store.size();
  if (store.labeled() && store.size() > 0) {
    const auto [min_it, max_it] = std::minmax_element(store.labels().begin(), store.labels().end());
    dataset.label_min = *min_it;
    dataset.label_max = *max_it;
  }
  ParquetImageOptions read_options;
  read_options.shape = store.shape();
  // For a target size the first shard is written before the names are known (their width depends
  // on the number of shards), under a hidden name without the .parquet extension.
  const fs::path first_candidate = out_dir / ".feeder-first-shard";
  out.add(first_candidate);
  int64_t shard_rows = options.shard_rows;
  const bool first_written = options.shard_size_bytes > 0 && store.size() > 0;
  if (first_written) shard_rows = write_first_shard_for_size(store, first_candidate, options);
  shard_rows = std::max<int64_t>(shard_rows, 1);
  const int64_t num_shards = std::max<int64_t>(1, (store.size() + shard_rows - 1) / shard_rows);
  const size_t digits = std::max<size_t>(5, std::to_string(num_shards - 1).size());
  for (int64_t shard_idx = 0; shard_idx < num_shards; ++shard_idx) {
    throw_if_interrupted();
    const fs::path path = out_dir / shard_name(shard_idx, digits);
    const int64_t first_row = shard_idx * shard_rows;
    const int64_t rows = std::min(shard_rows, store.size() - first_row);
    out.add(path);
    if (shard_idx == 0 && first_written) {
      file_system_for(path).rename(first_candidate, path);
    } else {
      parquet::write_parquet(store, first_row, rows, path, options.parquet);
    }
    const ParquetRowGroupReader reader = ParquetRowGroupReader::open(path, read_options);
    ShardInfo shard = shard_info(path, reader);
    shard.content_hash = detail::hash_file(path);
    if (shard_idx == 0) dataset.columns = reader.columns();
    dataset.shards.push_back(std::move(shard));
    if (progress) progress(shard_idx + 1, num_shards);
  }
  dataset.fingerprint = detail::fingerprint_of_content_hashes(dataset.shards);
  throw_if_interrupted();
  const fs::path index = out_dir / kShardIndexName;
  out.add(index);
  write_file_atomically(index, detail::shard_index_json(dataset));
  out.commit();
  return dataset;
}

ShardedDataset write_encoded_sharded(EncodedRowReader& reader, const fs::path& out_dir,
                                     const ShardWriteOptions& options,
                                     const std::function<void(int64_t, int64_t)>& progress) {
  check_write_options(options);
  OutputDirectory out(out_dir);
  const int64_t size = reader.size();
  const std::vector<int64_t> order = epoch_order(size, options.shuffle_seed.has_value(),
                                                 options.shuffle_seed.value_or(0), 0);
  int64_t shard_rows = options.shard_rows;
  if (shard_rows <= 0) {
    // As many images as make the target on average (every shard but the last gets the same rows).
    const double mean_bytes = static_cast<double>(std::max<int64_t>(reader.encoded_bytes(), 1)) /
                              static_cast<double>(std::max<int64_t>(size, 1));
    shard_rows = static_cast<int64_t>(static_cast<double>(options.shard_size_bytes) / mean_bytes);
  }
  shard_rows = std::max<int64_t>(shard_rows, 1);
  const int64_t num_shards = std::max<int64_t>(1, (size + shard_rows - 1) / shard_rows);
  const size_t digits = std::max<size_t>(5, std::to_string(num_shards - 1).size());
  std::vector<fs::path> written;
  for (int64_t shard_idx = 0; shard_idx < num_shards; ++shard_idx) {
    throw_if_interrupted();
    const fs::path path = out_dir / shard_name(shard_idx, digits);
    const int64_t first_row = shard_idx * shard_rows;
    const int64_t rows = std::min(shard_rows, size - first_row);
    // One shard's images in memory at a time, in the order they are written.
    const std::shared_ptr<const EncodedImageSource> images =
        reader.read(std::span<const int64_t>(order).subspan(static_cast<size_t>(first_row), static_cast<size_t>(rows)));
    std::vector<int64_t> in_order(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) in_order[static_cast<size_t>(r)] = r;
    out.add(path);
    parquet::write_encoded_parquet(*images, in_order, path, options.parquet);
    written.push_back(path);
    if (progress) progress(shard_idx + 1, num_shards);
  }
  ShardedDataset dataset = describe_from_footers(out_dir, written, {});
  dataset.shuffled_on_write = options.shuffle_seed;
  dataset.indexed = true;
  for (ShardInfo& shard : dataset.shards) shard.content_hash = detail::hash_file(shard.path);
  throw_if_interrupted();
  const fs::path index = out_dir / kShardIndexName;
  out.add(index);
  write_file_atomically(index, detail::shard_index_json(dataset));
  out.commit();
  return dataset;
}

std::string describe_sharded_dataset(const ShardedDataset& dataset) {
  std::ostringstream out;
  uint64_t size_bytes = 0;
  int64_t largest_read_bytes = 0;
  for (const ShardInfo& shard : dataset.shards) {
    size_bytes += shard.size_bytes;
    largest_read_bytes = std::max(largest_read_bytes, shard.row_group_max_compressed_bytes);
  }
  out << "sharded Parquet set: " << (dataset.name.empty() ? dataset.root.string() : dataset.name) << " ("
      << (dataset.indexed ? "indexed by " + std::string(kShardIndexName) : std::string("no index; described from the footers"))
      << ")\n";
  out << "shards: " << dataset.shards.size() << ", rows: " << dataset.num_rows << ", row groups: " << dataset.num_row_groups()
      << "\n";
  if (dataset.encoded) {
    out << "images: encoded (JPEG, PNG or WebP files, each of its own size), ";
  } else {
    out << "images: " << to_string(dataset.shape) << ", ";
  }
  if (!dataset.labeled) {
    out << "unlabeled\n";
  } else if (dataset.label_min && dataset.label_max) {
    out << "labels " << *dataset.label_min << ".." << *dataset.label_max << "\n";
  } else {
    out << "labeled (range not recorded)\n";
  }
  if (!dataset.columns.empty()) out << "columns: " << dataset.columns << "\n";
  out << "on disk: " << format_byte_size(static_cast<int64_t>(size_bytes));
  if (!dataset.encoded) out << ", decoded: " << format_byte_size(dataset.decoded_bytes());
  out
      << ", largest row group read: " << format_byte_size(largest_read_bytes) << "\n";
  if (dataset.shuffled_on_write) out << "rows shuffled when written, seed " << *dataset.shuffled_on_write << "\n";
  out << "fingerprint: " << detail::hex64(dataset.fingerprint) << "\n";
  // Every shard of a small set; the first and last few of a large one.
  constexpr size_t kListed = 8;
  for (size_t i = 0; i < dataset.shards.size(); ++i) {
    if (dataset.shards.size() > kListed && i == kListed - 2) {
      out << "  ... " << dataset.shards.size() - kListed + 1 << " more\n";
      i = dataset.shards.size() - 2;
      continue;
    }
    const ShardInfo& shard = dataset.shards[i];
    out << "  " << shard.path.filename().string() << ": " << shard.num_rows << " rows, " << shard.row_group_rows.size()
        << (shard.row_group_rows.size() == 1 ? " row group, " : " row groups, ")
        << format_byte_size(static_cast<int64_t>(shard.size_bytes)) << "\n";
  }
  return out.str();
}

}  // namespace feeder
