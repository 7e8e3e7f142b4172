// Writes the Parquet image fixtures from an ImageFolder tree (see make_image_fixtures.sh).
//   node make_image_fixtures.mjs FOLDER OUTDIR
import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import * as arrow from 'apache-arrow';
import * as parquetWasm from 'parquet-wasm';

const [folder, outDir, folder50] = process.argv.slice(2);
if (!folder || !outDir) {
  console.error('usage: node make_image_fixtures.mjs FOLDER OUTDIR');
  process.exit(2);
}
const sqlString = (text) => `'${text.replaceAll("'", "''")}'`;
const connection = await (await DuckDBInstance.create(':memory:')).connect();
await connection.run('SET threads = 1');  // rows, row groups and files in order
// Rows in ImageFolder order (class, then file name); the label is the class's index.
await connection.run(`CREATE TABLE images AS
  SELECT content, parse_filename(filename) AS file, regexp_extract(filename, '([^/]+)/[^/]+$', 1) AS class
  FROM read_blob(${sqlString(path.join(folder, '*', '*.png'))})`);
await connection.run(`CREATE TABLE rows AS
  SELECT {'bytes': content, 'path': file} AS image, (dense_rank() OVER (ORDER BY class) - 1)::BIGINT AS label,
         content, class, file
  FROM images ORDER BY class, file`);

const hfDir = path.join(outDir, 'hf');
fs.rmSync(hfDir, { recursive: true, force: true });
fs.mkdirSync(hfDir, { recursive: true });
const count = Number((await connection.runAndReadAll('SELECT count(*) FROM rows')).getRows()[0][0]);
const half = Math.ceil(count / 2);
// As datasets writes them, with its `huggingface` metadata: the features, `label` a ClassLabel
// whose names are the classes.
const classNames = (await connection.runAndReadAll('SELECT DISTINCT class FROM rows ORDER BY class')).getRows().map((row) => row[0]);
const features = {
  info: { features: { image: { _type: 'Image' }, label: { names: classNames, _type: 'ClassLabel' } } },
};
for (const [part, offset] of [[0, 0], [1, half]]) {
  const file = path.join(hfDir, `train-0000${part}-of-00002.parquet`);
  await connection.run(`COPY (SELECT image, label FROM rows ORDER BY class, file LIMIT ${half} OFFSET ${offset})
    TO ${sqlString(file)} (FORMAT parquet, KV_METADATA {huggingface: ${sqlString(JSON.stringify(features))}})`);
}

// arrow-rs: the same layout (nullable struct fields: definition levels up to 2) in row groups of 4
// rows, data pages v2, dictionary encoding on (its default).
const rows = (await connection.runAndReadAll('SELECT content, file, label FROM rows ORDER BY class, file')).getRows();
const bytes = arrow.vectorFromArray(rows.map((row) => row[0].bytes), new arrow.Binary());
const paths = arrow.vectorFromArray(rows.map((row) => row[1]), new arrow.Utf8());
const structType = new arrow.Struct([new arrow.Field('bytes', new arrow.Binary(), true), new arrow.Field('path', new arrow.Utf8(), true)]);
const image = arrow.makeVector(arrow.makeData({ type: structType, length: rows.length, nullCount: 0, children: [bytes.data[0], paths.data[0]] }));
const labels = arrow.vectorFromArray(BigInt64Array.from(rows.map((row) => BigInt(row[2]))), new arrow.Int64());
const table = parquetWasm.Table.fromIPCStream(arrow.tableToIPC(new arrow.Table({ image, label: labels }), 'stream'));
const { WriterPropertiesBuilder, WriterVersion } = parquetWasm;
fs.writeFileSync(path.join(outDir, 'arrowrs_rg4.parquet'), parquetWasm.writeParquet(table,
  new WriterPropertiesBuilder().setWriterVersion(WriterVersion.V2).setMaxRowGroupSize(4).build()));
