// Writes the Parquet test files of tests/data/parquet/ with independent writers, and next to each
// NAME.parquet the rows it must decode to (NAME.expected.jsonl), written from this script's own values,
// never read back from the Parquet file. Run: npm ci && node make.mjs (from this folder).
//
// Writers: DuckDB (@duckdb/node-api, its own C++ writer), arrow-rs (parquet-wasm), hyparquet-writer, and
// parquetjs (parquetjs-lite). Expected JSON follows docs/data.md: binary values are written as
// {"$binary_hex": "..."} (the test turns decoded bytes into the same form), dates and times as ISO text,
// decimals as exact decimal text.
import { DuckDBInstance } from '@duckdb/node-api';
import * as arrow from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { parquetWriteFile } from 'hyparquet-writer';
import parquetjs from 'parquetjs-lite';
import { deflateSync } from 'node:zlib';
import { writeFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const out = resolve(import.meta.dirname, '..');
const tmp = mkdtempSync(join(tmpdir(), 'grpo-parquet-'));

// JSON with BigInt integers written exactly and Uint8Array bytes as {"$binary_hex"}.
function toJson(value) {
  const text = JSON.stringify(value, (k, v) => {
    if (typeof v === 'bigint') return `__BIG__${v}`;
    if (v instanceof Uint8Array) return { $binary_hex: Buffer.from(v).toString('hex') };
    return v;
  });
  return text.replace(/"__BIG__(-?\d+)"/g, '$1');
}
// manifest.json: each Parquet file -> the expected rows (files with the same rows share one).
const manifest = {};
function writeExpected(name, rows, set = name) {
  writeFileSync(join(out, `${set}.expected.jsonl`), rows.map(toJson).join('\n') + '\n');
  manifest[`${name}.parquet`] = `${set}.expected.jsonl`;
}

// ---- a small PNG (RGB, 8 bits, 8x8 blocks of one colour; at least 32x32, the vision preprocessor's factor), built here with zlib and a CRC-32 ----
const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4); crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
function png(width, height, seed) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0); ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;
  const raw = [];
  for (let y = 0; y < height; ++y) {
    raw.push(0);
    for (let x = 0; x < width; ++x) raw.push((seed * 37 + (x >> 3) * 50) & 255, (seed * 11 + (y >> 3) * 60) & 255, (seed * 91) & 255);
  }
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return new Uint8Array(Buffer.concat([sig, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(Buffer.from(raw))), chunk('IEND', Buffer.alloc(0))]));
}

// ---- verl-shaped rows (as verl's gsm8k / MATH preprocessing writes them), with nulls ----
const QUESTIONS = ['Natalia sold clips to 48 of her friends in April, and half as many in May.', 'Résumé: ünïcödé and 中文 and emoji 🎉 in a question.', 'What is 2 + 2?', ''];
function verlRow(i) {
  const q = `${QUESTIONS[i % QUESTIONS.length]} (#${i})`;
  const prompt = i % 4 === 1
    ? [{ role: 'user', content: q }]
    : [{ role: 'system', content: 'Please reason step by step.' }, { role: 'user', content: `${q} Let's think step by step and output the final answer after "####".` }];
  return {
    data_source: i % 3 === 0 ? 'openai/gsm8k' : 'lighteval/MATH',
    prompt,
    ability: i % 7 === 5 ? null : 'math',
    reward_model: { style: 'rule', ground_truth: String(8 * i) },
    extra_info: { split: i < 30 ? 'train' : 'test', index: i, answer: i % 6 === 0 ? null : `${i} + ${7 * i} = ${8 * i}`, question: q },
  };
}
const verlRows = Array.from({ length: 45 }, (_, i) => verlRow(i));

