#!/usr/bin/env bash
# Parquet cross-checks against DuckDB and arrow-rs (parquet-wasm).
set -euo pipefail
echo "compat: not yet"
