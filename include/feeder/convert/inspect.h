#pragma once

// What `feeder inspect PATH` shows, as text: a Parquet file's schema, row groups and column chunks
// (codecs, encodings, sizes, page counts, from the footer and page headers; no values decoded), a
// sharded set's summary, or a set of encoded images' (tar shards, an image folder, a Parquet set of
// images) formats, sizes and classes.
//
// Thread safety: a pure function of the files.

#include <string>

namespace feeder {

// The whole report, built before it is returned (a bad page header leaves no half listing). Names
// from the data are as they are: escape them for a terminal (feeder/util/printable.h). Throws
// DataError for a path that cannot be read or that holds no set inspect shows (IDX, CSV).
std::string inspect_report(const std::string& path);

}  // namespace feeder
