// The C++ half of the Python package `feeder` (python/feeder/__init__.py is the other): loaders over
// feeder's sources whose batches reach Python as DLPack capsules over the loader's own buffers
// (torch.utils.dlpack.from_dlpack makes them tensors without a copy), and the library's conversion
// and inspection (feeder/convert/), whose reports come back as values. It links no LibTorch: one build serves any torch, CPU or CUDA, 1.13 or 2.x. Everything
// here is a thin layer over the library; options are checked by the library, so Python sees the
// messages the C++ side gives.
//
// The GIL is released whenever C++ waits or works for long: opening and loading a set, starting an
// epoch, waiting for a batch, converting. Nothing that runs without the GIL touches a Python object.

#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <atomic>
#include <thread>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "feeder/io/object_storage.h"
#include "feeder/convert/convert.h"
#include "feeder/convert/inspect.h"
#include "feeder/error.h"
#include "feeder/util/interrupt.h"
#include "feeder/data/loader.h"
#include "feeder/data/sampler.h"
#include "feeder/data/source.h"
#include "feeder/dataset/dataset.h"
#include "feeder/formats/dataset_files.h"
#include "feeder/formats/parquet/writer.h"
#include "feeder/image/crop.h"
#include "feeder/image/image_decoder.h"
#include "feeder/image/image_stage.h"
#include "feeder/image/resized_crop.h"
#include "feeder/system/runtime.h"
#include "feeder/util/byte_size.h"
#include "feeder/util/made_in_process.h"
#include "feeder/version.h"

namespace py = pybind11;

namespace feeder::python {
namespace {

// Runs `work` (which touches nothing of Python's) on a thread of its own while this thread waits
// without the GIL, in slices, checking for Ctrl-C: on one, the work is asked to stop (its requests
// end, its loops throw Interrupted: request_interrupt), waited for, and KeyboardInterrupt raised.
// Otherwise its result or its error. For calls that may wait on a server: opening, reading a
// state's blocks, converting, inspecting.
template <class Work>
auto interruptible(Work work) -> decltype(work()) {
  auto done = std::async(std::launch::async, std::move(work));
  bool interrupted = false;
  for (;;) {
    std::future_status status;
    {
      py::gil_scoped_release release;
      status = done.wait_for(std::chrono::milliseconds(50));
    }
    if (status == std::future_status::ready) break;
    if (!interrupted && PyErr_CheckSignals() != 0) {  // the KeyboardInterrupt stays set
      interrupted = true;
      request_interrupt();
    }
  }
  if (interrupted) {
    clear_interrupt();
    try {
      done.get();
    } catch (...) {  // Interrupted, or whatever the work failed with while stopping
    }
    throw py::error_already_set();
  }
  return done.get();  // or its error
}

Dataset open_path(const std::string& spec, int64_t memory_budget, bool train, std::vector<std::string> fields,
                  int64_t piece_bytes) {
  DatasetOptions options;
  options.memory_budget = memory_budget;
  options.piece_bytes = piece_bytes;
  options.split = train ? Split::kTrain : Split::kTest;
  options.fields = std::move(fields);
  return interruptible([&] { return open_dataset(spec, options); });
}

// An in-memory set over the caller's array: `images` is a C-contiguous (N,C,H,W) array of uint8
// pixels (or float32 values, served as they are) that the store uses where it lies, holding a
// reference to it; `labels` (N) int64 are copied.
template <typename Pixel>
Dataset from_arrays(py::array_t<Pixel, py::array::c_style> images, std::optional<py::array_t<int64_t>> labels) {
  if (images.ndim() != 4) throw OptionsError("images must have 4 dimensions (N,C,H,W), got " + std::to_string(images.ndim()));
  const int64_t num_images = images.shape(0);
  const ImageShape shape{images.shape(1), images.shape(2), images.shape(3)};
  std::vector<int64_t> label_values(static_cast<size_t>(num_images), kNoLabel);
  if (labels) {
    if (labels->ndim() != 1 || labels->shape(0) != num_images)
      throw OptionsError("labels must have shape (" + std::to_string(num_images) + ",) to match the images");
    const auto view = labels->template unchecked<1>();
    for (int64_t i = 0; i < num_images; ++i) label_values[static_cast<size_t>(i)] = view(i);
  }
  // The array's reference is dropped with the GIL held, whichever thread frees the store last.
  auto holder = std::shared_ptr<py::object>(new py::object(images), [](py::object* object) {
    if (!Py_IsInitialized()) return;  // the interpreter is gone: nothing left to release
    py::gil_scoped_acquire gil;
    delete object;
  });
  std::shared_ptr<uint8_t> pixels(holder, reinterpret_cast<uint8_t*>(const_cast<Pixel*>(images.data())));
  constexpr PixelType type = std::is_same_v<Pixel, float> ? PixelType::kFloat32 : PixelType::kUint8;
  auto store = std::make_shared<const ImageStore>(shape, num_images, std::move(pixels), std::move(label_values),
                                                  labels.has_value(), type);
  Dataset opened;
  opened.spec = "in-memory array";
  opened.kind = DatasetKind::kArrays;
  opened.schema = image_schema(shape, false, labels.has_value(), type);
  opened.source = std::make_shared<InMemorySource>(store, opened.spec);
  opened.held_bytes = opened.source->decoded_bytes();
  opened.description = "in memory (the caller's array)";
  return opened;
}

// A DLPack tensor over memory that `owner` keeps alive, handed to Python as a "dltensor" capsule
// (the DLPack protocol's legacy form, which torch 1.13 and 2.x take alike). Whoever consumes the
// capsule calls the deleter when its tensor dies, from any thread and without the GIL: the deleter
// only drops a C++ reference to the batch buffer, which returns it to the loader's pool.
struct ExportedTensor {
  DLManagedTensor managed{};
  std::shared_ptr<void> owner;
  int64_t shape[4] = {};
  int64_t strides[4] = {};
};

void delete_exported(DLManagedTensor* managed) { delete static_cast<ExportedTensor*>(managed->manager_ctx); }

// An unconsumed capsule (the tensor was never made) frees what it holds; a consumed one was renamed
// "used_dltensor" by its consumer, who owns the tensor now.
void destroy_capsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "used_dltensor")) return;
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (managed == nullptr) {
    PyErr_Clear();
    return;
  }
  managed->deleter(managed);
}

