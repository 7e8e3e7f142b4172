// Cross-checks feeder's Parquet files against two independent implementations: DuckDB
// (@duckdb/node-api) and arrow-rs (parquet-wasm). Driven by run.sh:
//   node compat.mjs fixture DIR              synthetic images as DIR/{labeled,unlabeled}.csv (+ IDX)
//   node compat.mjs check-feeder FILE.parquet SOURCE.csv LAYOUT
//                                            both libraries read a file feeder wrote; values must match
//   node compat.mjs write-foreign DIR SOURCE.csv
//                                            both libraries write MNIST-shaped files; prints their names
//   node compat.mjs check-csv FILE.csv SOURCE.csv
//                                            feeder's CSV of a foreign file must hold SOURCE's values
// Every check prints "PASS <name>" or "FAIL <name>: <what differs>" and exits non-zero on failure.

import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import * as arrow from 'apache-arrow';
import * as parquetWasm from 'parquet-wasm';

const kPixels = 28 * 28;
const kRows = 3000;  // enough for several row groups at the small sizes used below

// ---- synthetic data -------------------------------------------------------------------------

// Deterministic: the fixture must be the same on every machine.
function makeRng(seed) {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 4294967296;
  };
}

// MNIST-like images: a zero border, one column always 0 (a one-entry dictionary), one column that
// takes every value 0..255, blobs of random ink elsewhere; row 0 all 255 and row 1 all 0 so every
// column has its extremes somewhere.
function makeImages(numRows) {
  const rng = makeRng(42);
  const labels = new Array(numRows);
  const pixels = new Uint8Array(numRows * kPixels);
  for (let row = 0; row < numRows; ++row) {
    labels[row] = row % 10;
    const image = pixels.subarray(row * kPixels, (row + 1) * kPixels);
    if (row === 0) { image.fill(255); continue; }
    if (row === 1) continue;
    for (let idx = 0; idx < kPixels; ++idx) {
      const y = Math.floor(idx / 28), x = idx % 28;
      if (idx === 5) continue;  // stays 0 except in row 0
      if (idx === 400) { image[idx] = row % 256; continue; }
      const inside = y >= 4 && y < 24 && x >= 4 && x < 24;
      if (inside && rng() < 0.55) image[idx] = rng() < 0.3 ? 255 : Math.floor(rng() * 256);
    }
  }
  // Rows 0 and 1 keep the constant column's dictionary at two entries in the first row group only.
  for (let row = 2; row < numRows; ++row) pixels[row * kPixels + 5] = 0;
  return { labels, pixels };
}

function csvText({ labels, pixels }, labeled) {
  const header = [];
  if (labeled) header.push('label');
  for (let idx = 1; idx <= kPixels; ++idx) header.push(`pixel${idx}`);
  const lines = [header.join(',')];
  for (let row = 0; row < labels.length; ++row) {
    const fields = labeled ? [labels[row]] : [];
    for (let idx = 0; idx < kPixels; ++idx) fields.push(pixels[row * kPixels + idx]);
    lines.push(fields.join(','));
  }
  return lines.join('\n') + '\n';
}

function idxImages({ pixels }, numRows) {
  const out = Buffer.alloc(16 + pixels.length);
  out.writeUInt32BE(0x803, 0);
  out.writeUInt32BE(numRows, 4);
  out.writeUInt32BE(28, 8);
  out.writeUInt32BE(28, 12);
  Buffer.from(pixels.buffer, pixels.byteOffset, pixels.length).copy(out, 16);
  return out;
}

function idxLabels({ labels }) {
  const out = Buffer.alloc(8 + labels.length);
  out.writeUInt32BE(0x801, 0);
  out.writeUInt32BE(labels.length, 4);
  labels.forEach((label, row) => out.writeUInt8(label, 8 + row));
  return out;
}

// Reads the article's CSV layout back: { columns: [...names], labels: [] | null, pixels }.
function readCsv(file) {
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter((line) => line.length > 0);
  const columns = lines[0].split(',');
  const labeled = columns[0] === 'label';
  const numPixels = columns.length - (labeled ? 1 : 0);
  const numRows = lines.length - 1;
  const labels = labeled ? new Array(numRows) : null;
  const pixels = new Uint8Array(numRows * numPixels);
  for (let row = 0; row < numRows; ++row) {
    const fields = lines[row + 1].split(',');
    if (fields.length !== columns.length) throw new Error(`${file}: line ${row + 2}: ${fields.length} fields, header has ${columns.length}`);
    let field = 0;
    if (labeled) labels[row] = Number(fields[field++]);
    for (let idx = 0; idx < numPixels; ++idx) pixels[row * numPixels + idx] = Number(fields[field++]);
  }
  return { columns, labels, pixels, numRows, numPixels };
}

