#include "formats/parquet/detail/thrift.h"

#include <limits>
#include <memory>

#include <thrift/TConfiguration.h>
#include <thrift/protocol/TCompactProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include "feeder/error.h"

namespace feeder::parquet::detail {

namespace {

using apache::thrift::TConfiguration;
using apache::thrift::protocol::TCompactProtocolT;
using apache::thrift::transport::TMemoryBuffer;

// Footers nest a few levels (FileMetaData > RowGroup > ColumnChunk > ColumnMetaData > Statistics);
// anything deeper is malformed.
constexpr int kMaxRecursionDepth = 32;

template <class T>
size_t read_struct(const uint8_t* data, size_t size_bytes, T& out, const std::string& context,
                   const char* what) {
  if (size_bytes > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw DataError(context + ": " + what + " of " + std::to_string(size_bytes) +
                    " bytes is larger than 2 GiB");
  }
  const auto limit = static_cast<int32_t>(size_bytes);
  try {
    // The message-size limit makes every read past the input throw, and checkReadBytesAvailable
    // rejects a container whose declared element count cannot fit in the bytes that remain.
    auto config = std::make_shared<TConfiguration>(limit, limit, kMaxRecursionDepth);
    // OBSERVE: the buffer is only read, never written or freed, so the const_cast is safe.
    auto buffer = std::make_shared<TMemoryBuffer>(const_cast<uint8_t*>(data), static_cast<uint32_t>(size_bytes),
                                                  TMemoryBuffer::OBSERVE, config);
    TCompactProtocolT<TMemoryBuffer> protocol(buffer, limit, limit);
    out.read(&protocol);
    return size_bytes - buffer->available_read();
  } catch (const apache::thrift::TException& e) {
    throw DataError(context + ": corrupt " + what + " (" + e.what() + ")");
  } catch (const std::bad_alloc&) {
    throw DataError(context + ": corrupt " + what + " (allocation failed)");
  }
}

template <class T>
std::string write_struct(const T& value) {
  auto buffer = std::make_shared<TMemoryBuffer>();
  TCompactProtocolT<TMemoryBuffer> protocol(buffer);
  value.write(&protocol);
  return buffer->getBufferAsString();
}

}  // namespace

size_t read_file_metadata(const uint8_t* data, size_t size_bytes, format::FileMetaData& out,
                          const std::string& context) {
  return read_struct(data, size_bytes, out, context, "footer metadata");
}

size_t read_page_header(const uint8_t* data, size_t size_bytes, format::PageHeader& out,
                        const std::string& context) {
  return read_struct(data, size_bytes, out, context, "page header");
}

std::string serialize_file_metadata(const format::FileMetaData& metadata) { return write_struct(metadata); }

std::string serialize_page_header(const format::PageHeader& header) { return write_struct(header); }

}  // namespace feeder::parquet::detail
