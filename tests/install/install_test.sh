#!/usr/bin/env bash
# Uses feeder from another project, three ways, and runs what it built:
#   find-package      cmake --install into a fresh prefix, then find_package(feeder) links feeder::core
#                     (and feeder::torch when WITH_TORCH is ON)
#   add-subdirectory  feeder's source tree added with add_subdirectory: only its libraries are built
#   pkg-config        cmake --install, then a core-only program compiled with `pkg-config --cflags --libs feeder`
# usage: install_test.sh MODE BUILD_DIR SOURCE_DIR WORK_DIR CXX WITH_TORCH [FLAGS]
# FLAGS go to the consumer's compile and link lines (the sanitizers, for a sanitized build). WORK_DIR
# is emptied first and kept afterwards; a fixed path lets ccache reuse the consumer's objects.
set -euo pipefail
mode=$1 build_dir=$2 source_dir=$3 work=$4 cxx=$5 with_torch=$6 flags=${7:-}

fail() {
  echo "install_test $mode: $*" >&2
  exit 1
}

rm -rf "$work"
mkdir -p "$work"
consumer_src=$source_dir/tests/install/consumer
expected="100 samples, label sum 450"  # 7 batches of at most 16 from the 100-image set core_consumer writes

run_core_consumer() {
  local out
  out=$("$1" "$work/data") || fail "$1 failed: $out"
  echo "$out"
  [[ "$out" == *"7 batches, $expected"* ]] || fail "$1 printed '$out', expected '7 batches, $expected'"
}

install_feeder() {
  cmake --install "$build_dir" --prefix "$work/prefix" >"$work/install.log" ||
    fail "cmake --install failed: $(cat "$work/install.log")"
  # Installed headers include only each other and system headers, never src/.
  local stray
  stray=$(grep -rhn '#include "' "$work/prefix/include" | grep -v '#include "feeder/' || true)
  [ -z "$stray" ] || fail "installed headers include files outside include/feeder: $stray"
  local header
  for header in $(cd "$work/prefix/include" && grep -rho '#include "feeder/[^"]*"' . | sed 's/#include "//; s/"$//' | sort -u); do
    [ -f "$work/prefix/include/$header" ] || fail "installed headers include $header, which is not installed"
  done
}

configure_consumer() {
  cmake -S "$consumer_src" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" "$@" >"$work/configure.log" 2>&1 ||
    fail "configuring the consumer failed: $(tail -n 30 "$work/configure.log")"
  cmake --build "$work/consumer" -j 2 >"$work/build.log" 2>&1 ||
    fail "building the consumer failed: $(tail -n 40 "$work/build.log")"
}

case "$mode" in
  find-package)
    install_feeder
    for file in lib/cmake/feeder/feederConfig.cmake lib/cmake/feeder/feederConfigVersion.cmake \
                lib/cmake/feeder/feederTargets.cmake lib/pkgconfig/feeder.pc lib/libfeeder_core.a; do
      [ -f "$work/prefix/$file" ] || fail "cmake --install did not install $file"
    done
    # The package carries version.h's version: found when asked for exactly it, refused for another.
    version=$(sed -n 's/.*kVersion = "\(.*\)".*/\1/p' "$source_dir/include/feeder/version.h")
    mkdir -p "$work/version_check"
    cat >"$work/version_check/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.21)
project(version_check LANGUAGES CXX)
find_package(feeder ${WANTED} ${MATCH} REQUIRED)
message(STATUS "found feeder ${feeder_VERSION}")
CMAKE
    out=$(cmake -S "$work/version_check" -B "$work/version_check/exact" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DWANTED="$version" -DMATCH=EXACT 2>&1) || fail "find_package(feeder $version EXACT) failed: $out"
    grep -q "found feeder $version" <<<"$out" || fail "find_package(feeder $version EXACT) found another version: $out"
    if cmake -S "$work/version_check" -B "$work/version_check/newer" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DWANTED=99.0 -DMATCH= >"$work/version_check/newer.log" 2>&1; then
      fail "find_package(feeder 99.0) accepted version $version"
    fi
    configure_consumer -DCMAKE_PREFIX_PATH="$work/prefix" -DCONSUMER_WITH_TORCH="$with_torch"
    # The consumer took feeder from the prefix, not from the build tree.
    grep -q "feeder_DIR:PATH=$work/prefix/lib/cmake/feeder" "$work/consumer/CMakeCache.txt" ||
      fail "find_package(feeder) did not use the installed package: $(grep feeder_DIR "$work/consumer/CMakeCache.txt")"
    run_core_consumer "$work/consumer/core_consumer"
    if [ "$with_torch" = ON ]; then
      out=$("$work/consumer/torch_consumer") || fail "torch_consumer failed: $out"
      echo "$out"
      [ "$out" = "torch consumer: 3 batches of 32" ] || fail "torch_consumer printed '$out'"
    fi
    ;;
  add-subdirectory)
    # Core only (no LibTorch) keeps this quick; the torch side is covered by find-package. FLAGS
    # are for linking libraries built elsewhere: here everything is built afresh, without them.
    flags=""
    configure_consumer -DFEEDER_SOURCE_DIR="$source_dir" -DFEEDER_WITH_TORCH=OFF
    run_core_consumer "$work/consumer/core_consumer"
    targets=$(ninja -C "$work/consumer" -t targets all)
    for target in feeder feeder_commands feeder_core_tests feeder_torch_tests feeder_bench_tests \
                  feeder-bench feeder_load_bench feeder-stream-bench feeder-dist-bench; do
      ! grep -q "^$target:" <<<"$targets" || fail "add_subdirectory defined the target $target; only the libraries belong"
    done
    # CMake's own compiler checks live under CMakeFiles/.
    executables=$(find "$work/consumer" -path '*/CMakeFiles' -prune -o -type f -perm -u+x -print |
      while read -r file; do head -c 4 "$file" | grep -q ELF && echo "$file"; done | grep -v '/core_consumer$' || true)
    [ -z "$executables" ] || fail "add_subdirectory built executables besides the consumer's: $executables"
    [ -f "$work/consumer/feeder/src/libfeeder_core.a" ] || fail "libfeeder_core.a was not built"
    ;;
  pkg-config)
    install_feeder
    export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
    version=$(sed -n 's/.*kVersion = "\(.*\)".*/\1/p' "$source_dir/include/feeder/version.h")
    [ "$(pkg-config --modversion feeder)" = "$version" ] ||
      fail "feeder.pc says version $(pkg-config --modversion feeder), version.h says $version"
    # shellcheck disable=SC2046,SC2086  # pkg-config's output is a list of flags
    "$cxx" -std=c++20 -O1 $flags "$consumer_src/core_consumer.cpp" -o "$work/core_consumer" \
      $(pkg-config --cflags --libs feeder) >"$work/build.log" 2>&1 ||
      fail "compiling with pkg-config's flags failed: $(tail -n 40 "$work/build.log")"
    run_core_consumer "$work/core_consumer"
    ;;
  *) fail "unknown mode (find-package, add-subdirectory or pkg-config)" ;;
esac
echo "install_test $mode: ok"
