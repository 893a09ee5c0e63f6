// The chat page's HTML, style and script (see chat_page.h).
#include "serve/chat_page.h"

namespace grpo::serve {

const char* const kChatPage = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>grpo serve</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 46rem; margin: 1rem auto; padding: 0 1rem; color: #222; }
#log { border: 1px solid #ccc; border-radius: 6px; padding: .5rem; min-height: 12rem; white-space: pre-wrap; }
.user { color: #0550ae; margin: .4rem 0; } .assistant { margin: .4rem 0 .8rem; }
form { display: flex; gap: .5rem; margin-top: .5rem; } #input { flex: 1; padding: .4rem; }
#stats, #model { color: #666; font-size: .85rem; margin-top: .3rem; } #key { width: 12rem; }
</style>
</head>
<body>
<h1>grpo serve</h1>
<div id="model">model: ?</div>
<div id="log"></div>
<form id="form">
  <input id="input" autocomplete="off" placeholder="Type a message">
  <button id="send" type="submit">Send</button>
</form>
<div id="stats">tokens/s: -</div>
<div id="stats2"><label>API key (if the server has one) <input id="key" type="password"></label></div>
<script>
const messages = [];
const log = document.getElementById('log'), input = document.getElementById('input');
const stats = document.getElementById('stats'), key = document.getElementById('key');
function headers() {
  const h = {'Content-Type': 'application/json'};
  if (key.value) h['Authorization'] = 'Bearer ' + key.value;
  return h;
}
async function loadModel() {
  try {
    const r = await fetch('/v1/models', {headers: headers()});
    const j = await r.json();
    document.getElementById('model').textContent = 'model: ' + (j.data ? j.data[0].id : JSON.stringify(j));
  } catch (e) { document.getElementById('model').textContent = 'model: ' + e; }
}
function line(cls, text) {
  const d = document.createElement('div');
  d.className = cls; d.textContent = text; log.appendChild(d); return d;
}
async function send(text) {
  messages.push({role: 'user', content: text});
  line('user', 'you: ' + text);
  const out = line('assistant', '');
  const t0 = performance.now();
  let first = 0, tokens = 0, reply = '';
  const r = await fetch('/v1/chat/completions', {method: 'POST', headers: headers(), body: JSON.stringify(
      {messages: messages, stream: true, logprobs: true, max_tokens: 256})});
  if (!r.ok) { out.textContent = 'error ' + r.status + ': ' + await r.text(); messages.pop(); return; }
  const reader = r.body.getReader(), decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, {stream: true});
    let at;
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, at); buffer = buffer.slice(at + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const chunk = JSON.parse(event.slice(6));
      for (const c of chunk.choices) {
        if (c.logprobs && c.logprobs.content) {
          if (!first) first = performance.now();
          tokens += c.logprobs.content.length;
        }
        if (c.delta && c.delta.content) { reply += c.delta.content; out.textContent = reply; }
      }
      const s = first ? (performance.now() - first) / 1000 : 0;
      stats.textContent = 'tokens: ' + tokens + ', tokens/s: ' + (s > 0 ? (tokens / s).toFixed(1) : '-') +
          ', first token after ' + (first ? ((first - t0) / 1000).toFixed(2) + ' s' : '-');
    }
  }
  stats.dataset.done = '1';
  messages.push({role: 'assistant', content: reply});
}
document.getElementById('form').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = '';
  stats.dataset.done = '';
  send(text).catch((err) => line('assistant', 'error: ' + err));
});
key.addEventListener('change', loadModel);
loadModel();
// ?q=TEXT sends TEXT once the page has loaded (a link that opens a conversation; the browser test uses it).
const q = new URLSearchParams(location.search).get('q');
if (q) { input.value = q; document.getElementById('send').click(); }
</script>
</body>
</html>
)html";

}  // namespace grpo::serve
