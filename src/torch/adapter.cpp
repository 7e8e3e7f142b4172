#include "feeder/torch/adapter.h"

#include <ATen/Context.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "torch/libtorch_compat.h"

namespace feeder {
namespace {

// Page-locked memory from LibTorch's CUDA host allocator (cached by LibTorch, so reuse is cheap).
class PinnedAllocator : public BufferAllocator {
 public:
  void* allocate(size_t size_bytes) override {
    std::lock_guard lock(mutex_);
    at::Allocator* pinned = torch_compat::pinned_memory_allocator();
    at::DataPtr data = pinned->allocate(size_bytes);
    void* raw = data.get();
    owned_.emplace(raw, std::move(data));
    return raw;
  }
  void deallocate(void* data, size_t) override {
    std::lock_guard lock(mutex_);
    owned_.erase(data);
  }
  bool pinned() const override { return true; }

 private:
  std::mutex mutex_;
  std::unordered_map<void*, at::DataPtr> owned_;  // guarded by mutex_
};

}  // namespace

namespace {

// LibTorch's type of a fixed-size field's elements.
torch::ScalarType torch_type(const Field& field) {
  switch (field.type) {
    case FieldType::kFloat32: return torch::kFloat32;
    case FieldType::kFloat64: return torch::kFloat64;
    case FieldType::kInt64: return torch::kInt64;
    case FieldType::kPixels: return torch::kUInt8;
    case FieldType::kEncodedImage: break;
  }
  throw std::logic_error("field '" + field.name + "': an encoded image is no tensor");
}

}  // namespace

TensorBatch to_tensors(const Batch& batch) {
  const ImageShape& shape = batch.shape();
  const int64_t b = batch.size();
  std::shared_ptr<void> owner = batch.buffer_owner();
  auto keep_alive = [owner](void*) mutable { owner.reset(); };
  // The images are written (B,C,H,W) or (B,H,W,C); either way the tensor is logically NCHW.
  std::vector<int64_t> sizes{b, shape.channels, shape.height, shape.width};
  const std::array<int64_t, 4> image_strides = batch.image_strides();
  std::vector<int64_t> strides(image_strides.begin(), image_strides.end());
  TensorBatch tensors;
  if (batch.dtype() == ImageDtype::kUint8)
    tensors.images = torch::from_blob(const_cast<uint8_t*>(batch.images_u8()), sizes, strides, keep_alive,
                                      torch::TensorOptions().dtype(torch::kUInt8));
  else
    tensors.images = torch::from_blob(const_cast<float*>(batch.images()), sizes, strides, keep_alive,
                                      torch::TensorOptions().dtype(torch::kFloat32));
  tensors.labels = torch::from_blob(const_cast<int64_t*>(batch.labels()), {b}, keep_alive,
                                    torch::TensorOptions().dtype(torch::kInt64));
  tensors.index = batch.index();
  tensors.num_padding = batch.num_padding();
  for (size_t f = 0; f < batch.value_fields().size(); ++f) {
    const FieldView view = batch.value(f);
    if (is_sequence(*view.field)) {
      const auto element = torch::TensorOptions().dtype(torch_type(*view.field));
      tensors.values.emplace(view.field->name, torch::from_blob(view.data, {view.offsets.back()}, keep_alive, element));
      tensors.offsets.emplace(view.field->name, torch::from_blob(const_cast<int64_t*>(view.offsets.data()), {b + 1},
                                                                 keep_alive, torch::TensorOptions().dtype(torch::kInt64)));
      continue;
    }
    std::vector<int64_t> field_sizes{b};
    field_sizes.insert(field_sizes.end(), view.field->shape.begin(), view.field->shape.end());
    tensors.values.emplace(view.field->name,
                           torch::from_blob(view.data, field_sizes, keep_alive, torch::TensorOptions().dtype(torch_type(*view.field))));
  }
  return tensors;
}

std::shared_ptr<BufferAllocator> make_pinned_allocator_if_cuda() {
  if (!at::hasCUDA()) return nullptr;
  return std::make_shared<PinnedAllocator>();
}

TensorLoader::TensorLoader(std::shared_ptr<const ImageStore> store, const LoaderOptions& options,
                           BatchTransform transform)
    : loader_(std::move(store), options, options.pin_memory ? make_pinned_allocator_if_cuda() : nullptr,
              std::move(transform)) {}

TensorLoader::TensorLoader(std::shared_ptr<const SampleSource> source, const LoaderOptions& options,
                           BatchTransform transform)
    : loader_(std::move(source), options, options.pin_memory ? make_pinned_allocator_if_cuda() : nullptr,
              std::move(transform)) {}

std::optional<TensorBatch> TensorLoader::next() {
  std::optional<Batch> batch = loader_.next();
  if (!batch) return std::nullopt;
  return to_tensors(*batch);
}

}  // namespace feeder
