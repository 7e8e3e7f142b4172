#!/usr/bin/env bash
# feeder train on folders of PNGs (torchvision's ImageFolder layout) made from FashionMNIST with PIL:
# it reads them, says so, and learns (tests/python/test_image_folder.py checks the pixels are the
# IDX file's; bench/RESULTS.md compares the accuracy of whole runs).
set -euo pipefail
feeder=$1
data=/usr/share/datasets/fashion-mnist
work=$(mktemp -d "${TMPDIR:-/tmp}/feeder-image-folder-cli.XXXXXX")
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$data" "$work" <<'PY'
import gzip, os, sys
import numpy as np
from PIL import Image
data, work = sys.argv[1:]
for split, prefix, count in (("train", "train", 3000), ("test", "t10k", 500)):
    with gzip.open(f"{data}/{prefix}-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)[:count]
    with gzip.open(f"{data}/{prefix}-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:count]
    for i, (image, label) in enumerate(zip(images, labels)):
        os.makedirs(f"{work}/{split}/class{label}", exist_ok=True)
        Image.fromarray(image, "L").save(f"{work}/{split}/class{label}/{i:05d}.png")
open(f"{work}/train/class0/notes.txt", "w").write("not an image")
PY

output=$(timeout 300 "$feeder" train --train "$work/train" --test "$work/test" --epochs 2 --batch-size 64 2>&1)
echo "$output"
grep -q "^Train data: 3000 samples from $work/train: in memory (10 classes, .* of encoded images, decoded as batches need them; 1 other files skipped)" <<<"$output" ||
  { echo "FAIL: the training folder was not described"; exit 1; }
accuracy=$(awk '/^Test Accuracy:/ {print $3}' <<<"$output")
awk -v a="$accuracy" 'BEGIN { exit !(a > 0.6) }' || { echo "FAIL: test accuracy $accuracy after 2 epochs on 3000 images"; exit 1; }

# A bad image fails the run with its name.
victim=$(ls "$work/train/class3" | head -1)
head -c 60 "$work/train/class3/$victim" >"$work/cut.png"
mv "$work/cut.png" "$work/train/class3/$victim"
if output=$(timeout 300 "$feeder" train --train "$work/train" --test "$work/test" --epochs 1 2>&1); then
  echo "FAIL: a truncated PNG trained"; exit 1
fi
grep -qF "class3/$victim: bad PNG" <<<"$output" || { echo "FAIL: the bad PNG was not named:"; echo "$output" | tail -3; exit 1; }
# Or is left out, and counted, with --skip-bad-images.
output=$(timeout 300 "$feeder" train --train "$work/train" --test "$work/test" --epochs 1 --skip-bad-images 2>&1) ||
  { echo "FAIL: --skip-bad-images did not train:"; echo "$output" | tail -3; exit 1; }
grep -qF "skipped 1 bad training images, e.g. $work/train/class3/$victim: bad PNG" <<<"$output" ||
  { echo "FAIL: the skipped image was not reported:"; echo "$output" | tail -5; exit 1; }
# A test set whose every image is left out has no accuracy, and says why (not "no labels").
mkdir -p "$work/bad_test/class0"
for i in 1 2 3; do head -c 60 "$work/train/class3/$victim" >"$work/bad_test/class0/$i.png"; done
output=$(timeout 300 "$feeder" train --train "$work/train" --test "$work/bad_test" --epochs 1 --skip-bad-images 2>&1) ||
  { echo "FAIL: a test set of bad images did not train with --skip-bad-images:"; echo "$output" | tail -3; exit 1; }
grep -qF "Test Accuracy: n/a (no test image was read: every one was left out as bad)" <<<"$output" ||
  { echo "FAIL: an empty evaluation was not said to be one:"; echo "$output" | tail -3; exit 1; }

# More classes than the article's 10: the model gets an output for each (LibTorch's loss used to
# fail with "Target 13 is out of bounds" and a stack trace).
/usr/bin/python3 - "$work/many" <<'PY'
import os, sys
import numpy as np
from PIL import Image
root = sys.argv[1]
rng = np.random.default_rng(0)
for c in range(14):
    os.makedirs(f"{root}/c{c:02d}")
    for i in range(8):
        Image.fromarray(rng.integers(0, 256, (20, 24), dtype=np.uint8), "L").save(f"{root}/c{c:02d}/{i}.png")
PY
output=$(timeout 300 "$feeder" train --train "$work/many" --test "$work/many" --epochs 1 --batch-size 16 2>&1) ||
  { echo "FAIL: a folder of 14 classes did not train:"; echo "$output" | tail -5; exit 1; }
grep -q "^Training SimpleCNN (14 classes, " <<<"$output" || { echo "FAIL: the model was not given 14 outputs"; exit 1; }
# --num-classes sets them; too few is an error naming the batch and the label, not a stack trace.
output=$(timeout 300 "$feeder" train --train "$work/many" --test "$work/many" --epochs 1 --batch-size 16 --num-classes 20 2>&1) ||
  { echo "FAIL: --num-classes 20 did not train:"; echo "$output" | tail -5; exit 1; }
grep -q "^Training SimpleCNN (20 classes, " <<<"$output" || { echo "FAIL: --num-classes 20 was not used"; exit 1; }
if output=$(timeout 300 "$feeder" train --train "$work/many" --test "$work/many" --epochs 1 --batch-size 16 --num-classes 12 --workers 0 2>&1); then
  echo "FAIL: labels 12 and 13 trained a model of 12 outputs"; exit 1
fi
grep -qE "^feeder train: training batch [0-9]+ of epoch 1: label 1[23] is outside the model's 12 classes \(0\.\.11\)$" <<<"$output" ||
  { echo "FAIL: the label outside the model was not named:"; echo "$output" | tail -3; exit 1; }

# feeder bench images on a folder of mixed formats (what image folders hold) measures it: its bare
# decode ended in std::terminate on the first PNG, assuming JPEGs. A bad image is named.
/usr/bin/python3 - "$work/mixed" <<'PY'
import os, sys
import numpy as np
from PIL import Image
root = sys.argv[1]
rng = np.random.default_rng(2)
for c in range(2):
    os.makedirs(f"{root}/c{c}", exist_ok=True)
    for i, (kind, ext) in enumerate([("JPEG", "jpg"), ("PNG", "png"), ("WEBP", "webp")] * 4):
        Image.fromarray(rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)).save(f"{root}/c{c}/{i:02d}.{ext}", kind)
PY
output=$(timeout 300 "$feeder" bench images --data "$work/mixed" --repeats 1 --batch-size 8 --size 32 2>&1) ||
  { echo "FAIL: bench images on JPEG, PNG and WebP files failed:"; echo "$output" | tail -5; exit 1; }
grep -q "^| bare full decode (each format's library" <<<"$output" || { echo "FAIL: no bare decode row:"; echo "$output"; exit 1; }
grep -q "^| training: feeder::Loader" <<<"$output" || { echo "FAIL: no training row:"; echo "$output"; exit 1; }
head -c 200 "$work/mixed/c1/00.jpg" >"$work/mixed/c1/99.jpg"
if output=$(timeout 300 "$feeder" bench images --data "$work/mixed" --repeats 1 --batch-size 8 --size 32 2>&1); then
  echo "FAIL: bench images measured a folder with a truncated JPEG"; exit 1
fi
grep -q "^feeder bench images: $work/mixed/c1/99.jpg: bad JPEG" <<<"$output" ||
  { echo "FAIL: the bad image was not named:"; echo "$output" | tail -3; exit 1; }
echo "ok: image folders train, a bad image is named, or skipped and counted, 14 classes get 14 outputs, and bench images measures mixed formats"
