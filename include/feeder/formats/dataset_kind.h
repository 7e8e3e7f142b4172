#pragma once

// What a path, glob or directory holds, decided from names alone: the one place feeder's naming
// rules live (IDX file names, .csv, .parquet, .tar, an image folder's class folders). Nothing here
// reads a file's contents; a directory is listed once.
//
// Thread safety: no state between calls.

#include <optional>
#include <string>
#include <string_view>

namespace feeder {

enum class DatasetKind {
  kIdxFile,       // *-images-idx3-ubyte[.gz], labels read from the *-labels-idx1-ubyte[.gz] beside it
  kIdxDirectory,  // a directory of IDX files (train-* and t10k-*): a split is picked from it
  kCsvFile,       // .csv or .csv.gz
  kParquetFile,   // one .parquet file
  kParquet,       // a directory of Parquet shards (with or without index.json), or a glob of them
  kTarShards,     // a .tar, a directory of them, or a glob of them (WebDataset's key.jpg + key.cls)
  kImageFolder,   // torchvision's ImageFolder layout: root/<class>/.../<image>, or a list of image files
  kArrays,        // a program's arrays in memory (never a path's kind)
};

// "IDX file", "Parquet set", ...: for messages.
std::string_view to_string(DatasetKind kind);

// What `spec` holds. A glob (*, ? or [ in its last part) is tar shards when it ends in .tar and
// Parquet shards otherwise. A directory holds, in this order of precedence: a Parquet set (any
// .parquet file, index.json, or the marker of an unfinished conversion), tar shards (any .tar), IDX
// files (an images file), an image folder (any subdirectory). Throws DataError for a path that does
// not exist, a directory that cannot be listed or holds none of these, a compressed tar, or a file
// of no kind feeder reads.
DatasetKind dataset_kind(const std::string& spec);

// As dataset_kind, but nullopt for a file of a name feeder does not know (which may still be a
// Parquet file: feeder inspect lists any). Throws DataError for a path that does not exist.
std::optional<DatasetKind> find_dataset_kind(const std::string& spec);

// A file's kind from its name alone; throws DataError as dataset_kind does for an unknown one.
DatasetKind dataset_file_kind(const std::string& path);

// Whether `text` holds a glob's characters (*, ? or [).
bool has_glob_chars(std::string_view text);

}  // namespace feeder
