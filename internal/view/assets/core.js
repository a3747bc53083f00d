// core.js: where the data comes from (the server's JSON endpoints, or the
// replies an exported page carries), the page's routes, and small helpers
// the pages share.
'use strict';

const V = (window.agentrlView = {
  // embedded is an exported page's data ({exported, replies}), or null
  // when a server answers.
  embedded: null,
  cache: new Map(),
  pages: {},
});

(function readEmbedded() {
  const node = document.getElementById('view-data');
  if (node) V.embedded = JSON.parse(node.textContent);
})();

// Missing is a reply an export does not carry.
V.Missing = class extends Error {};

// key names a request as the export names its replies: the path, then the
// parameters sorted by name, unescaped.
V.key = function (path, params) {
  params = params || {};
  const keys = Object.keys(params).filter((k) => params[k] !== undefined && params[k] !== null).sort();
  if (!keys.length) return path;
  return path + '?' + keys.map((k) => k + '=' + params[k]).join('&');
};

// api answers a request with its JSON reply, from the server or the
// export; replies are kept until the runs change.
V.api = function (path, params) {
  const key = V.key(path, params);
  if (V.cache.has(key)) return V.cache.get(key);
  let p;
  if (V.embedded) {
    p = Promise.resolve().then(() => {
      if (path === '/api/search') return V.searchEmbedded(params);
      const r = V.embedded.replies[key];
      if (r === undefined) throw new V.Missing('not in this export: ' + key);
      return r;
    });
  } else {
    const q = new URLSearchParams();
    for (const k of Object.keys(params || {}).sort()) q.set(k, params[k]);
    const url = path.replace(/^\//, '') + (q.toString() ? '?' + q : '');
    p = fetch(url, { cache: 'no-store' }).then(async (res) => {
      if (!res.ok) throw new Error((await res.text()).trim() || res.statusText);
      return res.json();
    });
  }
  V.cache.set(key, p);
  p.catch(() => V.cache.delete(key));
  return p;
};

// searchEmbedded answers /api/search from an export's transcripts, as the
// server does.
V.searchEmbedded = async function (params) {
  const needle = String(params.q).toLowerCase();
  const out = { run: params.run, query: params.q, hits: [], more: false };
  const list = await V.api('/api/transcripts', { run: params.run });
  for (const f of list.files) {
    const file = await V.api('/api/episodes', { run: params.run, label: f.label, step: f.step });
    for (const ep of file.episodes) {
      for (const m of ep.messages) {
        const i = m.content.toLowerCase().indexOf(needle);
        if (i < 0) continue;
        if (out.hits.length === 200) {
          out.more = true;
          return out;
        }
        const lo = Math.max(0, i - 40), hi = Math.min(m.content.length, i + needle.length + 40);
        const snip = (lo > 0 ? '…' : '') + m.content.slice(lo, hi).split(/\s+/).join(' ') + (hi < m.content.length ? '…' : '');
        out.hits.push({ label: f.label, step: f.step, episode: ep.index, group: ep.group, sample: ep.sample, score: ep.score, success: ep.success, snippet: snip });
        break;
      }
    }
  }
  return out;
};

// route reads the page and its parameters from the location's hash
// ("#/transcripts?run=…&file=train-5").
V.route = function () {
  const h = location.hash.replace(/^#\/?/, '');
  const i = h.indexOf('?');
  const page = (i < 0 ? h : h.slice(0, i)) || 'curves';
  const params = {};
  new URLSearchParams(i < 0 ? '' : h.slice(i + 1)).forEach((v, k) => (params[k] = v));
  return { page, params };
};

function hashOf(page, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const qs = q.toString();
  return '#/' + page + (qs ? '?' + qs : '');
}

// go shows a page.
V.go = function (page, params) {
  location.hash = hashOf(page, params);
};

// setParams records a page's parameters in the address without drawing
// the page again (the page has already redrawn what changed).
V.setParams = function (params) {
  history.replaceState(null, '', hashOf(V.route().page, params));
};

// h makes an HTML element: attributes (on* are listeners), then children
// (strings become text; null and false are skipped).
V.h = function (tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else if (k === 'style' && typeof v === 'object') Object.assign(e.style, v);
    else if (k === 'value') e.value = v;
    else if (k === 'checked' || k === 'selected' || k === 'open') e[k] = !!v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
};

const SVGNS = 'http://www.w3.org/2000/svg';

// s makes an SVG element with attributes.
V.s = function (tag, attrs, ...kids) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return e;
};

// select makes a <select> of [value, label] options.
V.select = function (options, value, onchange, attrs) {
  return V.h('select', Object.assign({ onchange: (e) => onchange(e.target.value) }, attrs || {}),
    options.map(([v, label]) => V.h('option', { value: v, selected: String(v) === String(value) }, label)));
};

// fmt formats a number for a label: four significant digits, no
// exponent for everyday magnitudes.
V.fmt = function (x) {
  if (x === null || x === undefined || Number.isNaN(x)) return 'n/a';
  if (!Number.isFinite(x)) return x > 0 ? '∞' : '−∞';
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-4 || a >= 1e6)) return x.toExponential(2);
  return String(Number(x.toPrecision(4)));
};

