// app.js — Spillway's page: a chat streamed from /v1/chat/completions
// (server-sent events read from fetch's body; Stop aborts the request, which
// frees its sequence), the engine's plan (/v1/plan, `plan --json`'s bytes)
// as one bar per layer coloured by where it lives, and /metrics polled each
// second. Every API call carries the key the page asked for, when the
// server wants one (401), as `Authorization: Bearer KEY`.

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

// ---- API calls and the key ------------------------------------------------

const KEY_ITEM = 'spillway-api-key';
let apiKey = localStorage.getItem(KEY_ITEM) || '';
let keyWaiters = [];

function askKey(why) {
  $('key-why').textContent = why;
  $('key-form').hidden = false;
  $('key-input').focus();
  return new Promise((resolve) => keyWaiters.push(resolve));
}

$('key-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  apiKey = $('key-input').value.trim();
  localStorage.setItem(KEY_ITEM, apiKey);
  $('key-form').hidden = true;
  $('key-btn').hidden = false;
  keyWaiters.splice(0).forEach((resolve) => resolve());
});
$('key-btn').addEventListener('click', () => askKey('Change the API key.'));

// fetch with the key; on 401 asks for one and tries again.
async function api(path, init = {}) {
  for (;;) {
    const headers = { ...(init.headers || {}) };
    if (apiKey) headers.Authorization = 'Bearer ' + apiKey;
    const r = await fetch(path, { ...init, headers });
    if (r.status !== 401) return r;
    await askKey(apiKey ? 'The server refused that key; enter another.'
                        : 'This server needs an API key.');
  }
}

async function errorText(r) {
  const body = await r.text();
  try { return JSON.parse(body).error.message; } catch { return `HTTP ${r.status}: ${body}`; }
}

// ---- chat -------------------------------------------------------------------

const history = [];      // the conversation sent with each request
let controller = null;   // the running request's AbortController

function addMessage(role, text) {
  $('messages').querySelector('.hint')?.remove();
  const m = el('div', 'msg ' + role);
  m.append(el('div', 'text', text), el('div', 'meta'));
  $('messages').append(m);
  m.scrollIntoView({ block: 'end' });
  return m;
}

// The server-sent events' JSON objects, as they arrive.
async function* events(resp) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    for (let i; (i = buf.indexOf('\n\n')) >= 0;) {
      const event = buf.slice(0, i);
      buf = buf.slice(i + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data: ')) continue;
        if (line === 'data: [DONE]') return;
        yield JSON.parse(line.slice(6));
      }
    }
  }
}

function numberField(id) {
  const v = $(id).value.trim();
  return v === '' ? undefined : Number(v);
}

function setBusy(busy) {
  $('send').hidden = busy;
  $('stop').hidden = !busy;
  $('prompt').disabled = busy;
}

async function send(text) {
  history.push({ role: 'user', content: text });
  addMessage('user', text);
  const out = addMessage('assistant streaming', '');
  const system = $('system').value.trim();
  const body = {
    stream: true,
    messages: [...(system ? [{ role: 'system', content: system }] : []), ...history],
    temperature: numberField('temperature'),
    top_p: numberField('top_p'),
    max_tokens: numberField('max_tokens'),
  };
  controller = new AbortController();
  setBusy(true);
  let reply = '', pieces = 0, finish = '', failed = false;
  const t0 = performance.now();
  try {
    const r = await api('/v1/chat/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body), signal: controller.signal,
    });
    if (!r.ok) throw new Error(await errorText(r));
    for await (const ev of events(r)) {
      if (ev.error) throw new Error(ev.error.message);
      const choice = ev.choices?.[0];
      const delta = choice?.delta?.content;
      if (delta) {
        reply += delta;
        pieces++;
        out.querySelector('.text').textContent = reply;
        out.scrollIntoView({ block: 'end' });
      }
      if (choice?.finish_reason) finish = choice.finish_reason;
    }
  } catch (e) {
    if (e.name === 'AbortError') finish = 'stopped';
    else { out.classList.add('error'); finish = 'error: ' + e.message; failed = true; }
  }
  const s = (performance.now() - t0) / 1000;
  out.classList.remove('streaming');
  out.querySelector('.meta').textContent =
    `${pieces} pieces in ${s.toFixed(2)} s · ${finish || 'done'}`;
  out.dataset.finish = finish || 'done';
  if (failed) history.pop();  // a failed turn leaves the conversation
  else history.push({ role: 'assistant', content: reply });
  controller = null;
  setBusy(false);
  $('prompt').focus();
}

