// LoaderState: its fields listed once (zip_state_fields), its JSON both ways, and what restore()
// reports as different. Pure functions; any thread.

#include "data/detail/loader_state.h"

#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "feeder/error.h"

namespace feeder {
namespace {

// Every field of a LoaderState, once: its JSON key, the name restore() gives it (nullptr for the
// position, epoch and batches_delivered, which say where the state is, not what it is of), and the
// member of `a` and of `b`. to_json, from_json and state_differences all walk this list, in the
// order restore() reports differences.
template <class A, class B, class Visit>
void zip_state_fields(A& a, B& b, Visit&& visit) {
  visit("num_samples", "samples", a.num_samples, b.num_samples);
  visit("dataset_fingerprint", "fingerprint", a.dataset_fingerprint, b.dataset_fingerprint);
  visit("world_size", "world_size", a.world_size, b.world_size);
  visit("rank", "rank", a.rank, b.rank);
  visit("batch_size", "batch_size", a.batch_size, b.batch_size);
  visit("seed", "seed", a.seed, b.seed);
  visit("shuffle", "shuffle", a.shuffle, b.shuffle);
  visit("drop_last", "drop_last", a.drop_last, b.drop_last);
  visit("shuffle_window", "shuffle_window", a.shuffle_window, b.shuffle_window);
  visit("block_layout", "block layout", a.block_layout, b.block_layout);
  visit("epoch", nullptr, a.epoch, b.epoch);
  visit("batches_delivered", nullptr, a.batches_delivered, b.batches_delivered);
}

}  // namespace

std::string LoaderState::to_json() const {
  nlohmann::json json = {{"format", "feeder.loader_state.v2"}};
  zip_state_fields(*this, *this, [&](const char* key, const char*, const auto& value, const auto&) { json[key] = value; });
  return json.dump();
}

LoaderState LoaderState::from_json(std::string_view text) {
  try {
    const nlohmann::json json = nlohmann::json::parse(text);
    const std::string format = json.value("format", "");
    if (format != "feeder.loader_state.v2" && format != "feeder.loader_state.v1")
      throw OptionsError("not a feeder loader state (format is not feeder.loader_state.v2 or v1)");
    LoaderState state;
    zip_state_fields(state, state, [&](const char* key, const char*, auto& value, auto&) {
      if (format == "feeder.loader_state.v1" && std::string_view(key) == "block_layout") return;  // not in v1
      using Field = std::remove_reference_t<decltype(value)>;
      const nlohmann::json& field = json.at(key);
      // nlohmann's get<>() converts any number to any other, and a float out of an integer's range
      // is undefined behaviour: each field must have exactly its own kind of value.
      bool fits = false;
      if constexpr (std::is_same_v<Field, bool>) {
        fits = field.is_boolean();
      } else if constexpr (std::is_same_v<Field, uint64_t>) {
        fits = field.is_number_unsigned();
      } else {
        fits = field.is_number_integer() &&
               (!field.is_number_unsigned() || field.get<uint64_t>() <= uint64_t{std::numeric_limits<Field>::max()});
      }
      if (!fits) {
        const std::string text = field.dump();
        throw OptionsError(std::string("malformed loader state: \"") + key + "\" is " +
                           (text.size() > 40 ? text.substr(0, 40) + "..." : text));
      }
      value = field.get<Field>();
    });
    return state;
  } catch (const nlohmann::json::exception& e) {
    throw OptionsError(std::string("malformed loader state: ") + e.what());
  }
}

namespace detail {

std::string state_differences(const LoaderState& saved, const LoaderState& here, const SampleSource& source,
                              bool blocks_irrelevant, bool window_given) {
  std::string differs;
  bool other_dataset = false;  // then its blocks differ too, needless to say
  zip_state_fields(saved, here, [&](const char*, const char* name, const auto& was, const auto& mine) {
    if (name == nullptr || was == mine) return;
    if (std::string_view(name) == "fingerprint") other_dataset = true;
    if (std::string_view(name) == "block layout" && (blocks_irrelevant || other_dataset)) return;
    differs += differs.empty() ? "" : ", ";
    if (std::string_view(name) == "fingerprint") {
      const std::string note = source.other_dataset_note();
      differs += "the dataset's fingerprint differs (another dataset" + (note.empty() ? "" : "; " + note) + ")";
    } else if (std::string_view(name) == "block layout") {
      differs += was == 0 ? "the state is of an earlier feeder, whose streamed order shuffled whole row groups "
                            "(format v1): it cannot continue this epoch exactly; start the epoch again"
                          : "the pieces the set is shuffled in differ (another piece size or row groups)";
    } else {
      differs += std::string(name) + " " + std::to_string(was) + " in the state, " + std::to_string(mine) + " here";
      if (std::string_view(name) == "shuffle_window" && window_given)
        differs += " (give shuffle_window " + std::to_string(was) + " to continue it)";
    }
  });
  return differs;
}

}  // namespace detail
}  // namespace feeder
