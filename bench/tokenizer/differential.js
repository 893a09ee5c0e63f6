// Differential test of grpo's tokenizer against Hugging Face tokenizers (Rust, Node binding): encodes
// random texts built from tricky pieces (Unicode whitespace, combining marks, contractions, digits of
// many scripts, emoji, added tokens) with both and reports every text whose ids or decoding differ.
// Usage: node differential.js --grpo BUILD/grpo --tokenizer DIR [--count 20000] [--seed 1]
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('@anush008/tokenizers');

function parseArgs() {
  const a = { count: 20000, seed: 1 };
  for (let i = 2; i < process.argv.length; i += 2) a[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
  if (!a.grpo || !a.tokenizer) throw new Error('usage: node differential.js --grpo PATH --tokenizer DIR');
  a.count = Number(a.count);
  a.seed = Number(a.seed);
  return a;
}

function rng(seed) {  // xorshift32
  let s = seed >>> 0 || 1;
  return () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; };
}

const PIECES = [
  ' ', '  ', '\t', '\n', '\r\n', '\r', '\u000b', '\u000c', '\u0085', '\u00a0', '\u1680', '\u180e', '\u2000',
  '\u200a', '\u200b', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff',
  "'s", "'S", "'t", "'re", "'VE", "'m", "'ll", "'d", "'D", "'x", "'\u017f", '\u212a', "'", '"',
  'a', 'Z', 'hello', 'World', 'don', 'the', 'ing', '_', '__init__', 'x1', 'CamelCase',
  '0', '7', '123', '\u0661\u0662', '\u0967', '\u2167', '\u00bd', '\u00b2', '\uff11',
  'e\u0301', '\u00e9', 'a\u030a', '\u212b', '\u1e9b\u0323', '\u0915\u093c', '\u1100\u1161\u11a8', '\ud55c',
  '\u304b\u3099', '\u304c', '\uf900', '\u0344', '\u0958', 'q\u0307\u0323',
  '\u4e2d\u6587', '\u65e5\u672c', '\u0645\u0631\u062d\u0628\u0627', '\u043f\u0440\u0438\u0432\u0435\u0442',
  '\ud83d\ude00', '\ud83d\udc69\u200d\ud83d\udc67', '\ud83c\uddfa\ud83c\uddf8', '\ud83e\udd16',
  '!', '?', '...', '.', ',', ';', '(', ')', '{', '}', '[', ']', '<', '>', '|', '$', '\\', '/', '#', '*',
  '+', '-', '=', '~', '`', '@', '%', '^', '&', '\u2014', '\u3002', '\uff0c', '\u00bf',
  '<|im_start|>', '<|im_end|>', '<|endoftext|>', '<think>', '</think>', '<tool_call>', '<|im_start',
  '<|', '|>', '<<|im_end|>>', '<|fim_prefix|>', '<tool_response>',
];

function randomText(next) {
  const n = 1 + Math.floor(next() * 12);
  let s = '';
  for (let i = 0; i < n; ++i) {
    let p = PIECES[Math.floor(next() * PIECES.length)];
    if (next() < 0.1) p = p.repeat(1 + Math.floor(next() * 5));
    s += p;
  }
  return s;
}

async function main() {
  const a = parseArgs();
  const next = rng(a.seed);
  const texts = [];
  for (let i = 0; i < a.count; ++i) texts.push(randomText(next));
  const tok = Tokenizer.fromFile(path.join(a.tokenizer, 'tokenizer.json'));
  const encodings = await tok.encodeBatch(texts, { addSpecialTokens: false });
  const input = texts.map((t) => JSON.stringify({ text: t })).join('\n') + '\n';
  const out = execFileSync(a.grpo, ['tokenize', '--tokenizer', a.tokenizer], { input, maxBuffer: 1 << 30 });
  const ours = out.toString('utf8').trim().split('\n').map((l) => JSON.parse(l).ids);
  const decIn = ours.map((ids) => JSON.stringify({ ids })).join('\n') + '\n';
  const decOut = execFileSync(a.grpo, ['detokenize', '--tokenizer', a.tokenizer], { input: decIn, maxBuffer: 1 << 30 });
  const ourTexts = decOut.toString('utf8').trim().split('\n').map((l) => JSON.parse(l).text);
  let bad = 0;
  for (let i = 0; i < texts.length; ++i) {
    const theirs = encodings[i].getIds();
    const same = theirs.length === ours[i].length && theirs.every((v, k) => v === ours[i][k]);
    const theirText = await tok.decode(theirs, false);
    if (!same || theirText !== ourTexts[i]) {
      if (++bad <= 20)
        console.log(JSON.stringify({ text: texts[i], hf: theirs, grpo: ours[i], hf_decoded: theirText, grpo_decoded: ourTexts[i] }));
    }
  }
  console.log(`${texts.length} texts, ${bad} differ`);
  process.exitCode = bad ? 1 : 0;
}

main().catch((e) => { console.error(e); process.exit(2); });
