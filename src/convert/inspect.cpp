// feeder inspect's report: a Parquet file's listing from its footer and page headers, or the summary
// of a sharded set, tar shards, an image folder or a Parquet set of encoded images.

#include "feeder/convert/inspect.h"
#include "feeder/io/object_storage.h"

#include <optional>
#include <ostream>
#include <sstream>
#include <string>

#include "feeder/error.h"
#include "feeder/formats/dataset_kind.h"
#include "feeder/formats/parquet/class_labels.h"
#include "feeder/formats/parquet/reader.h"
#include "feeder/formats/sharded.h"
#include "feeder/image/encoded_summary.h"
#include "feeder/image/image_folder.h"
#include "feeder/image/tar_shards.h"
#include "feeder/util/byte_size.h"

namespace feeder {

namespace {

std::string shorten(const std::string& text, size_t max_chars) {
  return text.size() <= max_chars ? text : text.substr(0, max_chars) + "... (" + std::to_string(text.size()) + " bytes)";
}

void print_file(const parquet::ParquetFile& file, std::ostream& out) {
  using namespace parquet;
  const FileMetadata& meta = file.metadata();
  out << "file: " << file.name() << " (" << file.bytes().size() << " bytes)\n";
  out << "created by: " << (meta.created_by.empty() ? "(absent)" : meta.created_by) << "\n";
  out << "format version: " << meta.version << ", rows: " << meta.num_rows << ", row groups: " << meta.row_groups.size()
      << ", columns: " << meta.columns.size() << "\n";
  if (meta.encrypted_footer_plaintext) out << "encryption: plaintext footer, encrypted columns\n";
  if (!meta.key_values.empty()) {
    out << "key-value metadata:\n";
    for (const KeyValue& kv : meta.key_values) {
      out << "  " << kv.key << (kv.value ? " = " + shorten(*kv.value, 80) : std::string(" (no value)")) << "\n";
    }
  }
  out << "schema:\n";
  for (const SchemaNode& node : meta.schema_nodes) {
    out << "  " << std::string(static_cast<size_t>(node.depth) * 2, ' ') << node.name;
    if (node.is_group) {
      out << " (group, " << node.num_children << " children";
    } else {
      out << " (" << to_string(*node.physical_type);
    }
    if (node.depth > 0) out << ", " << to_string(node.repetition);
    if (!node.annotation.empty()) out << ", " << node.annotation;
    out << ")\n";
  }
  if (meta.nested_column) out << "note: nested schema (column '" << *meta.nested_column << "'); feeder reads top-level primitive columns, and lists of numbers named as fields\n";
  for (size_t rg = 0; rg < meta.row_groups.size(); ++rg) {
    const RowGroupInfo& group = meta.row_groups[rg];
    out << "row group " << rg << ": " << group.num_rows << " rows, " << group.total_byte_size << " bytes uncompressed\n";
    for (size_t c = 0; c < group.columns.size(); ++c) {
      const ColumnChunkInfo& chunk = group.columns[c];
      out << "  " << meta.columns[c].name << ": ";
      if (chunk.encrypted) {
        out << "encrypted\n";
        continue;
      }
      out << to_string(chunk.codec) << ", encodings [";
      for (size_t e = 0; e < chunk.encodings.size(); ++e) out << (e ? " " : "") << to_string(chunk.encodings[e]);
      out << "], " << chunk.total_compressed_size_bytes << " -> " << chunk.total_uncompressed_size_bytes << " bytes, "
          << chunk.num_values << " values";
      if (chunk.null_count) out << ", " << *chunk.null_count << " nulls";
      const ChunkPageSummary pages =
          file.summarize_pages(static_cast<int64_t>(rg), static_cast<int64_t>(c));
      out << ", pages: " << pages.num_dictionary_pages << " dictionary, " << pages.num_data_pages_v1 << " v1, "
          << pages.num_data_pages_v2 << " v2";
      if (pages.num_other_pages) out << ", " << pages.num_other_pages << " other";
      if (!pages.data_encodings.empty()) {
        out << " (";
        for (size_t e = 0; e < pages.data_encodings.size(); ++e) out << (e ? " " : "") << to_string(pages.data_encodings[e]);
        out << ")";
      }
      if (pages.has_crc) out << ", crc";
      out << "\n";
    }
  }
}

// A single Parquet file whose rows are encoded images, opened as a set of one file; nothing for any
// other file (of pixels, or of columns that are no image set at all).
std::optional<ShardedDataset> encoded_images_file(const std::string& path) {
  if (!path.ends_with(".parquet")) return std::nullopt;
  try {
    ShardedDataset dataset = open_sharded_dataset(path);
    if (dataset.encoded) return dataset;
  } catch (const DataError&) {
  }
  return std::nullopt;
}

// A Parquet file's listing (schema, row groups, codecs, pages). The whole report is built before
// anything is shown, so a bad page header leaves no half listing.
std::string file_listing(const std::string& path) {
  std::ostringstream out;
  print_file(parquet::ParquetFile::open(path), out);
  return out.str();
}

// A set of encoded images' formats, sizes and classes (a Hugging Face ClassLabel's names, when
// written).
std::string describe_images(const ShardedDataset& dataset) {
  if (dataset.shards.empty()) return {};
  return describe_encoded_images(*open_parquet_source(dataset), parquet::class_label_names(dataset.shards.front().path));
}

// An image folder's classes, sizes and formats. Listed, not read: a budget of one byte makes the
// folder a stream, whose blocks are sampled.
std::string folder_report(const std::string& path) {
  const ImageFolder folder = open_image_folder(path, 0, 1);
  std::string text = "image folder: " + path + " (" + std::to_string(folder.classes.size()) + " classes, " +
                     format_byte_size(folder.encoded_bytes) + " of images";
  if (folder.skipped_other + folder.skipped_unsupported > 0)
    text += "; skipped " + std::to_string(folder.skipped_other) +
            (folder.skipped_other == 1 ? " other file and " : " other files and ") +
            describe_unsupported(folder.skipped_unsupported, folder.first_unsupported);
  if (!folder.unreadable_note.empty()) text += "; " + folder.unreadable_note;
  return text + ")\n" + describe_encoded_images(*folder.source, folder.classes);
}

}  // namespace

std::string inspect_report(const std::string& given) {
  const std::string path = without_url_secrets(given);  // printed, never its secrets
  // A file of a name feeder does not know is listed as the Parquet file it may be.
  const DatasetKind kind = find_dataset_kind(path).value_or(DatasetKind::kParquetFile);
  switch (kind) {
    case DatasetKind::kTarShards: {
      const TarShards shards = open_tar_shards(path);
      return "tar shards: " + path + " (" + std::to_string(shards.num_shards) + " shards, " +
             format_byte_size(shards.encoded_bytes) + " of images, " + std::to_string(shards.skipped_members) +
             " other members)\n" + describe_encoded_images(*shards.source);
    }
    case DatasetKind::kImageFolder: return folder_report(path);
    case DatasetKind::kParquet: {
      const ShardedDataset dataset = open_sharded_dataset(path);
      return describe_sharded_dataset(dataset) + (dataset.encoded ? describe_images(dataset) : std::string());
    }
    case DatasetKind::kIdxFile:
    case DatasetKind::kIdxDirectory:
    case DatasetKind::kCsvFile:
      throw DataError(path + ": a " + std::string(to_string(kind)) +
                      "; feeder inspect shows Parquet files and sets, tar shards and image folders");
    case DatasetKind::kParquetFile:
    case DatasetKind::kArrays: break;
  }
  // One file of encoded images: its own listing, as for any Parquet file, then its images; not the
  // summary of a "set" named after its directory.
  if (const std::optional<ShardedDataset> images = encoded_images_file(path)) return file_listing(path) + describe_images(*images);
  return file_listing(path);
}

}  // namespace feeder