await connection.run(`COPY (SELECT content AS png, label::INTEGER AS label FROM rows ORDER BY class, file)
  TO ${sqlString(path.join(outDir, 'binary.parquet'))} (FORMAT parquet, COMPRESSION zstd)`);
// The same with a per-sample weight beside each image (row r: r * 0.5 + 1, FLOAT): fields of an
// encoded set.
await connection.run(`COPY (SELECT png, label, (file_row_number * 0.5 + 1)::FLOAT AS weight
  FROM read_parquet(${sqlString(path.join(outDir, 'binary.parquet'))}, file_row_number = true) ORDER BY file_row_number)
  TO ${sqlString(path.join(outDir, 'weighted.parquet'))} (FORMAT parquet, COMPRESSION zstd)`);

// Bad images: row 5 of cut.parquet is a PNG cut in half (the folder's bad/05.png), row 7 of
// null.parquet a null image.
const badDir = path.join(outDir, 'bad');
fs.rmSync(badDir, { recursive: true, force: true });
fs.mkdirSync(badDir, { recursive: true });
await connection.run(`CREATE TABLE bad AS SELECT content, parse_filename(filename) AS file
  FROM read_blob(${sqlString(path.join(folder, '..', 'bad', '*.png'))})`);
await connection.run(`COPY (SELECT content AS png, 0::BIGINT AS label FROM bad ORDER BY file)
  TO ${sqlString(path.join(badDir, 'cut.parquet'))} (FORMAT parquet)`);
await connection.run(`COPY (SELECT CASE WHEN file = '07.png' THEN NULL ELSE content END AS png, 0::BIGINT AS label
  FROM bad ORDER BY file) TO ${sqlString(path.join(badDir, 'null.parquet'))} (FORMAT parquet)`);

// One row group of 150 images in pages of about 1 KB: arrow-rs checks a page's size after each
// write batch, so batches of one row make the pages small.
await connection.run(`CREATE TABLE rows50 AS
  SELECT content, (dense_rank() OVER (ORDER BY regexp_extract(filename, '([^/]+)/[^/]+$', 1)) - 1)::BIGINT AS label,
         regexp_extract(filename, '([^/]+)/[^/]+$', 1) AS class, parse_filename(filename) AS file
  FROM read_blob(${sqlString(path.join(folder50, '*', '*.png'))}) ORDER BY class, file`);
const rows50 = (await connection.runAndReadAll('SELECT content, label FROM rows50 ORDER BY class, file')).getRows();
const table50 = parquetWasm.Table.fromIPCStream(arrow.tableToIPC(new arrow.Table({
  image: arrow.vectorFromArray(rows50.map((row) => row[0].bytes), new arrow.Binary()),
  label: arrow.vectorFromArray(BigInt64Array.from(rows50.map((row) => BigInt(row[1]))), new arrow.Int64()),
}), 'stream'));
fs.writeFileSync(path.join(outDir, 'arrowrs_pages.parquet'), parquetWasm.writeParquet(table50,
  new WriterPropertiesBuilder().setMaxRowGroupSize(1000).setDataPageSizeLimit(1024).setWriteBatchSize(1)
    .setDictionaryEnabled(false).build()));

for (const file of [path.join(outDir, 'arrowrs_pages.parquet'), ...fs.readdirSync(hfDir).sort().map((name) => path.join(hfDir, name)), path.join(outDir, 'binary.parquet'), path.join(outDir, 'arrowrs_rg4.parquet'), path.join(badDir, 'cut.parquet'), path.join(badDir, 'null.parquet')]) {
  const reader = await connection.runAndReadAll(
    `SELECT row_group_id, any_value(row_group_num_rows) FROM parquet_metadata(${sqlString(file)}) GROUP BY ALL ORDER BY 1`);
  console.log(file, JSON.stringify(reader.getRows().map((row) => Number(row[1]))));
}