// ---- reporting ------------------------------------------------------------------------------

let failures = 0;
function report(name, problems) {
  if (problems.length === 0) {
    console.log(`PASS ${name}`);
  } else {
    ++failures;
    console.log(`FAIL ${name}: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? ` (+${problems.length - 5} more)` : ''}`);
  }
}

async function check(name, fn) {
  try {
    report(name, await fn());
  } catch (error) {
    report(name, [String(error && error.stack ? error.stack.split('\n').slice(0, 3).join(' | ') : error)]);
  }
}

function expectedColumns(source, layout) {
  const names = source.labels ? ['label'] : [];
  if (layout === 'image') names.push('image');
  else for (let idx = 1; idx <= source.numPixels; ++idx) names.push(`pixel${idx}`);
  return names;
}

// Compares one decoded row against the source; `get(column)` returns a number, bigint or bytes.
function compareRow(source, layout, row, get, problems, reader) {
  if (problems.length > 5) return;
  let column = 0;
  if (source.labels) {
    const label = get(column++);
    if (Number(label) !== source.labels[row] || typeof label !== 'bigint') problems.push(`${reader}: row ${row} label ${label} (${typeof label}), expected ${source.labels[row]}n`);
  }
  const expected = source.pixels.subarray(row * source.numPixels, (row + 1) * source.numPixels);
  if (layout === 'image') {
    const bytes = get(column);
    if (!bytes || bytes.length !== expected.length || !Buffer.from(bytes).equals(Buffer.from(expected)))
      problems.push(`${reader}: row ${row} image bytes differ`);
    return;
  }
  for (let idx = 0; idx < source.numPixels; ++idx) {
    const value = get(column + idx);
    if (value !== expected[idx]) {
      problems.push(`${reader}: row ${row} pixel${idx + 1} = ${value}, expected ${expected[idx]}`);
      return;
    }
  }
}

// ---- DuckDB ---------------------------------------------------------------------------------

let duckdbConnection = null;
async function duckdb() {
  if (!duckdbConnection) duckdbConnection = await (await DuckDBInstance.create(':memory:')).connect();
  return duckdbConnection;
}

const sqlString = (text) => `'${text.replaceAll("'", "''")}'`;

async function duckdbCheck(file, source, layout) {
  const problems = [];
  const connection = await duckdb();
  const result = await connection.runAndReadAll(`SELECT * FROM read_parquet(${sqlString(file)})`);
  const names = result.columnNames();
  const types = result.columnTypes().map(String);
  const wantNames = expectedColumns(source, layout);
  if (JSON.stringify(names) !== JSON.stringify(wantNames)) problems.push(`duckdb: columns ${names.slice(0, 4)}..., expected ${wantNames.slice(0, 4)}...`);
  const wantPixelType = layout === 'image' ? 'BLOB' : 'UTINYINT';
  types.forEach((type, idx) => {
    const want = names[idx] === 'label' ? 'BIGINT' : wantPixelType;
    if (type !== want && problems.length < 5) problems.push(`duckdb: column ${names[idx]} is ${type}, expected ${want}`);
  });
  const rows = result.getRows();
  if (rows.length !== source.numRows) problems.push(`duckdb: ${rows.length} rows, expected ${source.numRows}`);
  rows.forEach((values, row) => compareRow(source, layout, row, (column) => (values[column] && values[column].bytes) || values[column], problems, 'duckdb'));

  // The image shape travels in the key-value metadata.
  const kv = (await connection.runAndReadAll(
    `SELECT decode(key) AS key, decode(value) AS value FROM parquet_kv_metadata(${sqlString(file)})`)).getRowObjects();
  const shape = kv.find((entry) => entry.key === 'feeder.image_shape');
  if (!shape || shape.value !== '1x28x28') problems.push(`duckdb: feeder.image_shape is ${shape && shape.value}, expected 1x28x28`);

  // Statistics, as DuckDB decodes them, must be the true min/max of each chunk.
  const stats = (await connection.runAndReadAll(
    `SELECT row_group_id, path_in_schema, row_group_num_rows, stats_min_value, stats_max_value, stats_null_count
     FROM parquet_metadata(${sqlString(file)}) ORDER BY row_group_id, column_id`)).getRowObjects();
  let firstRow = 0;
  let currentGroup = -1n;
  for (const chunk of stats) {
    if (chunk.row_group_id !== currentGroup) {
      if (currentGroup >= 0n) firstRow += Number(stats.find((c) => c.row_group_id === currentGroup).row_group_num_rows);
      currentGroup = chunk.row_group_id;
    }
    if (chunk.stats_null_count !== 0n) { problems.push(`duckdb: ${chunk.path_in_schema} null_count ${chunk.stats_null_count}`); continue; }
    if (chunk.path_in_schema === 'image') continue;
    const numRows = Number(chunk.row_group_num_rows);
    let values;
    if (chunk.path_in_schema === 'label') {
      if (!source.labels) { problems.push('duckdb: label column in an unlabeled file'); break; }
      values = source.labels.slice(firstRow, firstRow + numRows);
    } else {
      const idx = Number(chunk.path_in_schema.slice('pixel'.length)) - 1;
      values = Array.from({ length: numRows }, (_, row) => source.pixels[(firstRow + row) * source.numPixels + idx]);
    }
    const min = Math.min(...values), max = Math.max(...values);
    if (String(min) !== chunk.stats_min_value || String(max) !== chunk.stats_max_value)
      problems.push(`duckdb: row group ${chunk.row_group_id} ${chunk.path_in_schema} statistics ${chunk.stats_min_value}..${chunk.stats_max_value}, values ${min}..${max}`);
    if (problems.length > 5) break;
  }
  return problems;
}