py::capsule export_tensor(const void* data, DLDataType dtype, std::span<const int64_t> shape,
                          std::span<const int64_t> strides, std::shared_ptr<void> owner) {
  if (shape.size() > std::size(ExportedTensor{}.shape) || strides.size() != shape.size())
    throw std::logic_error("a tensor of " + std::to_string(shape.size()) + " dimensions cannot be exported");
  auto exported = std::make_unique<ExportedTensor>();
  exported->owner = std::move(owner);
  std::copy(shape.begin(), shape.end(), exported->shape);
  std::copy(strides.begin(), strides.end(), exported->strides);
  DLTensor& tensor = exported->managed.dl_tensor;
  tensor.data = const_cast<void*>(data);
  tensor.device = DLDevice{kDLCPU, 0};
  tensor.ndim = static_cast<int32_t>(shape.size());
  tensor.dtype = dtype;
  tensor.shape = exported->shape;
  tensor.strides = exported->strides;  // in elements, as DLPack counts them
  tensor.byte_offset = 0;
  exported->managed.manager_ctx = exported.get();
  exported->managed.deleter = delete_exported;
  PyObject* capsule = PyCapsule_New(&exported->managed, "dltensor", destroy_capsule);
  if (capsule == nullptr) throw py::error_already_set();
  exported.release();  // the capsule owns it now
  return py::reinterpret_steal<py::capsule>(capsule);
}

// The DLPack type of a fixed-size field's elements.
DLDataType dlpack_type(FieldType type) {
  switch (type) {
    case FieldType::kFloat32: return {kDLFloat, 32, 1};
    case FieldType::kFloat64: return {kDLFloat, 64, 1};
    case FieldType::kInt64: return {kDLInt, 64, 1};
    case FieldType::kPixels: return {kDLUInt, 8, 1};
    case FieldType::kEncodedImage: break;
  }
  throw std::logic_error("an encoded image is no tensor");
}

// A field's values in a batch of `b` samples as a (name, capsule) pair: a tensor (b, *shape), rows
// contiguous, as default_collate stacks a sample's scalar or array; for a sequence, (name, (values,
// offsets)): every row's values back to back, and the b + 1 offsets of the rows in them.
py::tuple export_field(const FieldView& view, int64_t b, const std::shared_ptr<void>& owner) {
  if (is_sequence(*view.field)) {
    constexpr int64_t kStrides[] = {1};
    const int64_t values_shape[] = {view.offsets.back()};
    const int64_t offsets_shape[] = {b + 1};
    return py::make_tuple(
        view.field->name,
        py::make_tuple(export_tensor(view.data, dlpack_type(view.field->type), values_shape, kStrides, owner),
                       export_tensor(const_cast<int64_t*>(view.offsets.data()), DLDataType{kDLInt, 64, 1}, offsets_shape,
                                     kStrides, owner)));
  }
  std::vector<int64_t> shape{b};
  shape.insert(shape.end(), view.field->shape.begin(), view.field->shape.end());
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size() - 1; d > 0; --d) strides[d - 1] = strides[d] * shape[d];
  return py::make_tuple(view.field->name, export_tensor(view.data, dlpack_type(view.field->type), shape, strides, owner));
}

