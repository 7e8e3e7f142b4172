#!/usr/bin/env bash
# Builds every libFuzzer target (fuzz/*_fuzz.cpp) with clang and runs each for a bounded time,
# starting from its seed corpus fuzz/corpus/<target>/ when there is one. Targets are found by
# globbing the built executables, so a new fuzz/*_fuzz.cpp is picked up without editing this file.
# Exits non-zero if the build fails or any target crashes, leaks or hangs; the input that did it is
# kept in <build dir>/fuzz-artifacts/.
#
# Environment: FUZZ_SECONDS (per target, default 20: CI's budget; FUZZ_SECONDS=600 or more for a
# real search), FUZZ_JOBS (targets run side by side, default the number of CPUs; each gets its
# FUZZ_SECONDS), FUZZ_BUILD_DIR (default build-fuzz), FUZZ_BUILD_JOBS (default 2).
# A FUZZ_BUILD_DIR configured with -DFEEDER_FUZZ=ON already (setup.sh --test's ASan+UBSan build,
# which carries the fuzzing instrumentation so the core is compiled once for both) is built as it
# is; any other is configured with the fuzz targets and the core only.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-20}
jobs=${FUZZ_BUILD_JOBS:-2}
run_jobs=${FUZZ_JOBS:-$(nproc)}

if ! grep -qx 'FEEDER_FUZZ:BOOL=ON' "$build_dir/CMakeCache.txt" 2>/dev/null; then
  CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DFEEDER_FUZZ=ON -DFEEDER_WITH_TORCH=OFF -DFEEDER_TESTS=OFF \
    -DFEEDER_CLI=OFF -DFEEDER_BENCH=OFF -DFEEDER_INSTALL=OFF
fi
cmake --build "$build_dir" -j "$jobs"

mapfile -t targets < <(find "$build_dir/fuzz" -maxdepth 1 -type f -name '*_fuzz' -perm -u+x | sort)
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz: no targets were built in $build_dir/fuzz" >&2
  exit 1
fi

artifacts="$build_dir/fuzz-artifacts"
mkdir -p "$artifacts"
# The working corpus lives outside the tree: what the fuzzer adds to it is not meant to be committed.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One target's run; its exit status lands in $work/<name>.status.
run_target() {
  local target=$1 name corpus status=0
  name=$(basename "$target")
  corpus="$work/$name"
  mkdir -p "$corpus"
  if [ -d "fuzz/corpus/$name" ]; then cp -R "fuzz/corpus/$name/." "$corpus/"; fi
  "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$name-" "$corpus" >"$work/$name.log" 2>&1 || status=$?
  echo "$status" >"$work/$name.status"
}

echo "fuzz: running ${#targets[@]} targets for ${seconds}s each, $run_jobs at a time"
running=0
for target in "${targets[@]}"; do
  if ((running >= run_jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$target" &
  running=$((running + 1))
done
wait

# The reports in the targets' order, whichever finished first.
failed=()
for target in "${targets[@]}"; do
  name=$(basename "$target")
  if [ "$(cat "$work/$name.status" 2>/dev/null)" = 0 ]; then
    echo "fuzz: $name: $(grep -E '^stat::number_of_executed_units' "$work/$name.log" || echo 'no stats')"
  else
    tail -n 60 "$work/$name.log"
    echo "fuzz: $name FAILED; the input is in $artifacts/" >&2
    failed+=("$name")
  fi
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran clean"
