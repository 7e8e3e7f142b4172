#!/usr/bin/env bash
# Sets feeder up on Debian 12 or 13: installs the packages it needs (only those missing), then configures
# and builds it into build/.
#   ./setup.sh                 install + release build of the feeder executable (build/feeder) and of
#                              the Python package, in the environment build/venv
#   ./setup.sh --test          install + release build of everything, then the whole test suite, the
#                              core again under ASan+UBSan and under TSan, fuzzing, Parquet
#                              cross-checks and the ablation check
#   ./setup.sh --test-release  the same without the sanitizer builds, fuzzing, cross-checks and
#                              ablation check: the release build and every one of its tests (CI runs
#                              this on the second Debian release, where the whole would not fit its time)
# The randomized checks have budgets sized for CI; longer runs: FUZZ_SECONDS=N (each fuzz target,
# default 20) and FEEDER_STRESS_SECONDS=N (each case of the loader's stress test, default 10 to 15).
set -euo pipefail
# Each stage's time, printed as it ends: the log says where the minutes go.
stage_started=$SECONDS
stage_done() {
  echo "setup.sh: $1 took $((SECONDS - stage_started)) s"
  stage_started=$SECONDS
}
cd "$(dirname "$0")"

run_tests=0
run_checks=0  # the sanitizer builds, fuzzing, cross-checks and ablation check
for arg in "$@"; do
  case "$arg" in
    --test) run_tests=1; run_checks=1 ;;
    --test-release) run_tests=1 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (use --test, --test-release or nothing)" >&2; exit 2 ;;
  esac
done

# Prints one line saying what went wrong and what to do, then stops.
fail() {
  echo "setup.sh: $*" >&2
  exit 1
}

command -v apt-get >/dev/null && command -v dpkg-query >/dev/null ||
  fail "this is not a Debian system (no apt-get): install the packages listed in setup.sh with your package manager, then run: cmake -S . -B build -G Ninja && cmake --build build"
# The release decides the names of versioned packages: clang's runtime (sanitizers, libFuzzer) is
# libclang-rt-14-dev on Debian 12 and libclang-rt-19-dev on Debian 13, each the default clang's.
# A server that verifies S3 signatures (moto's, for tests/storage/moto_server.py) is packaged from
# Debian 13 on.
debian_release=$(cut -d. -f1 /etc/debian_version 2>/dev/null || true)
moto_packages=(python3-moto python3-flask python3-flask-cors)
case "$debian_release" in
  12) clang_major=14 moto_packages=() ;;
  13) clang_major=19 ;;
  *)
    clang_major=19
    echo "setup.sh: note: made for Debian 12 (bookworm) and 13 (trixie); this is Debian $(cat /etc/debian_version 2>/dev/null || echo '?'), package names may differ" >&2
    ;;
esac

# Everything the build, the main job and the tests use, named explicitly: nothing may come from what a
# machine happens to have. Keep these lists in step with what the build and the scripts call.
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libopenblas0-openmp     # LibTorch (CPU) and a fast BLAS for it
  libgloo-dev                          # Gloo headers, which c10d's ProcessGroupGloo.hpp includes
  dataset-fashion-mnist                # the default data: /usr/share/datasets/fashion-mnist
  zlib1g-dev libzstd-dev libsnappy-dev liblz4-dev libbrotli-dev  # Parquet codecs
  libthrift-dev thrift-compiler libboost-dev  # Parquet metadata; Thrift's headers include Boost's
  python3-torch python3-pandas gnuplot-nox  # the Python reference and charts of `feeder bench`
  pybind11-dev python3-dev libdlpack-dev  # the Python package (build/venv: `import feeder`)
  libcli11-dev nlohmann-json3-dev      # command lines (CLI11) and JSON files (nlohmann/json)
  libxxhash-dev                        # content hashes of shards and dataset fingerprints (XXH3)
  libjpeg62-turbo-dev libpng-dev libwebp-dev  # image decoding: JPEG (libjpeg-turbo), PNG, WebP
  libarchive-dev                       # WebDataset tar shards
  libcurl4-openssl-dev libssl-dev libpugixml-dev  # s3:// and http(s):// (libcurl; SigV4's HMAC; S3's XML)
  ca-certificates                      # HTTPS: object stores, and npm's registry for the tests' servers
)
# Only the tests use these (the first command stays quick without them).
test_packages=(
  libgtest-dev                         # the C++ tests
  python3-pytest python3-pil python3-torchvision  # the Python tests; PIL and torchvision are the image references
  python3-venv python3-setuptools python3-wheel python3-build  # pip install and a wheel, offline
  nginx-light libnginx-mod-http-lua openssl python3-boto3  # remote data: a web server, a certificate, an S3 client
)
# Only the checks of --test beyond the release tests.
check_packages=(
  clang "libclang-rt-$clang_major-dev"  # sanitizers and fuzzing
)
test_packages+=("${moto_packages[@]}")
if ((run_tests)); then packages+=("${test_packages[@]}"); fi
if ((run_checks)); then packages+=("${check_packages[@]}"); fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
# Node.js + npm run the Parquet cross-checks and the S3 server of the remote-data tests; any install of them will do (some machines carry a
# newer Node.js than Debian's, whose npm package would conflict with it).
if ((run_tests)); then
  command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
