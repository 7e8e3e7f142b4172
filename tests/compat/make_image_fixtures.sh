#!/usr/bin/env bash
# Writes the Parquet image fixtures under tests/data/images/, once; they are committed and described
# in tests/data/images/README.md. The images are made by tests/python/image_set.py (PIL), then
# DuckDB writes them as Parquet:
#   hf/train-0000{0,1}-of-00002.parquet  Hugging Face datasets' layout: `image` a struct of `bytes`
#                                        and `path`, `label` BIGINT; one row group each; the
#                                        `huggingface` metadata (label: ClassLabel cat, dog, fox)
#   arrowrs_rg4.parquet                  the same layout written by arrow-rs (parquet-wasm): row groups
#                                        of 4 rows, data pages v2, dictionary on
#   binary.parquet                       a plain BLOB column `png` and an INTEGER `label`, one row
#                                        group, zstd
#   bad/cut.parquet, bad/null.parquet    10 images of label 0; row 5 of cut.parquet is a PNG cut in
#                                        half, row 7 of null.parquet is null
#   arrowrs_pages.parquet                150 images (50 per class), sorted by class, in ONE row group
#                                        of data pages of about 1 KB (arrow-rs; dictionary off): a
#                                        row group larger than a budget, streamed in pieces of pages
# Usage: tests/compat/make_image_fixtures.sh   (needs node, npm and python3-pil)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/feeder-image-fixtures.XXXXXX")"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -c "
import pathlib, sys
sys.path.insert(0, '$root/tests/python')
import image_set
image_set.write_folder(pathlib.Path('$work/folder'))
image_set.write_folder(pathlib.Path('$work/folder50'), per_class=50)
bad = pathlib.Path('$work/bad')
bad.mkdir()
for i in range(10):
    data = image_set.png_bytes(0, i)
    (bad / f'{i:02d}.png').write_bytes(data[: len(data) // 2] if i == 5 else data)
"
cd "$here"
[ -d node_modules/@duckdb/node-api ] || npm install --no-audit --no-fund --loglevel=error
node make_image_fixtures.mjs "$work/folder" "$root/tests/data/images" "$work/folder50"