// ---- parquet-wasm (arrow-rs) ----------------------------------------------------------------

function wasmRead(file) {
  const table = parquetWasm.readParquet(new Uint8Array(fs.readFileSync(file)));
  return arrow.tableFromIPC(table.intoIPCStream());
}

function wasmCheck(file, source, layout) {
  const problems = [];
  const table = wasmRead(file);
  const names = table.schema.fields.map((field) => field.name);
  const wantNames = expectedColumns(source, layout);
  if (JSON.stringify(names) !== JSON.stringify(wantNames)) problems.push(`arrow-rs: columns ${names.slice(0, 4)}..., expected ${wantNames.slice(0, 4)}...`);
  for (const field of table.schema.fields) {
    const type = String(field.type);
    const want = field.name === 'label' ? 'Int64' : layout === 'image' ? `FixedSizeBinary[${source.numPixels}]` : 'Uint8';
    if (type !== want && problems.length < 5) problems.push(`arrow-rs: column ${field.name} is ${type}, expected ${want}`);
  }
  if (table.numRows !== source.numRows) problems.push(`arrow-rs: ${table.numRows} rows, expected ${source.numRows}`);
  const vectors = names.map((name) => table.getChild(name));
  // Typed arrays per column once, instead of get(row) per value.
  const columns = vectors.map((vector, idx) => (!vector || names[idx] === 'image' ? vector : vector.toArray()));
  for (let row = 0; row < table.numRows; ++row) {
    compareRow(source, layout, row, (column) => (columns[column] instanceof arrow.Vector ? columns[column].get(row) : columns[column][row]), problems, 'arrow-rs');
  }
  return problems;
}

// ---- files the other implementations write --------------------------------------------------

