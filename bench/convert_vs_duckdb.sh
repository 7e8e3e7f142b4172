#!/usr/bin/env bash
# FashionMNIST train as CSV -> Parquet with feeder and with DuckDB, then loading the Parquet file:
# feeder into its ImageStore vs DuckDB into a table. Same machine, same run, medians of RUNS runs.
#   bench/convert_vs_duckdb.sh [FEEDER_BINARY]      (default build/feeder; RUNS=3, DATA=dataset dir)
# Before timing, DuckDB checks that feeder's Parquet file holds exactly the CSV's rows.
# DuckDB is timed inside its process (no Node.js start-up, no instance creation), feeder as a whole
# process, so start-up costs count against feeder only. Prints a Markdown table for bench/RESULTS.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
feeder="${1:-$root/build/feeder}"
data="${DATA:-/usr/share/datasets/fashion-mnist}"
runs="${RUNS:-3}"
compat="$root/tests/compat"

[ -x "$feeder" ] || { echo "convert_vs_duckdb: no feeder binary at $feeder (build it: ./setup.sh)" >&2; exit 1; }
[ -f "$data/train-images-idx3-ubyte.gz" ] || { echo "convert_vs_duckdb: no FashionMNIST in $data (apt-get install dataset-fashion-mnist)" >&2; exit 1; }
if [ ! -f "$compat/node_modules/.package-lock.json" ] || [ "$compat/package-lock.json" -nt "$compat/node_modules/.package-lock.json" ]; then
  (cd "$compat" && npm install --no-audit --no-fund --loglevel=error)
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/feeder-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# DuckDB side, run from tests/compat so that its node_modules resolve. Each call is a fresh process
# and a fresh in-memory database, like each feeder run.
duckdb() {
  (cd "$compat" && node --input-type=module -e '
    import { DuckDBInstance } from "@duckdb/node-api";
    const [mode, a, b] = process.argv.slice(1);
    const connection = await (await DuckDBInstance.create(":memory:")).connect();
    const q = (text) => `'"'"'${text}'"'"'`;
    const timed = async (sql) => { const start = process.hrtime.bigint(); await connection.run(sql); return Number(process.hrtime.bigint() - start) / 1e9; };
    if (mode === "check") {
      // Both directions of EXCEPT ALL empty and 60000 rows: the Parquet file is the CSV, value for value.
      const csv = `SELECT * FROM read_csv(${q(a)}, header = true)`, pq = `SELECT * FROM read_parquet(${q(b)})`;
      const count = async (sql) => Number((await connection.runAndReadAll(sql)).getRows()[0][0]);
      const rows = await count(`SELECT count(*) FROM read_parquet(${q(b)})`);
      const missing = await count(`SELECT count(*) FROM (${csv} EXCEPT ALL ${pq})`);
      const extra = await count(`SELECT count(*) FROM (${pq} EXCEPT ALL ${csv})`);
      if (rows !== 60000 || missing !== 0 || extra !== 0) { console.error(`check failed: ${rows} rows, ${missing} missing, ${extra} extra`); process.exit(1); }
      console.log("ok");
    } else if (mode === "convert") {
      console.log(await timed(`COPY (SELECT * FROM read_csv(${q(a)})) TO ${q(b)} (FORMAT parquet)`));
    } else if (mode === "load") {
      console.log(await timed(`CREATE TABLE train AS SELECT * FROM read_parquet(${q(a)})`));
    }
  ' "$@")
}

now() { date +%s.%N; }
# Field of the data row of feeder convert's report table (1-based, | separated).
report_field() { sed -n 3p | awk -F'|' -v field="$(($1 + 1))" '{ gsub(/ /, "", $field); print $field }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mb() { awk -v bytes="$(stat -c %s "$1")" 'BEGIN { printf "%.1f", bytes / 1e6 }'; }

"$feeder" convert "$data/train-images-idx3-ubyte.gz" "$work/train.csv" >/dev/null
"$feeder" convert "$work/train.csv" "$work/train.parquet" >/dev/null
"$feeder" convert "$work/train.csv" "$work/image.parquet" --layout image >/dev/null
duckdb check "$work/train.csv" "$work/train.parquet" >/dev/null

feeder_convert=() duck_convert=() feeder_load=() feeder_load_image=() duck_load=()
for run in $(seq "$runs"); do
  start=$(now)
  "$feeder" convert "$work/train.csv" "$work/train.parquet" >/dev/null
  feeder_convert+=("$(awk -v a="$start" -v b="$(now)" 'BEGIN { print b - a }')")
  duck_convert+=("$(duckdb convert "$work/train.csv" "$work/duckdb.parquet")")
  # "read s" of the report: load_images() of the Parquet file into the store, nothing else.
  feeder_load+=("$("$feeder" convert "$work/train.parquet" "$work/reload.parquet" --codec none | report_field 9)")
  feeder_load_image+=("$("$feeder" convert "$work/image.parquet" "$work/reload.parquet" --codec none | report_field 9)")
  duck_load+=("$(duckdb load "$work/train.parquet")")
done

fc=$(median "${feeder_convert[@]}") dc=$(median "${duck_convert[@]}")
fl=$(median "${feeder_load[@]}") fli=$(median "${feeder_load_image[@]}") dl=$(median "${duck_load[@]}")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / b }'; }
echo "FashionMNIST train (60,000 x 784), $(nproc) cores, median of $runs runs; train.csv $(mb "$work/train.csv") MB"
echo
echo "| step | feeder | DuckDB $(cd "$compat" && node -p 'require("./node_modules/@duckdb/node-api/package.json").version') | DuckDB / feeder |"
echo "|---|---|---|---|"
echo "| convert train.csv -> train.parquet (s) | $fc | $dc | $(ratio "$dc" "$fc") |"
echo "| train.parquet size, default settings (MB) | $(mb "$work/train.parquet") (columns, ZSTD) | $(mb "$work/duckdb.parquet") (Snappy) | $(ratio "$(stat -c %s "$work/duckdb.parquet")" "$(stat -c %s "$work/train.parquet")") |"
echo "| load feeder's train.parquet (s): feeder store vs DuckDB table | $fl | $dl | $(ratio "$dl" "$fl") |"
echo "| feeder --layout image: size (MB) / load (s) | $(mb "$work/image.parquet") / $fli | | |"
echo
each() { printf '%.2f ' "$@" | sed 's/ $//'; }
echo "runs (s): feeder convert $(each "${feeder_convert[@]}"); DuckDB convert $(each "${duck_convert[@]}");" \
  "feeder load $(each "${feeder_load[@]}"); feeder load image $(each "${feeder_load_image[@]}"); DuckDB load $(each "${duck_load[@]}")"