$('composer').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const text = $('prompt').value.trim();
  if (!text || controller) return;
  $('prompt').value = '';
  send(text);
});
$('prompt').addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && !ev.shiftKey) { ev.preventDefault(); $('composer').requestSubmit(); }
});
$('stop').addEventListener('click', () => controller?.abort());
$('clear').addEventListener('click', () => {
  if (controller) return;
  history.length = 0;
  $('messages').replaceChildren();
});

// ---- the plan ---------------------------------------------------------------

let plan = null;      // GET /v1/plan, once the model has loaded
let metrics = {};     // the last /metrics, by name (the first series of each)

const CATEGORIES = [
  ['resident', 'on the device (resident)'], ['streamed', 'streamed to the device'],
  ['host', 'computed on the host'], ['experts', 'experts on the host'],
  ['table', 'lookup table (host)'], ['kv-device', 'KV on the device'],
  ['kv-host', 'KV on the host'],
];

function bytes(n) {
  if (n == null) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  for (; n >= 1024 && i < units.length - 1; i++) n /= 1024;
  return (i ? n.toFixed(n < 10 ? 2 : 1) : n.toFixed(0)) + ' ' + units[i];
}

function drawLegend(cats) {
  $('legend').replaceChildren(...CATEGORIES.filter(([c]) => cats.has(c)).map(([c, label]) => {
    const s = el('span');
    s.dataset.cat = c;
    s.append(el('i', 'swatch cat-' + c), label);
    return s;
  }));
}

function drawPlan(p) {
  const cats = new Set();
  const maxBytes = Math.max(...p.layers.map((l) => l.bytes), 1);
  const maxRows = Math.max(...p.layers.map((l) => l.kv_rows), 1);
  $('layers').replaceChildren(...p.layers.map((l) => {
    const bar = el('div', 'layer cat-' + l.place);
    bar.dataset.layer = l.layer;
    bar.dataset.place = l.place;
    bar.style.height = Math.max(4, 100 * l.bytes / maxBytes) + '%';
    bar.title = `layer ${l.layer}: ${l.place}, ${bytes(l.bytes)}` +
      (l.experts ? ', experts on the host' : '');
    cats.add(l.place);
    if (l.experts) {
      bar.dataset.experts = l.experts;
      bar.append(el('div', 'experts cat-experts'));
      cats.add('experts');
    }
    return bar;
  }));
  $('kv').replaceChildren(...p.layers.map((l) => {
    const bar = el('div', 'layer cat-kv-' + (l.kv === 'device' ? 'device' : 'host'));
    bar.dataset.kv = l.kv;
    bar.style.height = Math.max(4, 100 * l.kv_rows / maxRows) + '%';
    bar.title = `layer ${l.layer} KV: ${l.kv_rows} rows on the ${l.kv}` +
      (l.local ? ' (sliding window)' : '');
    cats.add(l.kv === 'device' ? 'kv-device' : 'kv-host');
    return bar;
  }));
  const every = Math.ceil(p.layers.length / 24);
  $('layer-axis').replaceChildren(...p.layers.map((l) =>
    el('span', '', l.layer % every === 0 ? String(l.layer) : '')));
  drawTables(p, cats);
  drawLegend(cats);
  const b = p.budget, w = p.workload;
  $('plan-summary').textContent = `${p.model.name} · ${p.model.weight_type} · ` +
    `${p.layers.length} layers · ${b.backend} backend` +
    `${b.has_device ? ', device ' + b.device : ''} · ` +
    `ctx ${w.n_ctx} × ${w.n_seq} sequences · KV ${w.kv_type}`;
  const pr = p.predictions;
  $('predict').textContent = `predicted: prefill ${Math.round(pr.prefill_tokens_per_s)} tok/s ` +
    `(${pr.prefill_bottleneck}) · decode ${pr.decode_tokens_per_s.toFixed(1)} tok/s ` +
    `(${pr.decode_bottleneck})` + (p.better ? ` · better: ${p.better}` : '');
  $('notes').replaceChildren(...p.notes.map((n) => el('li', '', n)));
  plan = p;
  drawTiers();
}

// The tables only looked up (their rows cross, not the whole) and the LM head.
function drawTables(p, cats) {
  const m = p.model;
  const rows = [['token embeddings', m.embd_bytes, 'table', 'lookup']];
  if (m.ple_bytes) rows.push(['per-layer embd.', m.ple_bytes, 'table', 'lookup']);
  rows.push(['LM head', m.tied ? m.embd_bytes : m.output_bytes, p.lm_head,
    p.lm_head + (m.tied ? ' (tied)' : '')]);
  const max = Math.max(...rows.map((r) => r[1]), 1);
  $('tables').replaceChildren(...rows.flatMap(([name, n, cat, where]) => {
    cats.add(cat);
    const bar = el('div', 'bar cat-' + cat);
    bar.dataset.table = name;
    bar.style.width = (100 * n / max) + '%';
    const track = el('div');
    track.append(bar);
    return [el('div', 'muted', name), track, el('div', 'muted', `${bytes(n)} ${where}`)];
  }));
}

