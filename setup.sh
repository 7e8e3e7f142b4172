#!/usr/bin/env bash
# Sets feeder up on Debian 12: installs the packages it needs (only those missing), then configures
# and builds it into build/.
#   ./setup.sh          install + release build (build/feeder)
#   ./setup.sh --test   the same, then the whole test suite, then the core tests again under ASan+UBSan
set -euo pipefail
cd "$(dirname "$0")"

run_tests=0
for arg in "$@"; do
  case "$arg" in
    --test) run_tests=1 ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (use --test or nothing)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libopenblas0-openmp     # LibTorch (CPU) and a fast BLAS for it
  dataset-fashion-mnist                # the default data: /usr/share/datasets/fashion-mnist
  zlib1g-dev libzstd-dev libsnappy-dev liblz4-dev libbrotli-dev libthrift-dev thrift-compiler  # codecs, Parquet metadata
  libgtest-dev clang libclang-rt-14-dev  # tests, sanitizers, fuzzing
  python3-torch python3-pandas gnuplot-nox  # references and charts for the benchmarks
)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
# Node.js + npm run the Parquet cross-checks; any install of them will do (some machines carry a
# newer Node.js than Debian's, whose npm package would conflict with it).
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup.sh: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"

if ((run_tests)); then
  ctest --test-dir build --output-on-failure -j "$jobs"
  # The core again under AddressSanitizer + UndefinedBehaviorSanitizer (no LibTorch: it is not built
  # with sanitizers and would only be noise).
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFEEDER_SANITIZE=ON -DFEEDER_WITH_TORCH=OFF
  cmake --build build-asan -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
  # Parsers under libFuzzer for a bounded time each.
  fuzz/run.sh
  # Cross-checks with independent Parquet implementations (DuckDB, arrow-rs) from npm.
  tests/compat/run.sh
  # The article's ablation in quick mode: every row runs and the outputs are well-formed.
  bench/ablation_check.sh
fi