fi

if ((${#missing[@]})); then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null ||
      fail "need root to install ${#missing[@]} packages and there is no sudo: run it as root, or have an administrator run: apt-get install ${missing[*]}"
    sudo=(sudo)
    # Ask for the password here, on the terminal: apt's output below goes to a log.
    sudo -v || fail "sudo refused: run ./setup.sh as root or as a user who may use sudo"
  fi
  # apt's own output runs to thousands of lines: it goes to a log, shown when something fails.
  mkdir -p build
  apt_log=build/setup-apt.log
  echo "setup.sh: installing ${missing[*]} and what they depend on (a few minutes; log: $apt_log)"
  # apt-get update only warns when the mirror cannot be reached; the install below then fails.
  if ! "${sudo[@]}" apt-get update -qq >"$apt_log" 2>&1; then
    tail -n 20 "$apt_log" >&2
    fail "apt-get update failed (above): check the network and /etc/apt/sources.list, then run ./setup.sh again"
  fi
  if ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$apt_log" 2>&1; then
    tail -n 20 "$apt_log" >&2
    fail "could not install the packages (above; no network or no reachable Debian mirror?): check the network and /etc/apt/sources.list, then run ./setup.sh again"
  fi
fi

stage_done "checking and installing packages"

jobs=$(nproc)
# The test suite (and GoogleTest) only under --test: the first command builds what the main job runs.
if ((run_tests)); then with_tests=ON; else with_tests=OFF; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFEEDER_TESTS="$with_tests"
cmake --build build -j "$jobs"
stage_done "the release build"

if ((run_tests)); then
  ctest --test-dir build --output-on-failure -j "$jobs"
  stage_done "the release tests (ctest)"
fi
if ((run_checks)); then
  # The sanitizer builds at -O1 with line tables only, as the sanitizers' own documentation advises:
  # reports keep their file and line, and each file compiles in about 20% less time than at -O2 -g.
  sanitizer_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG")
  # The core again under AddressSanitizer + UndefinedBehaviorSanitizer (no LibTorch: it is not built
  # with sanitizers and would only be noise). Built with clang, which compiles under the sanitizers
  # in half GCC's time, and with libFuzzer's instrumentation too (FEEDER_FUZZ): the same objects serve
  # these tests and the fuzz targets below, so the core is compiled once for both. No benchmarks:
  # the release build compiles them and nothing here runs them.
  CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${sanitizer_flags[@]}" \
    -DFEEDER_SANITIZE=ON -DFEEDER_FUZZ=ON \
    -DFEEDER_WITH_TORCH=OFF -DFEEDER_PYTHON=OFF -DFEEDER_BENCH=OFF
  cmake --build build-asan -j "$jobs"
  stage_done "the ASan+UBSan build (and the fuzz targets)"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
  stage_done "the ASan+UBSan tests"
  # The core again under ThreadSanitizer (clang): every test without LibTorch or Python, the loader's
  # stress test among them. halt_on_error: a data race fails its test instead of scrolling by.
  CXX=clang++ cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${sanitizer_flags[@]}" \
    -DFEEDER_TSAN=ON -DFEEDER_PYTHON=OFF \
    -DFEEDER_WITH_TORCH=OFF -DFEEDER_INSTALL=OFF -DFEEDER_BENCH=OFF -DFEEDER_CLI=OFF
  cmake --build build-tsan -j "$jobs"
  stage_done "the TSan build"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --test-dir build-tsan --output-on-failure -j "$jobs"
  stage_done "the TSan tests"
  # Parsers under libFuzzer for a bounded time each (FUZZ_SECONDS, 20 by default), built above.
  FUZZ_BUILD_DIR=build-asan fuzz/run.sh
  stage_done "the fuzz runs"
  # Cross-checks with independent Parquet implementations (DuckDB, arrow-rs) from npm.
  tests/compat/run.sh
  stage_done "the cross-checks with DuckDB and arrow-rs"
  # The article's ablation in quick mode: every row runs and the outputs are well-formed.
  bench/ablation_check.sh
  stage_done "the ablation check"
fi