function drawTiers() {
  if (!plan) return;
  const use = { device: metrics.spillway_device_bytes_peak,
                host: metrics.spillway_host_rss_bytes_peak };
  const cat = { device: 'resident', pinned: 'streamed', host: 'host', disk: 'table' };
  $('tiers').replaceChildren(...Object.entries(plan.tiers).map(([name, t]) => {
    const row = el('div', 'tier');
    row.dataset.tier = name;
    const track = el('div', 'track');
    const scale = Math.max(t.budget || 0, t.planned, use[name] || 0, 1);
    const bar = el('div', 'bar cat-' + cat[name]);
    bar.style.width = (100 * t.planned / scale) + '%';
    track.append(bar);
    let label = `planned ${bytes(t.planned)}` +
      (t.budget != null ? ` of ${bytes(t.budget)} budget` : '');
    if (use[name]) {
      const mark = el('div', 'use');
      mark.style.left = `calc(${100 * use[name] / scale}% - 1px)`;
      track.append(mark);
      label += ` · peak in use ${bytes(use[name])}`;
    }
    if (name === 'disk') label += ' (the model file, mapped)';
    row.append(el('div', '', name), track, el('div', 'label', label));
    return row;
  }));
}

async function loadPlan() {
  const r = await api('/v1/plan');
  if (r.status === 503) { setTimeout(loadPlan, 1000); return; }
  if (!r.ok) { $('plan-summary').textContent = await errorText(r); return; }
  drawPlan(await r.json());
}

// ---- live counters ----------------------------------------------------------

function parseMetrics(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (m && !(m[1] in out)) out[m[1]] = Number(m[3]);
  }
  return out;
}

let last = null;
const rate = (now, name, dt) => last && dt > 0 ? Math.max(0, (now[name] - last[name]) / dt) : 0;

function drawCounters(now, dt) {
  const c = [
    ['tok/s generated', rate(now, 'spillway_generated_tokens_total', dt).toFixed(1)],
    ['streamed to device', bytes(now.spillway_bytes_to_device_total)],
    ['streaming now', bytes(rate(now, 'spillway_bytes_to_device_total', dt)) + '/s'],
    ['queued', now.spillway_queue_depth], ['running', now.spillway_running_requests],
    ['batch (tokens)', now.spillway_batch_tokens],
    ['KV in use (tokens)', `${now.spillway_kv_cache_tokens ?? '–'} / ` +
      `${now.spillway_kv_cache_capacity_tokens ?? '–'}`],
    ['tokens generated', now.spillway_generated_tokens_total],
    ['requests', now.spillway_requests_total],
  ];
  if (now.spillway_spec_drafted_tokens_total > 0)
    c.push(['draft acceptance', (100 * now.spillway_spec_acceptance_rate).toFixed(0) + '%']);
  const hits = now.spillway_expert_cache_hits_total, misses = now.spillway_expert_cache_misses_total;
  if (hits + misses > 0)  // an expert cache (issue 38), when the server has one
    c.push(['expert cache hits', (100 * hits / (hits + misses)).toFixed(0) + '%']);
  $('counters').replaceChildren(...c.map(([label, v]) => {
    const d = el('div', 'counter');
    d.append(el('b', '', String(v ?? '–')), el('span', '', label));
    return d;
  }));
}

async function poll() {
  try {
    const h = await fetch('/health').then((r) => r.json());
    $('status').dataset.state = h.status;
    $('status').textContent = `${h.status} · ${h.running} running · ${h.queued} queued`;
    const t = performance.now();
    const r = await api('/metrics');
    if (r.ok) {
      const now = parseMetrics(await r.text());
      now.t = t;
      drawCounters(now, last ? (t - last.t) / 1000 : 0);
      last = now;
      metrics = now;
      drawTiers();
    }
  } catch (e) {
    $('status').dataset.state = 'error';
    $('status').textContent = 'no connection';
  }
  setTimeout(poll, 1000);
}

async function loadModel() {
  const r = await api('/v1/models');
  if (!r.ok) return;
  const m = (await r.json()).data[0];
  $('model').textContent = m.id + (m.meta && !m.meta.instruction_tuned
    ? ' · a base model: chat continues the text' : '');
}

if (apiKey) $('key-btn').hidden = false;
loadModel().then(loadPlan);
poll();
