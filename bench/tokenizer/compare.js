// Speed and agreement of grpo's tokenizer vs Hugging Face tokenizers (Rust, via its Node binding
// @anush008/tokenizers): encodes the lines of a text file with both, single-threaded and with all cores,
// prints MB/s, tokens/s and the ratio, and counts lines whose ids differ.
// Setup: npm install (in this folder).  Usage:
//   node compare.js --grpo BUILD/grpo --tokenizer DIR [--input FILE] [--repeat 3]
// Without --input the corpus is the licenses in /usr/share/common-licenses, the C++ sources under src/
// and the reference tokenizer cases (English prose, code, Chinese and mixed scripts), written to a temp file.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

function parseArgs(argv) {
  const a = { repeat: 3 };
  for (let i = 2; i < argv.length; i += 2) a[argv[i].replace(/^--/, '')] = argv[i + 1];
  a.repeat = Number(a.repeat);
  return a;
}

function readLines(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0);
}

function walk(dir, ext, out) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, ext, out);
    else if (ext.some((x) => e.name.endsWith(x))) out.push(p);
  }
  return out;
}

function defaultCorpus() {
  const root = path.resolve(__dirname, '..', '..');
  const parts = [];
  const licenses = '/usr/share/common-licenses';
  if (fs.existsSync(licenses))
    for (const f of fs.readdirSync(licenses).sort()) {
      const p = path.join(licenses, f);
      if (fs.statSync(p).isFile()) parts.push(fs.readFileSync(p, 'utf8'));
    }
  for (const f of walk(path.join(root, 'src'), ['.cpp', '.h'], []).sort()) parts.push(fs.readFileSync(f, 'utf8'));
  const cases = path.join(root, '..', 'shared', 'reference', 'tokenizer', 'qwen3_cases.jsonl');
  if (fs.existsSync(cases))
    for (const l of readLines(cases)) parts.push(JSON.parse(l).text.replace(/\r?\n/g, ' '));
  const file = path.join(os.tmpdir(), `grpo_tokenizer_corpus_${process.pid}.txt`);
  fs.writeFileSync(file, parts.join('\n').split('\n').filter((l) => l.trim().length > 0).join('\n') + '\n');
  return file;
}

// Child mode: time Hugging Face encodeBatch on the file's lines (threads chosen by the parent's env).
async function hfWorker(a) {
  const { Tokenizer } = require('@anush008/tokenizers');
  const tok = Tokenizer.fromFile(path.join(a.tokenizer, 'tokenizer.json'));
  const lines = readLines(a.input);
  let best = Infinity;
  let encodings = null;
  for (let r = 0; r < a.repeat; ++r) {
    const start = process.hrtime.bigint();
    encodings = await tok.encodeBatch(lines, { addSpecialTokens: false });
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
  }
  const tokens = encodings.reduce((n, e) => n + e.getLength(), 0);
  if (a['ids-out']) fs.writeFileSync(a['ids-out'], encodings.map((e) => JSON.stringify(e.getIds())).join('\n') + '\n');
  process.stdout.write(JSON.stringify({ seconds: best, tokens }) + '\n');
}

function runHf(a, single, idsOut) {
  const env = { ...process.env };
  if (single) {
    env.TOKENIZERS_PARALLELISM = 'false';
    env.RAYON_NUM_THREADS = '1';
  } else {
    env.TOKENIZERS_PARALLELISM = 'true';
  }
  const args = [__filename, '--worker', 'hf', '--tokenizer', a.tokenizer, '--input', a.input, '--repeat', String(a.repeat)];
  if (idsOut) args.push('--ids-out', idsOut);
  return JSON.parse(execFileSync(process.execPath, args, { env, maxBuffer: 1 << 30 }).toString());
}

async function main() {
  const a = parseArgs(process.argv);
  if (a.worker === 'hf') return hfWorker(a);
  if (!a.grpo || !a.tokenizer) throw new Error('usage: node compare.js --grpo PATH --tokenizer DIR [--input FILE] [--repeat N]');
  if (!a.input) a.input = defaultCorpus();
  const lines = readLines(a.input);
  const bytes = lines.reduce((n, l) => n + Buffer.byteLength(l, 'utf8'), 0);
  const mb = bytes / 1e6;

  const idsFile = path.join(os.tmpdir(), `grpo_tokenizer_hf_ids_${process.pid}.jsonl`);
  const hfSingle = runHf(a, true, idsFile);
  const hfAll = runHf(a, false, null);
  const ours = JSON.parse(execFileSync(a.grpo, ['bench', 'tokenize', '--json', '--repeat', String(a.repeat),
    '--tokenizer', a.tokenizer, '--input', a.input]).toString());

  // Agreement: grpo tokenize on the same lines vs the ids Hugging Face produced.
  const input = lines.map((l) => JSON.stringify({ text: l })).join('\n') + '\n';
  const out = execFileSync(a.grpo, ['tokenize', '--tokenizer', a.tokenizer], { input, maxBuffer: 1 << 30 }).toString();
  const ourIds = out.trim().split('\n').map((l) => JSON.stringify(JSON.parse(l).ids));
  const hfIds = fs.readFileSync(idsFile, 'utf8').trim().split('\n');
  fs.unlinkSync(idsFile);
  let differ = 0;
  for (let i = 0; i < lines.length; ++i) if (ourIds[i] !== hfIds[i]) ++differ;

  const row = (name, secs, tokens) =>
    `${name.padEnd(34)} ${(mb / secs).toFixed(2).padStart(9)} MB/s ${(tokens / secs / 1e6).toFixed(3).padStart(8)} M tokens/s`;
  console.log(`corpus ${a.input}: ${mb.toFixed(2)} MB, ${lines.length} lines, ${ours.tokens} tokens (HF ${hfSingle.tokens})`);
  console.log(row('grpo, 1 thread', ours.single_seconds, ours.tokens));
  console.log(row('HF tokenizers, 1 thread', hfSingle.seconds, hfSingle.tokens));
  console.log(row(`grpo, ${ours.threads} threads`, ours.all_seconds, ours.tokens));
  console.log(row(`HF tokenizers, all cores`, hfAll.seconds, hfAll.tokens));
  console.log(`ratio grpo / HF: 1 thread ${(hfSingle.seconds / ours.single_seconds).toFixed(2)}x, ` +
              `all cores ${(hfAll.seconds / ours.all_seconds).toFixed(2)}x`);
  console.log(`lines whose ids differ: ${differ} of ${lines.length}`);
  process.exitCode = differ ? 1 : 0;
}

main().catch((e) => { console.error(e); process.exit(2); });