// A name or a message that holds one, as Python's os.fsdecode gives it: bytes that are not UTF-8
// become lone surrogates, so any name a POSIX file system allows reaches Python (and goes back,
// through os.fsencode, to the same bytes) where a UTF-8 decode would raise UnicodeDecodeError.
py::str fs_str(const std::string& text) {
  PyObject* decoded = PyUnicode_DecodeFSDefaultAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
  if (decoded == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(decoded);
}

py::list fs_strs(const std::vector<std::string>& texts) {
  py::list list;
  for (const std::string& text : texts) list.append(fs_str(text));
  return list;
}

// An image folder, or the files of a torchvision dataset, as the package's Source.
// How often next() looks for a signal (Ctrl-C) while it waits for a batch.
constexpr std::chrono::milliseconds kSignalCheckInterval{20};

// One Python DataLoader's loader. Loader itself has one consumer thread; since next() lets go of the
// GIL while it waits, mutex_ keeps a second Python thread from entering the loader meanwhile. The
// mutex is taken only after the GIL is released, so the two locks are never waited on in the
// opposite order.
class PyLoader {
 public:
  PyLoader(std::shared_ptr<const SampleSource> source, const LoaderOptions& options) {
    // A streaming loader asks for epoch 0's first blocks here: Ctrl-C is watched meanwhile.
    loader_ = interruptible([&] { return std::make_unique<Loader>(std::move(source), options); });
  }
  ~PyLoader() {
    // In a forked child the mutex may be held by a thread of the parent; ~Loader keeps its parts.
    if (made_in_.forked()) keep_in_forked_child(std::move(loader_));
  }

  // A loader inherited by a forked child (torch's DataLoader forks its workers) is not used there:
  // its threads stayed in the parent. Raised instead of waiting for them for ever.
  void check_process() const {
    if (made_in_.forked())
      throw std::runtime_error("this feeder DataLoader was made in process " + std::to_string(made_in_.pid()) +
                               ", and this process is a child forked from it, where its worker threads do not "
                               "exist: make the DataLoader in this process (pickled, a DataLoader is made "
                               "again where it is unpickled)");
  }

  void start_epoch(int64_t epoch) {
    check_process();
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    loader_->start_epoch(epoch);
  }
  // An epoch over a sampler's indices (Loader::start_epoch with an order).
  void start_epoch_with_order(int64_t epoch, std::vector<int64_t> order, int64_t first_batch, int64_t sampler_rank,
                              int64_t sampler_ranks) {
    check_process();
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    loader_->start_epoch(epoch, std::move(order), first_batch, {sampler_rank, sampler_ranks});
  }
  void reseed(uint64_t seed) {
    check_process();
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    loader_->reseed(seed);
  }

  // (images, labels, num_padding, values): the batch's buffer as DLPack capsules, how many of its
  // last rows are the padding of ranks (EpochPlan), and a (name, capsule) pair per value field
  // (Batch::value), empty for images and labels alone; None at the end of the epoch. The images are
  // logically (B,C,H,W), with the batch's strides (Batch::image_strides).
  py::object next() {
    std::optional<Batch> batch;
    // Waits in slices, checking Python's signals between them, so that Ctrl-C raises
    // KeyboardInterrupt within a slice however long the batch takes.
    check_process();
    for (bool ready = false; !ready;) {
      {
        py::gil_scoped_release release;
        std::lock_guard lock(mutex_);
        ready = loader_->wait_for_next(kSignalCheckInterval);
        if (ready) batch = loader_->next();
      }
      if (!ready && PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
    if (!batch) return py::none();
    const bool u8 = batch->dtype() == ImageDtype::kUint8;
    void* image_data = u8 ? static_cast<void*>(batch->images_u8()) : static_cast<void*>(batch->images());
    last_images_ = reinterpret_cast<uintptr_t>(image_data);
    last_labels_ = reinterpret_cast<uintptr_t>(batch->labels());
    const ImageShape shape = batch->shape();
    const int64_t b = batch->size();
    const std::array<int64_t, 4> image_strides = batch->image_strides();
    constexpr int64_t kLabelStrides[] = {1};
    std::shared_ptr<void> owner = batch->buffer_owner();
    const int64_t image_shape[] = {b, shape.channels, shape.height, shape.width};
    py::capsule images = export_tensor(image_data, u8 ? DLDataType{kDLUInt, 8, 1} : DLDataType{kDLFloat, 32, 1},
                                       image_shape, image_strides, owner);
    const int64_t label_shape[] = {b};
    py::capsule labels = export_tensor(batch->labels(), DLDataType{kDLInt, 64, 1}, label_shape, kLabelStrides, owner);
    py::list values;
    for (size_t f = 0; f < batch->value_fields().size(); ++f)
      values.append(export_field(batch->value(f), b, owner));
    return py::make_tuple(std::move(images), std::move(labels), batch->num_padding(), std::move(values));
  }

  // Runs epoch `epoch` to its end in C++ and returns its number of samples: the loader's rate with
  // nothing of Python between batches, for bench/images/images_bench.py to set beside next()'s.
  int64_t drain_epoch(int64_t epoch) {
    check_process();
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    loader_->start_epoch(epoch);
    int64_t samples = 0;
    while (std::optional<Batch> batch = loader_->next()) samples += batch->size() - batch->num_padding();
    return samples;
  }

  std::string state() {
    check_process();
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    return loader_->state().to_json();
  }
  void restore(const std::string& state_json) {
    const LoaderState state = LoaderState::from_json(state_json);
    check_process();
    py::gil_scoped_release release;
    std::lock_guard lock(mutex_);
    loader_->restore(state);
  }

  const Loader& loader() const { return *loader_; }
  py::tuple last_batch_addresses() const { return py::make_tuple(last_images_, last_labels_); }

 private:
  std::mutex mutex_;  // held by whichever thread is inside loader_
  std::unique_ptr<Loader> loader_;
  MadeInProcess made_in_;
  uintptr_t last_images_ = 0;  // the buffers of the batch next() returned last
  uintptr_t last_labels_ = 0;
};

// The image stage from DataLoader's image options (a dict of plain values; checked by ImageStage).
std::shared_ptr<const SampleStage> make_image_stage(const py::dict& image) {
  ImageStageOptions options;
  options.channels = image["channels"].cast<int>();
  options.height = image["height"].cast<int64_t>();
  options.width = image["width"].cast<int64_t>();
  const auto crop = image["crop"].cast<std::string>();
  if (crop == "random_resized_crop")
    options.crop = ImageCrop::kRandomResizedCrop;
  else if (crop == "center_crop")
    options.crop = ImageCrop::kCenterCrop;
  else if (crop == "resize")
    options.crop = ImageCrop::kResize;
  else if (crop == "random_crop")
    options.crop = ImageCrop::kRandomCrop;
  else
    throw OptionsError("augment must be 'random_resized_crop', 'center_crop' or None, got '" + crop + "'");
  const auto scale = image["scale"].cast<std::pair<double, double>>();
  const auto ratio = image["ratio"].cast<std::pair<double, double>>();
  options.random_crop = {scale.first, scale.second, ratio.first, ratio.second};
  options.flip = image["flip"].cast<bool>();
  if (image.contains("horizontal_flip")) options.horizontal_flip = image["horizontal_flip"].cast<double>();
  if (image.contains("padding")) {
    options.padding = image["padding"].cast<std::array<int64_t, 4>>();
    options.pad_if_needed = image["pad_if_needed"].cast<bool>();
    options.fill = image["fill"].cast<std::array<uint8_t, 3>>();
    const auto mode = image["padding_mode"].cast<std::string>();
    if (mode == "constant") options.padding_mode = ImageStageOptions::Padding::kConstant;
    else if (mode == "edge") options.padding_mode = ImageStageOptions::Padding::kEdge;
    else if (mode == "reflect") options.padding_mode = ImageStageOptions::Padding::kReflect;
    else throw OptionsError("padding_mode must be constant, edge or reflect, got '" + mode + "'");
  }
  options.resize = image["resize"].cast<int64_t>();
  options.mean = image["mean"].cast<std::array<float, 3>>();
  options.std = image["std"].cast<std::array<float, 3>>();
  options.dct_scaling = image["dct_scaling"].cast<bool>();
  return std::make_shared<ImageStage>(options);
}

LoaderOptions make_options(int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last, int num_workers,
                           int prefetch, float mean, float std, const std::string& layout, int64_t rank,
                           int64_t world_size, int64_t memory_budget, int64_t shuffle_window) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.shuffle = shuffle;
  options.seed = seed;
  options.drop_last = drop_last;
  options.num_workers = num_workers;
  options.prefetch = prefetch;
  options.normalization = {mean, std};
  if (layout == "nchw") options.layout = ImageLayout::kNchw;
  else if (layout == "nhwc") options.layout = ImageLayout::kNhwc;
  else throw OptionsError("layout must be 'nchw' or 'nhwc', got '" + layout + "'");
  options.rank = rank;
  options.world_size = world_size;
  options.memory_budget = memory_budget;
  options.shuffle_window = shuffle_window;
  return options;
}

// A name of the command line's (codec, layout) parsed by the library; the message names the option
// as the command's other messages do ("--codec: unknown Parquet codec 'rar' ...").
template <typename Parse>
auto parsed_option(const char* option, const std::optional<std::string>& text, Parse parse)
    -> std::optional<decltype(parse(std::string_view()))> {
  if (!text) return std::nullopt;
  try {
    return parse(*text);
  } catch (const OptionsError& error) {
    throw OptionsError(std::string(option) + ": " + error.what());
  }
}

// feeder.convert's options, each None when not given; names are bytes (os.fsencode).
ConvertOptions convert_options(const std::string& input, const std::string& output, const std::optional<std::string>& layout,
                               const std::optional<std::string>& codec, std::optional<int> level,
                               std::optional<int64_t> row_group_size, std::optional<int64_t> shard_rows,
                               std::optional<std::string> shard_size, std::optional<std::array<int64_t, 3>> shape,
                               std::optional<int64_t> page_rows, std::optional<uint64_t> shuffle_on_write,
                               std::optional<int64_t> max_side, std::optional<int> jpeg_quality) {
  ConvertOptions options;
  options.input = input;
  options.output = output;
  options.layout = parsed_option("--layout", layout, parse_convert_layout);
  options.codec = parsed_option("--codec", codec, parquet::parse_parquet_codec);
  options.level = level;
  options.row_group_size = row_group_size;
  options.shard_rows = shard_rows;
  options.shard_size = std::move(shard_size);
  if (shape) options.shape = ImageShape{(*shape)[0], (*shape)[1], (*shape)[2]};
  options.page_rows = page_rows;
  options.shuffle_seed = shuffle_on_write;
  options.max_side = max_side;
  options.jpeg_quality = jpeg_quality;
  return options;
}

// The library's conversion, returning its report. It runs on a thread of its own while this one,
// holding the GIL between waits, lets Python see Ctrl-C: it then asks the conversion to stop
// (feeder/util/interrupt.h), which removes what it wrote (unless it had already finished), and
// raises KeyboardInterrupt once it has. `progress` (a callable taking a line, or None) is called
// from the conversion's thread with the GIL taken; what it raises is reported as unraisable.
ConvertReport convert(const ConvertOptions& options, const py::object& progress) {
  ConvertProgress on_progress;
  if (!progress.is_none()) {
    // Borrowed: the caller's argument outlives the conversion.
    on_progress = [callable = progress.ptr()](const std::string& line) {
      py::gil_scoped_acquire gil;
      try {
        py::handle(callable)(fs_str(line));
      } catch (py::error_already_set& error) {
        error.discard_as_unraisable("feeder.convert's progress");
      }
    };
  }
  return interruptible([&options, &on_progress] { return convert_dataset(options, on_progress); });
}

py::str inspect(const std::string& path) { return fs_str(interruptible([&] { return inspect_report(path); })); }

}  // namespace
}  // namespace feeder::python

