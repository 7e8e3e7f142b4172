#pragma once

// Reading image sets from CSV files (the article's label,pixel1..pixelK layout).
//
// Thread safety: no state is kept between calls: any thread may call these, concurrently too. A
// read uses threads of its own and joins them before returning. Ownership: the ImageStore returned
// owns its pixels and labels.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "feeder/store/image_store.h"

namespace feeder {

struct CsvReadOptions {
  // Shape of one image; by default 1x28x28 for 784 pixel columns, 1xSxS for S*S columns.
  std::optional<ImageShape> shape;
  // Parsing threads; 0 = one per core. Must not be negative. The rows are split into this many
  // chunks; inputs too small to be worth a thread each (under 64 KiB per thread) use fewer threads.
  // When the system refuses a thread, the read fails with ThreadStartError (feeder/util/parallel_for.h).
  int num_threads = 0;
};

// Reads a CSV in the article's layout: `label,pixel1..pixelK` (a header row is optional). A header
// without a `label` column means an unlabeled set (labels kNoLabel). Values must be integers 0..255.
// Throws DataError naming the file, line and column on ragged rows, non-numeric or out-of-range values.
//
// Details: the first non-blank line is a header when its first field is not an integer; without a
// header the first column is the label. Labels are integers >= 0. Lines may end in \n or \r\n, the
// last newline is optional, blank lines are skipped (as pandas does), and a UTF-8 byte order mark is
// ignored. A file with no data rows, header or not, is an error ("no rows"): an empty training set is
// never what was meant. Rows are parsed in parallel, in chunks split at line boundaries; when several
// rows are bad, the error reported is the first in file order, whatever the thread count.
ImageStore read_csv(const std::filesystem::path& path, const CsvReadOptions& options = {});

// In-memory form of read_csv, on already inflated bytes; `name` is used in error messages. The file
// reader is a thin wrapper around it, so fuzzing it covers every check the reader makes.
ImageStore read_csv_bytes(std::span<const uint8_t> bytes, const std::string& name,
                          const CsvReadOptions& options = {});

// Writes `store` as CSV in the article's layout (`label,pixel1..pixelK` header, then one row per
// image; no label column when the store is unlabeled), atomically. An empty store gives a header
// only, which read_csv rejects as "no rows".
void write_csv(const ImageStore& store, const std::filesystem::path& path);

}  // namespace feeder
