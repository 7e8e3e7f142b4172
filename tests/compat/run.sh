#!/usr/bin/env bash
# Parquet cross-checks against two independent implementations, installed from npm with the
# lockfile beside this script: DuckDB (@duckdb/node-api) and arrow-rs (parquet-wasm).
#   1. feeder writes every layout x codec from a synthetic CSV (and IDX); both read the files back
#      and must see the same values, types, statistics and image shape.
#   2. both write MNIST-shaped files their own way (defaults, v2 pages, no dictionary, zstd/gzip,
#      small row groups, uint8 and int64 pixels); feeder converts each to CSV, which must hold the
#      same values.
#   3. DuckDB writes a table with a weight and other fields; feeder's Python loader reads them.
# Usage: tests/compat/run.sh [FEEDER_BINARY]   (default: build/feeder)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
feeder="${1:-${FEEDER:-$root/build/feeder}}"

if [ ! -x "$feeder" ]; then
  echo "compat: FAIL: no feeder binary at $feeder (build it first: ./setup.sh)"
  exit 1
fi

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "compat: FAIL: $tool is not installed (apt-get install nodejs npm)"; exit 1; }
done

# Install from the lockfile only when node_modules is missing or older than it, so a second run needs
# no network. `npm install` rather than `npm ci`: npm ci rejects a lockfile that records only this
# platform's DuckDB binary package, which is what npm itself writes here.
cd "$here"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund --loglevel=error
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/feeder-compat.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log="$work/checks.log"
: >"$log"

# Runs a check command; its PASS/FAIL lines go to the log. A crash counts as a failure.
record() {
  local name="$1"
  shift
  local output
  if output="$("$@" 2>&1)"; then
    # Here-strings, not `printf | grep -q`: grep -q exits at its first match, and under pipefail the
    # printf still writing a long output then fails the test with SIGPIPE.
    grep -E '^(PASS|FAIL) ' <<<"$output" >>"$log" || true
    # A command that succeeded without saying PASS checked nothing.
    grep -qE '^PASS ' <<<"$output" || echo "FAIL $name: no result" >>"$log"
  else
    if grep -qE '^(PASS|FAIL) ' <<<"$output"; then
      grep -E '^(PASS|FAIL) ' <<<"$output" >>"$log"
    else
      echo "FAIL $name: $(printf '%s' "$output" | tail -n 3 | tr '\n' ' ')" >>"$log"
    fi
  fi
}

# Converts with feeder; the conversion itself is a check (exit 0 and an output file).
convert() {
  local name="$1"
  shift
  local output
  if output="$("$feeder" convert "$@" 2>&1)"; then
    echo "PASS feeder convert $name" >>"$log"
    return 0
  fi
  echo "FAIL feeder convert $name: $(printf '%s' "$output" | tail -n 2 | tr '\n' ' ')" >>"$log"
  return 1
}

node compat.mjs fixture "$work"

# 1. feeder writes, DuckDB and arrow-rs read.
for layout in columns image; do
  for codec in zstd snappy gzip lz4 brotli none; do
    out="$work/feeder_${layout}_${codec}.parquet"
    # Small row groups so every file has several, with a short last one.
    if convert "${layout} ${codec}" "$work/labeled.csv" "$out" --layout "$layout" --codec "$codec" --row-group-size 700; then
      record "read feeder_${layout}_${codec}" node compat.mjs check-feeder "$out" "$work/labeled.csv" "$layout"
    fi
  done
  out="$work/feeder_${layout}_unlabeled.parquet"
  if convert "${layout} unlabeled" "$work/unlabeled.csv" "$out" --layout "$layout"; then
    record "read feeder_${layout}_unlabeled" node compat.mjs check-feeder "$out" "$work/unlabeled.csv" "$layout"
  fi
done
out="$work/feeder_from_idx.parquet"
if convert "from IDX" "$work/sample-images-idx3-ubyte" "$out"; then
  record "read feeder_from_idx" node compat.mjs check-feeder "$out" "$work/labeled.csv" columns
fi

# 2. DuckDB and arrow-rs write, feeder reads.
if foreign="$(node compat.mjs write-foreign "$work" "$work/labeled.csv" 2>"$work/write-foreign.err")"; then
  while IFS= read -r file; do
    [ -n "$file" ] || continue
    csv="${file%.parquet}.csv"
    name="$(basename "$file" .parquet)"
    if convert "$name.parquet to CSV" "$file" "$csv"; then
      record "feeder reads $name" node compat.mjs check-csv "$csv" "$work/labeled.csv"
    fi
  done <<<"$foreign"
else
  echo "FAIL writing DuckDB / arrow-rs files: $(tail -n 3 "$work/write-foreign.err" | tr '\n' ' ')" >>"$log"
fi

# 3. DuckDB writes a table of samples with fields (a FLOAT weight, a DOUBLE, an INTEGER) afresh;
#    feeder's Python loader reads it with fields=, in memory and streamed (tests/python/test_fields.py).
python="$root/build/venv/bin/python3"
if [ -x "$python" ] && node make_field_fixture.mjs "$work" >"$work/fields.out" 2>&1; then
  if FEEDER_FIELD_TABLE="$work/duckdb_fields.parquet" "$python" -m pytest -q -p no:cacheprovider \
      "$root/tests/python/test_fields.py" >"$work/fields.log" 2>&1; then
    echo "PASS feeder's loader reads the fields of a table DuckDB wrote" >>"$log"
  else
    echo "FAIL fields of a table DuckDB wrote: $(tail -n 3 "$work/fields.log" | tr '\n' ' ')" >>"$log"
  fi
else
  echo "FAIL writing the DuckDB table of fields (or no $python): $(tail -n 3 "$work/fields.out" 2>/dev/null | tr '\n' ' ')" >>"$log"
fi

cat "$log"
passed=$(grep -c '^PASS ' "$log" || true)
failed=$(grep -c '^FAIL ' "$log" || true)
echo "compat: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
