#!/usr/bin/env bash
# feeder train refuses absurd options before doing anything: exit status 2 and one line naming the
# option and its bound (--threads 100000 used to crash LibTorch's thread pool with SIGSEGV). And
# what the commands advise: feeder bench --help lists every benchmark; feeder convert says when a
# set is sorted by label.
set -uo pipefail
feeder=$1
failures=0

expect_refused() {
  local expected=$1
  shift
  local output status
  output=$(timeout 60 "$feeder" "$@" 2>&1)
  status=$?
  if [ "$status" -ne 2 ]; then
    echo "FAIL: feeder $* exited $status, expected 2"; failures=$((failures + 1)); return
  fi
  if ! grep -qF -- "$expected" <<<"$output"; then
    echo "FAIL: feeder $* did not say '$expected':"; echo "$output" | head -5; failures=$((failures + 1)); return
  fi
  echo "ok: feeder $* -> $expected"
}

expect_refused "feeder train: --threads: 100000 is absurd; use at most 256" train --threads 100000
expect_refused "feeder train: --threads: needs an integer >= 1, got '0'" train --threads 0
expect_refused "feeder train: num_workers 5000 is absurd; use at most 256" train --workers 5000 --epochs 1
expect_refused "feeder train: batch_size 2000000000 is absurd; use at most 1073741824" train --batch-size 2000000000 --epochs 1
# A piece size is for a Parquet set of pixels (the default data is IDX), and a size.
expect_refused "piece_size applies to Parquet sets of pixels, streamed in pieces of row groups, not to this set (IDX file)" \
  train --piece-size 1MiB --epochs 1
expect_refused "feeder train: --piece-size 'lots': expected a size" train --piece-size lots --epochs 1

# `feeder bench --help` lists every benchmark, not only the two of the executable it used to hand --help to.
output=$("$feeder" bench --help) || { echo "FAIL: feeder bench --help exited $?"; failures=$((failures + 1)); }
for benchmark in loader ablation stream images distributed; do
  grep -qE "^  $benchmark +" <<<"$output" || { echo "FAIL: feeder bench --help does not list $benchmark"; failures=$((failures + 1)); }
done
# An unknown benchmark is named, with the list (it used to get one executable's out-of-date usage).
output=$("$feeder" bench nosuch 2>&1); status=$?
if [ "$status" -ne 2 ] || ! grep -qF "feeder bench: no benchmark 'nosuch'" <<<"$output" || ! grep -qE "^  distributed +" <<<"$output"; then
  echo "FAIL: feeder bench nosuch (exit $status):"; echo "$output" | head -5; failures=$((failures + 1))
fi
# A pixel set sorted by label, converted to shards with the defaults, is said to be sorted, with
# the option that fixes it; shuffled on write it is not.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo "label,p1,p2,p3,p4"
  for label in 0 1 2 3; do
    for i in $(seq 1 50); do echo "$label,$i,$((i * 2 % 256)),$((i * 3 % 256)),$((i * 5 % 256))"; done
  done
} >"$work/sorted.csv"
output=$("$feeder" convert "$work/sorted.csv" "$work/sorted/" 2>&1) || { echo "FAIL: convert exited $?"; failures=$((failures + 1)); }
if grep -qF "rows in 4 runs of one label (50 rows each on average, as in a set sorted by label): give --shuffle-on-write SEED" <<<"$output"; then
  echo "ok: a sorted set is said to be sorted"
else
  echo "FAIL: no advice for a sorted set:"; echo "$output" | tail -5; failures=$((failures + 1))
fi
output=$("$feeder" convert "$work/sorted.csv" "$work/shuffled/" --shuffle-on-write 7 2>&1) || { echo "FAIL: convert exited $?"; failures=$((failures + 1)); }
if grep -qF "runs of one label" <<<"$output" || ! grep -qF "rows shuffled with seed 7" <<<"$output"; then
  echo "FAIL: a set shuffled on write:"; echo "$output" | tail -5; failures=$((failures + 1))
else
  echo "ok: a set shuffled on write is not said to be sorted"
fi
# An IDX images file with no labels file beside it is converted unlabeled, and said to be (it was silent).
mkdir -p "$work/idx"
cp /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz "$work/idx/"
output=$("$feeder" convert "$work/idx/t10k-images-idx3-ubyte.gz" "$work/idx.parquet" 2>&1)
if ! grep -qF "no labels file beside it ($work/idx/t10k-labels-idx1-ubyte[.gz]): the images are written unlabeled" <<<"$output"; then
  echo "FAIL: an IDX file converted without its labels was not said to be unlabeled:"; echo "$output" | head -3
  failures=$((failures + 1))
fi
# Shards written inside the image folder converted would make it unreadable (a class of no images).
mkdir -p "$work/folder/cat"
/usr/bin/python3 -c "from PIL import Image; Image.new('RGB', (8, 8)).save('$work/folder/cat/x.png')"
expect_refused "is inside the image folder $work/folder/: its shards would become a class folder" \
  convert "$work/folder/" "$work/folder/out/"
[ ! -e "$work/folder/out" ] || { echo "FAIL: a refused convert wrote $work/folder/out"; failures=$((failures + 1)); }
# Names from the data are shown escaped: a class folder with an escape sequence and a file with a
# CR cannot rewrite the terminal (they were printed raw by inspect and in errors).
mkdir -p "$work/hostile/$(printf 'c\033[2J')"
/usr/bin/python3 -c "from PIL import Image; Image.new('RGB', (8, 8)).save('$work/hostile/' + 'c\x1b[2J' + '/x.png')"
printf 'not a png' >"$work/hostile/$(printf 'c\033[2J')/$(printf 'y\r').png"
output=$("$feeder" inspect "$work/hostile" 2>&1)
if grep -q $'\033' <<<"$output" || ! grep -qF 'c\x1B[2J' <<<"$output"; then
  echo "FAIL: inspect printed a class name raw:"; echo "$output" | cat -v | head -5; failures=$((failures + 1))
else
  echo "ok: inspect escapes names"
fi
output=$("$feeder" train --train "$work/hostile" --test "$work/hostile" --epochs 1 2>&1)
if grep -q $'\r' <<<"$output" || ! grep -qF 'y\x0D.png' <<<"$output"; then
  echo "FAIL: an error printed a file name raw:"; echo "$output" | cat -v | tail -3; failures=$((failures + 1))
else
  echo "ok: errors escape names"
fi

# Outputs written after training are checked before it: they used to fail after the whole run.
for output_option in "--save $work/no-such-dir/model.pt" "--report-json $work"; do
  # shellcheck disable=SC2086  # the option and its value
  output=$(timeout 60 "$feeder" train --epochs 1 $output_option 2>&1)
  status=$?
  if [ "$status" -eq 0 ] || ! grep -qF ": cannot create output" <<<"$output" || grep -q "^Epoch" <<<"$output"; then
    echo "FAIL: feeder train $output_option (exit $status) was not refused before training:"; echo "$output" | head -5
    failures=$((failures + 1))
  else
    echo "ok: feeder train $output_option -> $(grep -F "cannot create output" <<<"$output")"
  fi
done

exit $((failures > 0))
