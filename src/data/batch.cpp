// Batch: one assembled batch over a leased buffer; any thread (a Batch is used by one at a time).

#include <stdexcept>
#include <string>
#include <utility>

#include "data/detail/buffer_pool.h"
#include "feeder/data/loader.h"

namespace feeder {

Batch::Batch(std::shared_ptr<detail::BatchBuffer> buffer, int64_t index, int64_t size, ImageShape shape,
             ImageLayout layout, ImageDtype dtype, int64_t num_padding, std::vector<std::string> skipped)
    : buffer_(std::move(buffer)),
      index_(index),
      size_(size),
      shape_(shape),
      layout_(layout),
      dtype_(dtype),
      num_padding_(num_padding),
      skipped_(std::move(skipped)) {}

namespace {

void check_dtype(ImageDtype have, ImageDtype want) {
  if (have != want)
    throw std::logic_error(have == ImageDtype::kUint8 ? "a batch of uint8 images: use images_u8()"
                                                      : "a batch of float32 images: use images()");
}

}  // namespace

float* Batch::images() {
  check_dtype(dtype_, ImageDtype::kFloat32);
  return static_cast<float*>(buffer_->images());
}
const float* Batch::images() const {
  check_dtype(dtype_, ImageDtype::kFloat32);
  return static_cast<const float*>(buffer_->images());
}
uint8_t* Batch::images_u8() {
  check_dtype(dtype_, ImageDtype::kUint8);
  return static_cast<uint8_t*>(buffer_->images());
}
const uint8_t* Batch::images_u8() const {
  check_dtype(dtype_, ImageDtype::kUint8);
  return static_cast<const uint8_t*>(buffer_->images());
}
int64_t* Batch::labels() { return buffer_->labels(); }
const int64_t* Batch::labels() const { return buffer_->labels(); }
std::span<const int64_t> Batch::sample_indices() const {
  return {buffer_->sample_indices, static_cast<size_t>(size_)};
}
std::shared_ptr<void> Batch::buffer_owner() const { return buffer_; }

std::span<const Field> Batch::value_fields() const { return buffer_->value_fields(); }

FieldView Batch::value(size_t field) const {
  const Field& f = buffer_->value_fields()[field];
  if (!is_sequence(f)) return {&f, buffer_->value_region(field), size_};
  detail::SequenceValues& sequence = buffer_->value_sequence(field);
  return {&f, sequence.bytes.data(), size_, sequence.offsets};
}

FieldView Batch::value(std::string_view name) const {
  const std::span<const Field> fields = buffer_->value_fields();
  for (size_t f = 0; f < fields.size(); ++f)
    if (fields[f].name == name) return value(f);
  std::string names;
  for (const Field& field : fields) names += (names.empty() ? "'" : ", '") + field.name + "'";
  throw std::out_of_range("the batch has no field '" + std::string(name) + "' (" +
                          (names.empty() ? std::string("it has images and labels only") : "its fields: " + names) + ")");
}

}  // namespace feeder
