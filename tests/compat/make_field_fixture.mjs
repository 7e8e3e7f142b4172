// Writes the DuckDB fixture of the value-field tests, once; committed under
// tests/data/parquet-testing/generated/duckdb-1.5.6/ and described in INDEX.md there. run.sh also
// writes it afresh with the DuckDB it installs, and checks feeder's Python loader against it.
//   cd tests/compat && npm install && node make_field_fixture.mjs ../data/parquet-testing/generated/duckdb-1.5.6
// duckdb_fields.parquet: 3,000 rows in two row groups (2,048 + 952: DuckDB rounds ROW_GROUP_SIZE 1000 up
// to its vectors of 2,048 rows), as DuckDB writes them (one page per
// column chunk): label BIGINT; pixels p0..p15 UTINYINT (p0 = i % 256 and p1 = i / 256 name the row);
// weight FLOAT = (i % 9) * 0.25 + 0.5; score DOUBLE = 1 / (i + 3); count INTEGER = i * 7 - 5000.
// duckdb_arrays.parquet: the same 3,000 rows and row groups with arrays, which DuckDB writes as
// Parquet LISTs (an optional group of a repeated group of an optional element): label BIGINT, pixels
// p0..p15 as above, embedding FLOAT[4] = [i / 2, i / 2 + 1, -i, i % 7], ids INTEGER[3] = [i, i + 1,
// i + 2], tokens INTEGER[] = [i, ..., i + i % 5 - 1] (0 to 4 of them: a sequence of varying length).
// duckdb_arrays_null.parquet: 100 rows of label, p0..p15 and embedding, whose row 37 holds a NULL.
// duckdb_sequences_null.parquet: 100 rows of label, p0..p15 and two sequences as tokens above:
// null_list, NULL in row 41, and null_element, whose row 43 holds a NULL.
// arrowrs_sequences_v2.parquet (beside arrowrs_arrays_null_nostats.parquet): duckdb_arrays.parquet
// written again by arrow-rs with data pages v2 of at most 256 bytes, in row groups of 1,000 rows.
// arrowrs_arrays_null_nostats.parquet (written to OUTDIR/../parquet-rs-59.3.0 when that folder
// exists, else beside the others): the same table written again by arrow-rs (parquet-wasm) without
// statistics, so that no null count tells of the NULL before a read meets it.

import path from 'node:path';
import fs from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import * as parquetWasm from 'parquet-wasm';

const outDir = process.argv[2];
if (!outDir) {
  console.error('usage: node make_field_fixture.mjs OUTDIR');
  process.exit(2);
}

const connection = await (await DuckDBInstance.create(':memory:')).connect();
// One thread keeps rows and row groups in the order of i.
await connection.run('SET threads = 1');
const pixels = Array.from({ length: 16 }, (_, k) =>
  k === 0 ? '(i % 256)::UTINYINT AS p0' : k === 1 ? '(i // 256)::UTINYINT AS p1' : `((i * 31 + ${k} * 17) % 256)::UTINYINT AS p${k}`);
// Writes `select` (of rows i = 0 .. rows - 1, in order) to OUTDIR/name as DuckDB writes Parquet.
async function writeTable(name, columns, rows, options = '') {
  const file = path.join(outDir, name);
  await connection.run(`COPY (SELECT ${columns} FROM range(${rows}) t(i) ORDER BY i)
    TO '${file.replaceAll("'", "''")}' (FORMAT PARQUET${options})`);
  console.log(`wrote ${file}`);
}

const imageAndLabel = `(i % 10)::BIGINT AS label, ${pixels.join(', ')}`;
await writeTable('duckdb_fields.parquet', `${imageAndLabel},
  ((i % 9) * 0.25 + 0.5)::FLOAT AS weight, (1.0 / (i + 3))::DOUBLE AS score, (i * 7 - 5000)::INTEGER AS count`,
  3000, ', ROW_GROUP_SIZE 1000');
await writeTable('duckdb_arrays.parquet', `${imageAndLabel},
  [i / 2, i / 2 + 1, -i, i % 7]::FLOAT[4] AS embedding, [i, i + 1, i + 2]::INTEGER[3] AS ids,
  list_transform(range(i % 5), x -> (x + i)::INTEGER) AS tokens`, 3000, ', ROW_GROUP_SIZE 1000');
await writeTable('duckdb_arrays_null.parquet', `${imageAndLabel},
  [i / 2, CASE WHEN i = 37 THEN NULL ELSE i / 2 + 1 END, -i, i % 7]::FLOAT[4] AS embedding`, 100);
await writeTable('duckdb_sequences_null.parquet', `${imageAndLabel},
  CASE WHEN i = 41 THEN NULL ELSE list_transform(range(i % 5), x -> (x + i)::INTEGER) END AS null_list,
  list_transform(range(i % 5), x -> CASE WHEN i = 43 AND x = 1 THEN NULL ELSE (x + i)::INTEGER END) AS null_element`, 100);

// arrow-rs writes the table with the NULL again, with no statistics at all.
const nullTable = parquetWasm.readParquet(new Uint8Array(fs.readFileSync(path.join(outDir, 'duckdb_arrays_null.parquet'))));
const noStatistics = new parquetWasm.WriterPropertiesBuilder()
  .setStatisticsEnabled(parquetWasm.EnabledStatistics.None).build();
const rsDir = fs.existsSync(path.join(outDir, '..', 'parquet-rs-59.3.0')) ? path.join(outDir, '..', 'parquet-rs-59.3.0') : outDir;
const noStats = path.join(rsDir, 'arrowrs_arrays_null_nostats.parquet');
fs.writeFileSync(noStats, parquetWasm.writeParquet(nullTable, noStatistics));
console.log(`wrote ${noStats}`);

// arrow-rs writes the sequences again in many small v2 pages.
const arrays = parquetWasm.readParquet(new Uint8Array(fs.readFileSync(path.join(outDir, 'duckdb_arrays.parquet'))));
const smallPages = new parquetWasm.WriterPropertiesBuilder()
  .setWriterVersion(parquetWasm.WriterVersion.V2).setDataPageSizeLimit(256).setWriteBatchSize(64)
  .setMaxRowGroupSize(1000).build();
const sequences = path.join(rsDir, 'arrowrs_sequences_v2.parquet');
fs.writeFileSync(sequences, parquetWasm.writeParquet(arrays, smallPages));
console.log(`wrote ${sequences}`);