async function writeForeign(dir, sourceFile) {
  const source = readCsv(sourceFile);
  const connection = await duckdb();
  const pixelNames = Array.from({ length: source.numPixels }, (_, idx) => `pixel${idx + 1}`);
  await connection.run(`CREATE OR REPLACE TABLE source AS SELECT * FROM read_csv(${sqlString(sourceFile)}, header = true)`);
  const select = (pixelType) => `SELECT label::BIGINT AS label, ${pixelNames.map((name) => `${name}::${pixelType} AS ${name}`).join(', ')} FROM source`;
  const written = [];
  const duckdbFiles = [
    ['duckdb_default_uint8', 'UTINYINT', 'FORMAT parquet'],
    ['duckdb_default_int64', 'BIGINT', 'FORMAT parquet'],
    ['duckdb_v2_zstd_uint8', 'UTINYINT', 'FORMAT parquet, PARQUET_VERSION v2, COMPRESSION zstd, ROW_GROUP_SIZE 1000'],
    ['duckdb_v2_gzip_int64', 'BIGINT', 'FORMAT parquet, PARQUET_VERSION v2, COMPRESSION gzip, ROW_GROUP_SIZE 1000'],
    ['duckdb_gzip_uint8', 'UTINYINT', 'FORMAT parquet, COMPRESSION gzip, ROW_GROUP_SIZE 1000'],
  ];
  for (const [name, pixelType, options] of duckdbFiles) {
    const file = path.join(dir, `${name}.parquet`);
    await connection.run(`COPY (${select(pixelType)}) TO ${sqlString(file)} (${options})`);
    written.push(file);
  }

  const labels = arrow.vectorFromArray(BigInt64Array.from(source.labels.map(BigInt)), new arrow.Int64());
  const makeTable = (pixelType) => {
    const columns = { label: labels };
    pixelNames.forEach((name, idx) => {
      const values = Array.from({ length: source.numRows }, (_, row) => source.pixels[row * source.numPixels + idx]);
      columns[name] = pixelType === 'int64'
        ? arrow.vectorFromArray(BigInt64Array.from(values.map(BigInt)), new arrow.Int64())
        : arrow.vectorFromArray(Uint8Array.from(values), new arrow.Uint8());
    });
    return parquetWasm.Table.fromIPCStream(arrow.tableToIPC(new arrow.Table(columns), 'stream'));
  };
  const { WriterPropertiesBuilder, WriterVersion, Compression } = parquetWasm;
  const wasmFiles = [
    ['arrowrs_default_uint8', 'uint8', () => new WriterPropertiesBuilder()],
    ['arrowrs_v2_nodict_zstd_uint8', 'uint8', () => new WriterPropertiesBuilder()
      .setWriterVersion(WriterVersion.V2).setDictionaryEnabled(false).setCompression(Compression.ZSTD).setMaxRowGroupSize(700)],
    ['arrowrs_v2_gzip_int64', 'int64', () => new WriterPropertiesBuilder()
      .setWriterVersion(WriterVersion.V2).setCompression(Compression.GZIP).setMaxRowGroupSize(1000)],
    ['arrowrs_nodict_snappy_int64', 'int64', () => new WriterPropertiesBuilder()
      .setDictionaryEnabled(false).setCompression(Compression.SNAPPY).setMaxRowGroupSize(512)],
  ];
  for (const [name, pixelType, properties] of wasmFiles) {
    const file = path.join(dir, `${name}.parquet`);
    fs.writeFileSync(file, parquetWasm.writeParquet(makeTable(pixelType), properties().build()));
    written.push(file);
  }
  console.log(written.join('\n'));
}

function checkCsv(file, sourceFile) {
  const problems = [];
  const got = readCsv(file);
  const want = readCsv(sourceFile);
  if (JSON.stringify(got.columns) !== JSON.stringify(want.columns)) problems.push(`header ${got.columns.slice(0, 3)}..., expected ${want.columns.slice(0, 3)}...`);
  if (got.numRows !== want.numRows) problems.push(`${got.numRows} rows, expected ${want.numRows}`);
  if (want.labels && (!got.labels || got.labels.some((label, row) => label !== want.labels[row]))) problems.push('labels differ');
  if (!Buffer.from(got.pixels).equals(Buffer.from(want.pixels))) {
    const at = got.pixels.findIndex((value, idx) => value !== want.pixels[idx]);
    problems.push(`pixels differ first at row ${Math.floor(at / want.numPixels)} pixel${(at % want.numPixels) + 1}`);
  }
  return problems;
}

// ---- main -----------------------------------------------------------------------------------

const [command, ...args] = process.argv.slice(2);
if (command === 'fixture') {
  const [dir] = args;
  const images = makeImages(kRows);
  fs.writeFileSync(path.join(dir, 'labeled.csv'), csvText(images, true));
  fs.writeFileSync(path.join(dir, 'unlabeled.csv'), csvText({ labels: images.labels.slice(0, 500), pixels: images.pixels.subarray(0, 500 * kPixels) }, false));
  fs.writeFileSync(path.join(dir, 'sample-images-idx3-ubyte'), idxImages(images, kRows));
  fs.writeFileSync(path.join(dir, 'sample-labels-idx1-ubyte'), idxLabels(images));
} else if (command === 'check-feeder') {
  const [file, sourceFile, layout] = args;
  const source = readCsv(sourceFile);
  const name = path.basename(file);
  await check(`duckdb reads ${name}`, () => duckdbCheck(file, source, layout));
  await check(`arrow-rs reads ${name}`, () => wasmCheck(file, source, layout));
} else if (command === 'write-foreign') {
  await writeForeign(args[0], args[1]);
} else if (command === 'check-csv') {
  const [file, sourceFile] = args;
  await check(`feeder reads ${path.basename(file, '.csv')}.parquet`, () => checkCsv(file, sourceFile));
} else {
  console.error('usage: node compat.mjs fixture|check-feeder|write-foreign|check-csv ...');
  process.exit(2);
}
process.exitCode = failures === 0 ? 0 : 1;