// ---- DuckDB ----
const duck = await (await DuckDBInstance.create(':memory:')).connect();
await duck.run("SET TimeZone = 'UTC'");
function jsonl(name, rows) {
  const path = join(tmp, name);
  writeFileSync(path, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return path;
}
const verlColumns = `{data_source: 'VARCHAR', prompt: 'STRUCT(role VARCHAR, content VARCHAR)[]', ability: 'VARCHAR',
  reward_model: 'STRUCT(style VARCHAR, ground_truth VARCHAR)',
  extra_info: 'STRUCT(split VARCHAR, "index" BIGINT, answer VARCHAR, question VARCHAR)'}`;
const verlPath = jsonl('verl.jsonl', verlRows);
for (const [name, options] of [
  ['duckdb_verl_zstd_v2', 'COMPRESSION zstd, PARQUET_VERSION v2'],
  ['duckdb_verl_gzip_v2', 'COMPRESSION gzip, PARQUET_VERSION v2'],
  ['duckdb_verl_snappy', 'COMPRESSION snappy'],
  ['duckdb_verl_none', 'COMPRESSION uncompressed'],
]) {
  await duck.run(`COPY (SELECT * FROM read_json('${verlPath}', columns=${verlColumns}, format='newline_delimited'))
    TO '${join(out, name + '.parquet')}' (FORMAT parquet, ${options})`);
  writeExpected(name, verlRows, 'verl');
}

// A vision set as verl's geometry3k preprocessing writes it: images = list of {bytes, path}.
const visionRows = Array.from({ length: 12 }, (_, i) => ({
  data_source: 'hiyouga/geometry3k',
  prompt: [{ role: 'user', content: `<image>Find x in figure ${i}.` + (i % 4 === 0 ? ' Compare with <image>.' : '') }],
  images: (i % 4 === 0 ? [0, 1] : [0]).map((k) => ({ bytes: png(32 + 8 * ((i + k) % 3), 32 + 8 * (i % 2), i * 2 + k), path: i % 3 === 0 ? null : `fig_${i}_${k}.png` })),
  ability: 'math',
  reward_model: { style: 'rule', ground_truth: String(i + 1) },
  extra_info: { split: 'train', index: i },
}));
const visionJson = visionRows.map((r) => ({ ...r, images: r.images.map((im) => ({ hex: Buffer.from(im.bytes).toString('hex'), path: im.path })) }));
const visionPath = jsonl('vision.jsonl', visionJson);
await duck.run(`COPY (SELECT data_source, prompt, [{'bytes': from_hex(im.hex), 'path': im.path} FOR im IN images] AS images,
    ability, reward_model, extra_info
  FROM read_json('${visionPath}', columns={data_source: 'VARCHAR', prompt: 'STRUCT(role VARCHAR, content VARCHAR)[]',
    images: 'STRUCT(hex VARCHAR, path VARCHAR)[]', ability: 'VARCHAR', reward_model: 'STRUCT(style VARCHAR, ground_truth VARCHAR)',
    extra_info: 'STRUCT(split VARCHAR, "index" BIGINT)'}, format='newline_delimited'))
  TO '${join(out, 'duckdb_vision.parquet')}' (FORMAT parquet, COMPRESSION snappy)`);
writeExpected('duckdb_vision', visionRows);

// Scalar types, lists of lists, maps and nested structs with nulls (DuckDB, data page v2 and v1).
const typeRows = Array.from({ length: 9 }, (_, i) => {
  const nul = (k) => (i + k) % 5 === 0;
  return {
    b: nul(0) ? null : i % 2 === 0,
    i8: nul(1) ? null : -128 + i * 30,
    i16: -32768 + i * 4000,
    i32: nul(2) ? null : -2147483648 + i * 500000000,
    i64: BigInt('-9223372036854775808') + BigInt(i) * 1000000000000000000n,
    u8: 255 - i,
    u32: 4294967295 - i,
    u64: BigInt('18446744073709551615') - BigInt(i),
    f: i * 0.25 - 1,
    d: nul(3) ? null : i * 1.1,
    dec1: ['0.00', '-1.50', '12345.67', '0.05'][i % 4],
    dec2: ['99999999999999.9999', '-0.0001', '3.1416', '0.0000'][i % 4],
    dec3: ['1234567890123456789012345.12345', '-0.00001', '7.00000', '-99999999999999999999999.99999'][i % 4],
    dt: ['1970-01-01', '2024-02-29', '1969-12-31', '2100-12-31'][i % 4],
    ts: ['2024-02-29 12:34:56.789012', '1970-01-01 00:00:00', '1960-06-15 23:59:59.5', '2038-01-19 03:14:08.000001'][i % 4],
    tm: ['00:00:00', '12:34:56.5', '23:59:59.999999'][i % 3],
    uid: nul(4) ? null : `12345678-9abc-4def-8123-${String(i * 7919).padStart(12, '0')}`,
    blob_hex: nul(1) ? null : 'ff00'.repeat(i),
    s: ['', 'a', 'ü', null][i % 4],
    nested: i % 3 === 0 ? null : Array.from({ length: i % 4 }, (_, k) => (k === 1 ? null : Array.from({ length: k }, (_, m) => (m === 2 ? null : m + i)))),
    m: i % 4 === 3 ? null : Object.fromEntries(Array.from({ length: i % 3 }, (_, k) => [`key${k}`, k === 1 ? null : k * i])),
    st: i % 5 === 2 ? null : { a: i % 3 === 1 ? null : i, b: i % 4 === 2 ? null : { c: `c${i}`, d: i % 2 ? [] : [i / 2, null, -i] } },
  };
});
const typeColumns = `{b: 'BOOLEAN', i8: 'TINYINT', i16: 'SMALLINT', i32: 'INTEGER', i64: 'BIGINT', u8: 'UTINYINT', u32: 'UINTEGER',
  u64: 'UBIGINT', f: 'FLOAT', d: 'DOUBLE', dec1: 'DECIMAL(9,2)', dec2: 'DECIMAL(18,4)', dec3: 'DECIMAL(30,5)', dt: 'DATE',
  ts: 'TIMESTAMP', tm: 'TIME', uid: 'UUID', blob_hex: 'VARCHAR', s: 'VARCHAR', nested: 'INTEGER[][]', m: 'MAP(VARCHAR, INTEGER)',
  st: 'STRUCT(a INTEGER, b STRUCT(c VARCHAR, d DOUBLE[]))'}`;
const typesPath = join(tmp, 'types.jsonl');
writeFileSync(typesPath, typeRows.map(toJson).join('\n') + '\n');
const typeExpected = typeRows.map((r) => {
  const { blob_hex, ...rest } = r;
  const e = { ...rest, blob: blob_hex === null ? null : new Uint8Array(Buffer.from(blob_hex, 'hex')) };
  e.f = Math.fround(r.f);
  e.ts = r.ts.replace(' ', 'T').replace(/(\.\d+)?$/, (m) => (m ? m.padEnd(7, '0') : '.000000'));  // TIMESTAMP (microseconds, not UTC-adjusted)
  e.tm = r.tm.replace(/(\.\d+)?$/, (m) => (m ? m.padEnd(7, '0') : '.000000'));
  return e;
});
for (const [name, options] of [['duckdb_types_v2', 'COMPRESSION zstd, PARQUET_VERSION v2'], ['duckdb_types_v1', 'COMPRESSION uncompressed']]) {
  await duck.run(`COPY (SELECT * EXCLUDE (blob_hex), from_hex(blob_hex) AS blob FROM read_json('${typesPath}', columns=${typeColumns}, format='newline_delimited'))
    TO '${join(out, name + '.parquet')}' (FORMAT parquet, ${options})`);
  writeExpected(name, typeExpected, 'types');
}

// ---- arrow-rs (parquet-wasm): the writer pyarrow's Rust sibling; dictionary, v1 / v2, several codecs and encodings ----
const promptType = new arrow.List(new arrow.Field('item', new arrow.Struct([new arrow.Field('role', new arrow.Utf8(), true), new arrow.Field('content', new arrow.Utf8(), true)]), true));
const rmType = new arrow.Struct([new arrow.Field('style', new arrow.Utf8(), true), new arrow.Field('ground_truth', new arrow.Utf8(), true)]);
const eiType = new arrow.Struct([new arrow.Field('split', new arrow.Utf8(), true), new arrow.Field('index', new arrow.Int64(), true),
  new arrow.Field('answer', new arrow.Utf8(), true), new arrow.Field('question', new arrow.Utf8(), true)]);
const arrowRows = verlRows.map((r, i) => ({ ...r, score: i % 9 === 4 ? null : i * 0.5, tags: i % 5 === 0 ? null : Array.from({ length: i % 3 }, (_, k) => (k === 1 && i % 2 ? null : `t${k}`)) }));
const arrowTable = new arrow.Table({
  data_source: arrow.vectorFromArray(arrowRows.map((r) => r.data_source), new arrow.Utf8()),
  prompt: arrow.vectorFromArray(arrowRows.map((r) => r.prompt), promptType),
  ability: arrow.vectorFromArray(arrowRows.map((r) => r.ability), new arrow.Utf8()),
  reward_model: arrow.vectorFromArray(arrowRows.map((r) => r.reward_model), rmType),
  extra_info: arrow.vectorFromArray(arrowRows.map((r) => ({ ...r.extra_info, index: BigInt(r.extra_info.index) })), eiType),
  score: arrow.vectorFromArray(arrowRows.map((r) => r.score), new arrow.Float64()),
  tags: arrow.vectorFromArray(arrowRows.map((r) => r.tags), new arrow.List(new arrow.Field('item', new arrow.Utf8(), true))),
});
function arrowWrite(name, configure) {
  let b = new pw.WriterPropertiesBuilder().setMaxRowGroupSize(10);
  b = configure(b);
  const wasmTable = pw.Table.fromIPCStream(arrow.tableToIPC(arrowTable, 'stream'));  // writeParquet consumes it
  writeFileSync(join(out, name + '.parquet'), pw.writeParquet(wasmTable, b.build()));
  writeExpected(name, arrowRows, 'arrowrs');
}
arrowWrite('arrowrs_snappy_dict_v1', (b) => b.setCompression(pw.Compression.SNAPPY).setDictionaryEnabled(true).setWriterVersion(pw.WriterVersion.V1));
arrowWrite('arrowrs_zstd_delta_v2', (b) => b.setCompression(pw.Compression.ZSTD).setDictionaryEnabled(false).setWriterVersion(pw.WriterVersion.V2)
  .setColumnEncoding('data_source', pw.Encoding.DELTA_BYTE_ARRAY).setColumnEncoding('ability', pw.Encoding.DELTA_LENGTH_BYTE_ARRAY)
  .setColumnEncoding('extra_info.index', pw.Encoding.DELTA_BINARY_PACKED).setColumnEncoding('score', pw.Encoding.BYTE_STREAM_SPLIT)
  .setColumnEncoding('prompt.list.element.content', pw.Encoding.DELTA_BYTE_ARRAY));
arrowWrite('arrowrs_brotli_v2', (b) => b.setCompression(pw.Compression.BROTLI).setWriterVersion(pw.WriterVersion.V2));
arrowWrite('arrowrs_lz4raw_v1', (b) => b.setCompression(pw.Compression.LZ4_RAW).setWriterVersion(pw.WriterVersion.V1).setDictionaryEnabled(false));
arrowWrite('arrowrs_gzip_v1', (b) => b.setCompression(pw.Compression.GZIP).setWriterVersion(pw.WriterVersion.V1));

// ---- hyparquet-writer: flat columns with its encodings ----
const hyRows = Array.from({ length: 60 }, (_, i) => ({
  id: i * 1000 - 7,
  big: BigInt(i) * 123456789012n - 5n,
  flag: i % 3 === 0,
  ratio: i % 11 === 3 ? null : i / 8,
  name: i % 13 === 6 ? null : `row ${String(i).padStart(3, '0')} ${'x'.repeat(i % 5)}`,
  label: ['alpha', 'beta', 'gamma'][i % 3],
}));
parquetWriteFile({
  filename: join(out, 'hyparquet_encodings.parquet'),
  codec: 'UNCOMPRESSED',
  rowGroupSize: 25,
  columnData: [
    { name: 'id', data: hyRows.map((r) => r.id), type: 'INT32', encoding: 'DELTA_BINARY_PACKED', nullable: false },
    { name: 'big', data: hyRows.map((r) => r.big), type: 'INT64', encoding: 'DELTA_BINARY_PACKED' },
    { name: 'flag', data: hyRows.map((r) => r.flag), type: 'BOOLEAN', encoding: 'RLE' },
    { name: 'ratio', data: hyRows.map((r) => r.ratio), type: 'DOUBLE', encoding: 'BYTE_STREAM_SPLIT' },
    { name: 'name', data: hyRows.map((r) => r.name), type: 'STRING', encoding: 'DELTA_BYTE_ARRAY' },
    { name: 'label', data: hyRows.map((r) => r.label), type: 'STRING', encoding: 'DELTA_LENGTH_BYTE_ARRAY' },
  ],
});
writeExpected('hyparquet_encodings', hyRows);

// ---- parquetjs: bare repeated fields (no LIST annotation), optional fields, data page v1 and v2 ----
const pjSchema = new parquetjs.ParquetSchema({
  data_source: { type: 'UTF8' },
  prompt: { repeated: true, fields: { role: { type: 'UTF8' }, content: { type: 'UTF8' } } },
  reward_model: { fields: { style: { type: 'UTF8' }, ground_truth: { type: 'UTF8' } } },
  extra_info: { optional: true, fields: { index: { type: 'INT64' }, split: { type: 'UTF8', optional: true } } },
  tags: { type: 'UTF8', repeated: true },
  weight: { type: 'DOUBLE', optional: true },
  level: { type: 'INT32' },
});
const pjRows = verlRows.slice(0, 20).map((r, i) => ({
  data_source: r.data_source,
  prompt: i % 6 === 2 ? [] : r.prompt,
  reward_model: r.reward_model,
  extra_info: i % 4 === 3 ? null : { index: i, split: i % 5 === 1 ? null : r.extra_info.split },
  tags: Array.from({ length: i % 3 }, (_, k) => `tag${k}`),
  weight: i % 3 === 2 ? null : i * 0.125,
  level: i % 16,
}));
for (const [name, opts] of [['parquetjs_gzip_v1', { compression: 'GZIP', useDataPageV2: false }], ['parquetjs_snappy_v2', { compression: 'SNAPPY', useDataPageV2: true }]]) {
  const schema = new parquetjs.ParquetSchema(Object.fromEntries(Object.entries(pjSchema.schema).map(([k, v]) => [k, { ...v, compression: opts.compression }])));
  const w = await parquetjs.ParquetWriter.openFile(schema, join(out, name + '.parquet'), { useDataPageV2: opts.useDataPageV2 });
  w.setRowGroupSize(8);
  for (const r of pjRows) await w.appendRow(Object.fromEntries(Object.entries(r).filter(([, v]) => v !== null)));
  await w.close();
  writeExpected(name, pjRows, 'parquetjs');
}

writeFileSync(join(out, 'manifest.json'), JSON.stringify(manifest, null, 1) + '\n');
rmSync(tmp, { recursive: true });
console.log('wrote', out);