namespace feeder::python {
// The holder of a Source: freed where it was made, kept in a forked child (its parts may be held
// by the parent's threads at the fork; feeder/util/made_in_process.h).
struct DatasetDelete {
  MadeInProcess made_in;
  void operator()(Dataset* dataset) const {
    if (!made_in.forked()) delete dataset;
  }
};

namespace {

// Opening sets: paths, lists of image files, arrays.
void bind_datasets(py::module_& m) {
  // A dataset as open_dataset gives it. `classes` may be set by the package (a torchvision dataset's).
  py::class_<Dataset, std::unique_ptr<Dataset, DatasetDelete>>(m, "Source")
      .def_property_readonly("streaming", [](const Dataset& s) { return s.streaming; })
      .def_property_readonly("description", [](const Dataset& s) { return fs_str(s.description); })
      .def_property_readonly("warning", [](const Dataset& s) { return fs_str(s.warning); })
      .def_property_readonly("name", [](const Dataset& s) { return fs_str(s.source->name()); })
      .def_property_readonly("kind", [](const Dataset& s) { return std::string(to_string(s.kind)); })
      .def_property_readonly("schema", [](const Dataset& s) { return to_string(s.schema); })
      .def_property_readonly("fields",
                             [](const Dataset& s) {
                               std::vector<std::string> names;
                               for (const Field& field : s.source->value_fields()) names.push_back(field.name);
                               return names;
                             })
      .def_property_readonly("num_samples", [](const Dataset& s) { return s.source->size(); })
      .def_property_readonly("labeled", [](const Dataset& s) { return s.source->labeled(); })
      .def_property_readonly("encoded", [](const Dataset& s) { return s.source->encoded(); })
      .def_property_readonly("image_files", &Dataset::image_files)
      .def_property_readonly("skipped_files", [](const Dataset& s) { return s.skipped_files; })
      .def_property_readonly("skipped_unsupported", [](const Dataset& s) { return s.skipped_unsupported; })
      .def_property_readonly("first_unsupported", [](const Dataset& s) { return fs_strs(s.first_unsupported); })
      .def_property(
          "classes", [](const Dataset& s) { return s.classes.empty() ? py::object(py::none()) : py::object(fs_strs(s.classes)); },
          [](Dataset& s, std::optional<std::vector<std::string>> classes) { s.classes = classes.value_or(std::vector<std::string>{}); })
      .def("read_labels",
           [](const Dataset& s) {
             std::vector<int64_t> labels;
             {
               py::gil_scoped_release release;
               labels = read_labels(*s.source);
             }
             return labels;
           })
      .def("sample_names",
           [](const Dataset& s) {
             std::vector<std::string> names(static_cast<size_t>(s.source->size()));
             for (int64_t i = 0; i < s.source->size(); ++i) names[static_cast<size_t>(i)] = s.source->sample_name(i);
             return fs_strs(names);
           })
      .def_property_readonly("shape", [](const Dataset& s) {
        const ImageShape shape = s.source->shape();
        return py::make_tuple(shape.channels, shape.height, shape.width);
      });
  m.def("open_dataset", &open_path, py::arg("spec"), py::arg("memory_budget"), py::arg("train"),
        py::arg("fields") = std::vector<std::string>{}, py::arg("piece_bytes") = 0);
  m.def(
      "open_image_files",
      [](const std::string& name, const std::vector<std::string>& paths, std::vector<int64_t> labels,
         std::vector<std::string> classes, int64_t memory_budget, bool mix_streamed) {
        ImageFiles files{name, std::vector<std::filesystem::path>(paths.begin(), paths.end()), std::move(labels),
                         std::move(classes), mix_streamed};
        DatasetOptions options;
        options.memory_budget = memory_budget;
        return interruptible([&] { return open_dataset(std::move(files), options); });
      },
      py::arg("name"), py::arg("paths"), py::arg("labels"), py::arg("classes"), py::arg("memory_budget"),
      py::arg("mix_streamed"));
  m.def("from_arrays", &from_arrays<uint8_t>, py::arg("images"), py::arg("labels"));
  m.def("from_float_arrays", &from_arrays<float>, py::arg("images"), py::arg("labels"));

}

// The loader and the epoch order.
void bind_loader(py::module_& m) {
  py::class_<PyLoader>(m, "Loader")
      .def(py::init([](const Dataset& source, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last,
                       int num_workers, int prefetch, float mean, float std, const std::string& layout,
                       int64_t rank, int64_t world_size, int64_t memory_budget, int64_t shuffle_window,
                       std::optional<py::dict> image, bool skip_bad_samples, const std::string& dtype) {
             // The budget counts only for a streamed set; one in memory is already held.
             LoaderOptions options = make_options(batch_size, shuffle, seed, drop_last, num_workers, prefetch, mean,
                                                  std, layout, rank, world_size, memory_budget, shuffle_window);
             if (image) options.sample_stage = make_image_stage(*image);
             options.skip_bad_samples = skip_bad_samples;
             if (dtype == "uint8") options.dtype = ImageDtype::kUint8;
             else if (dtype != "float32") throw OptionsError("dtype must be float32 or uint8, got '" + dtype + "'");
             return std::make_unique<PyLoader>(source.source, options);
           }),
           py::arg("source"), py::arg("batch_size"), py::arg("shuffle"), py::arg("seed"), py::arg("drop_last"),
           py::arg("num_workers"), py::arg("prefetch"), py::arg("mean"), py::arg("std"), py::arg("layout"),
           py::arg("rank"), py::arg("world_size"), py::arg("memory_budget"), py::arg("shuffle_window"),
           py::arg("image") = py::none(), py::arg("skip_bad_samples") = false, py::arg("dtype") = "float32")
      .def_property_readonly("sample_shape", [](const PyLoader& l) {
        const ImageShape shape = l.loader().sample_shape();
        return py::make_tuple(shape.channels, shape.height, shape.width);
      })
      .def("start_epoch", &PyLoader::start_epoch)
      .def("start_epoch_with_order", &PyLoader::start_epoch_with_order, py::arg("epoch"), py::arg("order"),
           py::arg("first_batch") = 0, py::arg("sampler_rank") = 0, py::arg("sampler_ranks") = 1)
      .def("reseed", &PyLoader::reseed)
      .def("next", &PyLoader::next)
      .def("state", &PyLoader::state)
      .def("restore", &PyLoader::restore)
      .def("_drain_epoch", &PyLoader::drain_epoch)
      .def_property_readonly("num_batches", [](const PyLoader& l) { return l.loader().num_batches(); })
      .def_property_readonly("num_samples", [](const PyLoader& l) { return l.loader().num_samples(); })
      .def_property_readonly("streaming", [](const PyLoader& l) { return l.loader().streaming(); })
      .def_property_readonly("shuffle_window", [](const PyLoader& l) { return l.loader().shuffle_window(); })
      .def_property_readonly("shuffle_advice", [](const PyLoader& l) { return fs_str(l.loader().shuffle_advice()); })
      .def_property_readonly("skipped_samples", [](const PyLoader& l) { return l.loader().skipped_samples(); })
      .def_property_readonly("skipped_examples", [](const PyLoader& l) { return fs_strs(l.loader().skipped_examples()); })
      .def_property_readonly("memory_budget", [](const PyLoader& l) { return l.loader().memory_budget(); })
      .def_property_readonly("buffers_allocated", [](const PyLoader& l) { return l.loader().buffers_allocated(); })
      .def("last_batch_addresses", &PyLoader::last_batch_addresses);

  m.def("epoch_order", &epoch_order, py::arg("num_samples"), py::arg("shuffle"), py::arg("seed"), py::arg("epoch"));
  // This rank's samples of an epoch's order, batch after batch, as the loader serves them (EpochPlan:
  // padded for ranks, each global batch split among them): the order torch's DataLoader is given
  // when it runs the items (feeder/torch_run.py).
  m.def(
      "rank_order",
      [](std::vector<int64_t> order, int64_t batch_size, bool drop_last, int64_t rank, int64_t world_size) {
        const EpochPlan plan(std::move(order), batch_size, drop_last, rank, world_size);
        std::vector<int64_t> samples;
        samples.reserve(static_cast<size_t>(plan.num_samples()));
        for (int64_t b = 0; b < plan.num_batches(); ++b) {
          const auto [first, last] = plan.batch_span(b);
          for (int64_t p = first; p < last; ++p) samples.push_back(plan.sample_at(p));
        }
        return samples;
      },
      py::arg("order"), py::arg("batch_size"), py::arg("drop_last"), py::arg("rank"), py::arg("world_size"));
}

// convert and inspect, as library calls.
// A conversion's report (feeder/convert/convert_report.h): its numbers, its bad images and
// warnings, and `text`, the report as `feeder convert` prints it. Names are str as os.fsdecode
// gives them.
void bind_convert_report(py::module_& m) {
  py::class_<BadImages>(m, "BadImages")
      .def_readonly("count", &BadImages::count)
      .def_property_readonly("first", [](const BadImages& b) { return fs_strs(b.first); });
  py::class_<ConvertReport>(m, "ConvertReport")
      .def_property_readonly("set",
                             [](const ConvertReport& r) {
                               switch (r.set) {
                                 case ConvertedSet::kFile: return "file";
                                 case ConvertedSet::kShardedPixels: return "sharded_pixels";
                                 case ConvertedSet::kEncodedImages: break;
                               }
                               return "encoded_images";
                             })
      .def_property_readonly("input_name", [](const ConvertReport& r) { return fs_str(r.input_name); })
      .def_property_readonly("output_name", [](const ConvertReport& r) { return fs_str(r.output_name); })
      .def_readonly("format", &ConvertReport::format)
      .def_readonly("num_rows", &ConvertReport::num_rows)
      .def_property_readonly("shape",
                             [](const ConvertReport& r) {
                               if (r.set == ConvertedSet::kEncodedImages) return py::object(py::none());
                               return py::object(py::make_tuple(r.shape.channels, r.shape.height, r.shape.width));
                             })
      .def_property_readonly("shards",
                             [](const ConvertReport& r) {
                               py::list shards;
                               for (const ConvertedShard& shard : r.shards) {
                                 py::dict entry;
                                 entry["name"] = fs_str(shard.name);
                                 entry["num_rows"] = shard.num_rows;
                                 entry["num_row_groups"] = shard.num_row_groups;
                                 entry["size_bytes"] = shard.size_bytes;
                                 shards.append(entry);
                               }
                               return shards;
                             })
      .def_property_readonly("num_row_groups", &ConvertReport::num_row_groups)
      .def_readonly("input_bytes", &ConvertReport::input_bytes)
      .def_readonly("output_bytes", &ConvertReport::output_bytes)
      .def_readonly("read_seconds", &ConvertReport::read_seconds)
      .def_readonly("write_seconds", &ConvertReport::write_seconds)
      .def_readonly("shuffle_seed", &ConvertReport::shuffle_seed)
      .def_property_readonly("label_runs",
                             [](const ConvertReport& r) {
                               if (!r.label_runs) return py::object(py::none());
                               return py::object(py::make_tuple(r.label_runs->num_runs, r.label_runs->mean_rows));
                             })
      .def_readonly("labeled", &ConvertReport::labeled)
      .def_readonly("num_classes", &ConvertReport::num_classes)
      .def_property_readonly("class_names", [](const ConvertReport& r) { return fs_strs(r.class_names); })
      .def_property_readonly("skipped", [](const ConvertReport& r) { return fs_str(r.skipped); })
      .def_readonly("order", &ConvertReport::order)
      .def_property_readonly("reencoded",
                             [](const ConvertReport& r) {
                               if (!r.reencoded) return py::object(py::none());
                               py::dict entry;
                               entry["max_side"] = r.reencoded->max_side;
                               entry["jpeg_quality"] = r.reencoded->jpeg_quality;
                               entry["count"] = r.reencoded->count;
                               entry["bytes_before"] = r.reencoded->bytes_before;
                               entry["bytes_after"] = r.reencoded->bytes_after;
                               entry["seconds"] = r.reencoded->seconds;
                               return py::object(entry);
                             })
      .def_readonly("not_images", &ConvertReport::not_images)
      .def_readonly("not_decoded", &ConvertReport::not_decoded)
      .def_property_readonly("warnings", [](const ConvertReport& r) { return fs_strs(r.warnings); })
      .def_property_readonly("text", [](const ConvertReport& r) { return fs_str(format_convert_report(r)); });
}

void bind_commands(py::module_& m) {
  bind_convert_report(m);
  m.def(
      "convert",
      [](const std::string& input, const std::string& output, const std::optional<std::string>& layout,
         const std::optional<std::string>& codec, std::optional<int> level, std::optional<int64_t> row_group_size,
         std::optional<int64_t> shard_rows, std::optional<std::string> shard_size,
         std::optional<std::array<int64_t, 3>> shape, std::optional<int64_t> page_rows,
         std::optional<uint64_t> shuffle_on_write, std::optional<int64_t> max_side, std::optional<int> jpeg_quality,
         const py::object& progress) {
        return convert(convert_options(input, output, layout, codec, level, row_group_size, shard_rows,
                                       std::move(shard_size), shape, page_rows, shuffle_on_write, max_side,
                                       jpeg_quality),
                       progress);
      },
      py::arg("input"), py::arg("output"), py::kw_only(), py::arg("layout") = py::none(), py::arg("codec") = py::none(),
      py::arg("level") = py::none(), py::arg("row_group_size") = py::none(), py::arg("shard_rows") = py::none(),
      py::arg("shard_size") = py::none(), py::arg("shape") = py::none(), py::arg("page_rows") = py::none(),
      py::arg("shuffle_on_write") = py::none(), py::arg("max_side") = py::none(), py::arg("jpeg_quality") = py::none(),
      py::arg("progress") = py::none());
  m.def("inspect", &inspect, py::arg("path"));
}

// Decoding, for benchmarks and tests against PIL.
void bind_decoding(py::module_& m) {
  // For bench/images/images_bench.py: decodes every image of `images` (a list of bytes) to RGB at
  // full size on `num_threads` C++ threads, each taking the next image, with the GIL released; the
  // seconds it took. The rate of a bare decode, with no Python between the images.
  m.def(
      "_decode_all",
      [](const py::list& images, int num_threads) {
        std::vector<std::string> data;
        for (const py::handle& image : images) data.push_back(image.cast<std::string>());
        py::gil_scoped_release release;
        const auto start = std::chrono::steady_clock::now();
        std::atomic<size_t> next{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < num_threads; ++t) {
          threads.emplace_back([&] {
            std::vector<uint8_t> pixels;
            for (size_t i = next++; i < data.size(); i = next++) {
              const auto* bytes = reinterpret_cast<const uint8_t*>(data[i].data());
              decode_image(std::span<const uint8_t>(bytes, data[i].size()), 3, "image", pixels);
            }
          });
        }
        for (std::thread& thread : threads) thread.join();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      },
      py::arg("images"), py::arg("num_threads"));
  m.def(
      "decode_image",
      [](py::buffer data, int channels, const std::string& name) {
        const py::buffer_info info = data.request();
        if (info.itemsize != 1) throw OptionsError("decode_image takes bytes (an encoded image)");
        const std::span<const uint8_t> bytes(static_cast<const uint8_t*>(info.ptr), static_cast<size_t>(info.size));
        std::vector<uint8_t> pixels;
        ImageHeader header;
        {
          py::gil_scoped_release release;
          header = decode_image(bytes, channels, name, pixels);
        }
        py::array_t<uint8_t> result({header.height, header.width, static_cast<int64_t>(channels)});
        std::copy(pixels.begin(), pixels.end(), result.mutable_data());
        return py::make_tuple(result, to_string(header.format), header.channels);
      },
      py::arg("data"), py::arg("channels"), py::arg("name"));
}

// The image pipeline's pieces, for tests against torchvision and PIL.
void bind_crops(py::module_& m) {
  m.def(
      "random_resized_crop",
      [](int64_t width, int64_t height, std::pair<double, double> scale, std::pair<double, double> ratio,
         std::vector<double> draws) {
        RandomResizedCropOptions options{scale.first, scale.second, ratio.first, ratio.second};
        validate(options);
        size_t used = 0;
        const CropBox box = random_resized_crop(width, height, options, [&] {
          if (used == draws.size()) throw OptionsError("random_resized_crop: ran out of draws");
          return draws[used++];
        });
        return py::make_tuple(py::make_tuple(static_cast<int64_t>(box.top), static_cast<int64_t>(box.left),
                                             static_cast<int64_t>(box.height), static_cast<int64_t>(box.width)),
                              used);
      },
      py::arg("width"), py::arg("height"), py::arg("scale"), py::arg("ratio"), py::arg("draws"));
  m.def(
      "center_crop",
      [](int64_t width, int64_t height, int64_t resize, int64_t crop) {
        const CropBox box = center_crop(width, height, resize, crop);
        return py::make_tuple(box.top, box.left, box.height, box.width);
      },
      py::arg("width"), py::arg("height"), py::arg("resize"), py::arg("crop"));
  m.def(
      "decode_resized_crop",
      [](py::buffer data, int channels, std::tuple<double, double, double, double> box, int64_t out_height,
         int64_t out_width, bool dct_scaling, bool resize_first, const std::string& name) {
        const py::buffer_info buffer = data.request();
        const std::span<const uint8_t> bytes(static_cast<const uint8_t*>(buffer.ptr), static_cast<size_t>(buffer.size));
        ResizedCropOptions options;
        options.channels = channels;
        options.out_height = out_height;
        options.out_width = out_width;
        options.dct_scaling = dct_scaling;
        py::array_t<float> result({out_height, out_width, static_cast<int64_t>(channels)});
        float* out = result.mutable_data();
        ResizedCropInfo info;
        {
          py::gil_scoped_release release;
          ImageScratch scratch;
          const CropBox given{std::get<0>(box), std::get<1>(box), std::get<2>(box), std::get<3>(box), resize_first};
          info = decode_resized_crop(bytes, name, [&](int64_t, int64_t) { return given; }, options, scratch, out);
        }
        py::dict details;
        details["scale_eighths"] = info.scale_eighths;
        details["decoded_pixels"] = info.decoded_pixels;
        details["width"] = info.header.width;
        details["height"] = info.header.height;
        return py::make_tuple(result, details);
      },
      py::arg("data"), py::arg("channels"), py::arg("box"), py::arg("out_height"), py::arg("out_width"),
      py::arg("dct_scaling"), py::arg("resize_first"), py::arg("name"));
}

// Sizes, the memory budget and the process settings feeder recommends; remote data's settings.
void bind_settings(py::module_& m) {
  m.def(
      "set_storage_options",
      [](const std::string& endpoint, const std::string& region, const std::string& profile, bool anonymous,
         const std::string& addressing, const std::string& ca_bundle, int max_connections, int max_retries,
         double retry_seconds, const std::string& cache_dir, int64_t cache_limit, int64_t max_listed_keys,
         double stall_seconds, double min_bytes_per_second) {
        StorageOptions options;
        options.max_listed_keys = max_listed_keys;
        options.stall_timeout_seconds = stall_seconds;
        options.min_bytes_per_second = min_bytes_per_second;
        options.cache_dir = cache_dir;
        options.cache_limit = cache_limit;
        options.endpoint = endpoint;
        options.region = region;
        options.profile = profile;
        options.anonymous = anonymous;
        options.addressing = parse_addressing_style(addressing);
        options.ca_bundle = ca_bundle;
        options.max_connections = max_connections;
        options.max_retries = max_retries;
        options.retry_seconds = retry_seconds;
        set_storage_options(options);
      },
      py::arg("endpoint"), py::arg("region"), py::arg("profile"), py::arg("anonymous"), py::arg("addressing"),
      py::arg("ca_bundle"), py::arg("max_connections"), py::arg("max_retries"), py::arg("retry_seconds"), py::arg("cache_dir"), py::arg("cache_limit"),
      py::arg("max_listed_keys"), py::arg("stall_seconds"), py::arg("min_bytes_per_second"));
  m.def("default_storage_options", [] {
    const StorageOptions defaults;
    py::dict out;
    out["max_connections"] = defaults.max_connections;
    out["max_retries"] = defaults.max_retries;
    out["retry_seconds"] = defaults.retry_seconds;
    out["max_listed_keys"] = defaults.max_listed_keys;
    out["stall_seconds"] = defaults.stall_timeout_seconds;
    out["min_bytes_per_second"] = defaults.min_bytes_per_second;
    return out;
  });
  m.def("storage_stats", [] {
    const StorageStats stats = storage_stats();
    py::dict out;
    out["requests"] = stats.requests;
    out["bytes"] = stats.bytes;
    out["retries"] = stats.retries;
    out["failures"] = stats.failures;
    out["cache_bytes"] = stats.cache_bytes;
    return out;
  });
  m.def(
      "parse_byte_size", [](const std::string& text, const std::string& what) { return parse_byte_size(text, what); },
      py::arg("text"), py::arg("what") = "memory_budget");
  m.def("default_memory_budget", &default_memory_budget);
  m.def("recommended_process_settings", [](int threads) {
    const ProcessSettings settings = recommended_process_settings(threads);
    return py::make_tuple(settings.omp_num_threads ? py::object(py::int_(*settings.omp_num_threads)) : py::object(py::none()),
                          settings.malloc_mmap_threshold_bytes, settings.malloc_trim_threshold_bytes);
  });
}

}  // namespace
}  // namespace feeder::python

PYBIND11_MODULE(_feeder, m) {
  using namespace feeder;
  using namespace feeder::python;
  m.doc() = "feeder's C++ loader, readers and converters; use the `feeder` package, not this module";
  m.attr("__version__") = kVersion;

  // Bad files are OSErrors (a DataError says which file and where); bad options ValueErrors (by
  // pybind11's default for std::invalid_argument, which OptionsError is); filesystem errors OSErrors.
  static py::exception<DataError> data_error(m, "DataError", PyExc_OSError);
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const DataError& e) {
      PyErr_SetObject(data_error.ptr(), fs_str(e.what()).ptr());
    } catch (const std::invalid_argument& e) {  // OptionsError: pybind11 would decode it as UTF-8
      PyErr_SetObject(PyExc_ValueError, fs_str(e.what()).ptr());
    } catch (const std::system_error& e) {
      PyErr_SetObject(PyExc_OSError, fs_str(e.what()).ptr());
    }
  });

  bind_datasets(m);
  bind_loader(m);
  bind_commands(m);
  bind_decoding(m);
  bind_crops(m);
  bind_settings(m);
}