// ema smooths values with an exponential moving average of weight in
// [0, 1), debiased as TensorBoard's; non-finite values stay and are
// skipped (as report.EMA in Go).
V.ema = function (values, weight) {
  weight = Math.min(Math.max(weight, 0), 0.999);
  let last = 0, norm = 0;
  return values.map((x) => {
    if (!Number.isFinite(x)) return x;
    last = weight * last + (1 - weight) * x;
    norm = weight * norm + (1 - weight);
    return last / norm;
  });
};

// band summarises runs ({steps, values}) at the steps they all logged:
// the mean, and as lo/hi the min and max (mode "minmax") or the mean ± the
// standard deviation over runs (mode "std").
V.band = function (runs, mode) {
  const maps = runs.map((r) => new Map(r.steps.map((s, i) => [s, r.values[i]])));
  const out = { steps: [], mean: [], lo: [], hi: [] };
  if (!runs.length) return out;
  for (const s of runs[0].steps) {
    const vs = [];
    for (const m of maps) if (m.has(s) && Number.isFinite(m.get(s))) vs.push(m.get(s));
    if (vs.length !== runs.length) continue;
    const mean = vs.reduce((a, b) => a + b, 0) / vs.length;
    let lo, hi;
    if (mode === 'std') {
      const sd = vs.length > 1 ? Math.sqrt(vs.reduce((a, v) => a + (v - mean) ** 2, 0) / (vs.length - 1)) : 0;
      lo = mean - sd;
      hi = mean + sd;
    } else {
      lo = Math.min(...vs);
      hi = Math.max(...vs);
    }
    out.steps.push(s);
    out.mean.push(mean);
    out.lo.push(lo);
    out.hi.push(hi);
  }
  return out;
};

// palette is one colour per arm (or run), as internal/report's plots.
V.palette = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#17becf', '#e377c2', '#7f7f7f', '#bcbd22'];
V.color = (i) => V.palette[i % V.palette.length];

// mix blends two [r, g, b] colours, t in [0, 1] towards b.
V.mix = function (a, b, t) {
  t = Math.min(1, Math.max(0, t));
  return 'rgb(' + a.map((x, i) => Math.round(x + (b[i] - x) * t)).join(',') + ')';
};

// viridis maps t in [0, 1] to a perceptually even colour.
V.viridis = function (t) {
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  if (!Number.isFinite(t)) return '#c8ccd4';
  t = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(t));
  return V.mix(stops[i], stops[i + 1], t - i);
};

// tooltip shows content (a string or nodes) near the pointer; null hides
// it.
V.tooltip = function (ev, content) {
  const tip = document.getElementById('tooltip');
  if (content === null) {
    tip.hidden = true;
    return;
  }
  tip.replaceChildren(...(Array.isArray(content) ? content : [content]));
  tip.hidden = false;
  const w = tip.offsetWidth, h = tip.offsetHeight;
  let x = ev.clientX + 14, y = ev.clientY + 14;
  if (x + w > window.innerWidth - 8) x = ev.clientX - w - 14;
  if (y + h > window.innerHeight - 8) y = ev.clientY - h - 14;
  tip.style.left = Math.max(4, x) + 'px';
  tip.style.top = Math.max(4, y) + 'px';
};

// runPicker is a <select> of the runs, for the pages that show one run.
V.runPicker = function (runs, current, onchange) {
  if (runs.runs.length < 2) return null;
  return V.h('label', null, 'run', V.select(runs.runs.map((r) => [r.id, r.name]), current, onchange, { class: 'run-select' }));
};

// runOf returns the run named by id, or the first run.
V.runOf = function (runs, id) {
  return runs.runs.find((r) => r.id === id) || runs.runs[0];
};
