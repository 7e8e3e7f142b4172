// Writes the DuckDB fixtures of the row-group reader and sharded-set tests, once; they are committed
// under tests/data/parquet-testing/generated/duckdb-1.5.6/ and described in INDEX.md there.
//   cd tests/compat && npm install && node make_fixtures.mjs ../data/parquet-testing/generated/duckdb-1.5.6
// Writes duckdb_types_rg2.parquet (pixel and label columns of every number type, and one column per
// kind of bad value, in two row groups) and sharded/data_{0,1,2}.parquet (one set in three files).

import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

const outDir = process.argv[2];
if (!outDir) {
  console.error('usage: node make_fixtures.mjs OUTDIR');
  process.exit(2);
}

// The pixel table of the other generated files (INDEX.md): row i, pixel k.
const pixel = (k) => `(CASE WHEN (i + ${k}) % 3 = 0 THEN 0 ELSE (i * 31 + ${k} * 17) % 256 END)`;
const sqlString = (text) => `'${text.replaceAll("'", "''")}'`;

const connection = await (await DuckDBInstance.create(':memory:')).connect();
// One thread keeps rows, row groups and files in the order of i.
await connection.run('SET threads = 1');

const typesFile = path.join(outDir, 'duckdb_types_rg2.parquet');
await connection.run(`COPY (
  SELECT
    (i % 10)::BIGINT AS label,
    (i % 10)::DOUBLE AS label_f64,
    ${pixel(0)}::UTINYINT AS p_u8,
    ${pixel(1)}::BIGINT AS p_i64,
    ${pixel(2)}::FLOAT AS p_f32,
    ${pixel(3)}::DOUBLE AS p_f64,
    ${pixel(4)}::UINTEGER AS p_u32,
    (CASE WHEN i = 2500 THEN 2.5 ELSE ${pixel(5)} END)::DOUBLE AS bad_fraction,
    (CASE WHEN i = 2100 THEN 'NaN'::FLOAT ELSE ${pixel(6)} END)::FLOAT AS bad_nan,
    (CASE WHEN i = 2999 THEN 300 ELSE ${pixel(7)} END)::BIGINT AS bad_range,
    (CASE WHEN i = 2049 THEN NULL ELSE ${pixel(8)} END)::UTINYINT AS bad_null,
    (CASE WHEN i = 2222 THEN 1e19 ELSE i % 10 END)::DOUBLE AS bad_label
  FROM range(3000) t(i) ORDER BY i
) TO ${sqlString(typesFile)} (FORMAT parquet, ROW_GROUP_SIZE 2048)`);

const shardDir = path.join(outDir, 'sharded');
fs.rmSync(shardDir, { recursive: true, force: true });
await connection.run(`COPY (
  SELECT (i % 10)::BIGINT AS label, ${pixel(0)}::UTINYINT AS p0, ${pixel(1)}::UTINYINT AS p1,
         ${pixel(2)}::UTINYINT AS p2, ${pixel(3)}::UTINYINT AS p3
  FROM range(5000) t(i) ORDER BY i
) TO ${sqlString(shardDir)} (FORMAT parquet, ROW_GROUP_SIZE 2048, ROW_GROUPS_PER_FILE 1)`);

for (const file of [typesFile, ...fs.readdirSync(shardDir).sort().map((name) => path.join(shardDir, name))]) {
  const reader = await connection.runAndReadAll(
    `SELECT row_group_id, row_group_num_rows FROM parquet_metadata(${sqlString(file)}) GROUP BY ALL ORDER BY 1`);
  console.log(file, JSON.stringify(reader.getRows().map((row) => Number(row[1]))));
}
