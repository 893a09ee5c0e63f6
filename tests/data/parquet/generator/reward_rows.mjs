// Writes tests/data/parquet/duckdb_reward_rows.parquet with DuckDB (@duckdb/node-api): rows as
// `grpo reward --input` takes them (data_source, response, reward_model {ground_truth}, extra_info), for
// the CLI test of scoring Parquet input. Run: npm ci && node reward_rows.mjs (from this folder).
import { DuckDBInstance } from '@duckdb/node-api';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const out = resolve(import.meta.dirname, '..');
const rows = [
  { data_source: 'openai/gsm8k', response: 'She pays 9 * 8 = 72 dollars.\n#### 72', gt: '72', index: 0 },
  { data_source: 'openai/gsm8k', response: 'The answer is 72.', gt: '72', index: 1 },
  { data_source: 'math_dapo', response: 'So the sum is 5.\nAnswer: 5', gt: '5', index: 2 },
  { data_source: 'math_dapo', response: 'Answer: 6', gt: '5', index: 3 },
].map((r) => ({ data_source: r.data_source, response: r.response,
                reward_model: { style: 'rule', ground_truth: r.gt }, extra_info: { split: 'test', index: r.index } }));
const path = join(mkdtempSync(join(tmpdir(), 'grpo-reward-rows-')), 'rows.jsonl');
writeFileSync(path, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
const duck = await (await DuckDBInstance.create(':memory:')).connect();
await duck.run(`COPY (SELECT * FROM read_json('${path}', format='newline_delimited',
  columns={data_source: 'VARCHAR', response: 'VARCHAR', reward_model: 'STRUCT(style VARCHAR, ground_truth VARCHAR)',
           extra_info: 'STRUCT(split VARCHAR, "index" BIGINT)'}))
  TO '${join(out, 'duckdb_reward_rows.parquet')}' (FORMAT parquet, COMPRESSION zstd, PARQUET_VERSION v2)`);
