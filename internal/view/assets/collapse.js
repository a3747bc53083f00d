// collapse.js: the Collapse page: each collapse reading's cross-scoring
// matrix as a heatmap (rows: sampled reasoning chains, columns: sampled
// prompts), with row and column statistics and the reading's metrics.
// Template collapse shows as rows that look alike: every chain scores the
// same under every prompt.
'use strict';

// modes are what a cell's colour shows.
const modes = {
  row: { label: 'log p(prompt | chain): each row normalised over the prompts', unit: 'nats' },
  token: { label: 'log-prob per reasoning token', unit: 'nats/token' },
  raw: { label: 'log-prob of the chain (sum over its tokens)', unit: 'nats' },
};

// keyMetrics are the reading's metrics shown first.
const keyMetrics = [
  ['mi_estimate', 'MI estimate (nats/token)'], ['mi_upper_bound', 'MI ceiling (log N)'], ['mi_zscore', 'MI z-score'],
  ['retrieval_accuracy', 'retrieval accuracy'], ['retrieval_chance_level', 'retrieval chance level'],
  ['conditional_entropy_est', 'H(Z|X) (nats/token)'], ['reasoning_entropy_est', 'H(Z) (nats/token)'],
  ['rationale_correct', 'rationales right'], ['retrieved_wrong', 'retrieved but wrong'],
];

function logSumExp(xs) {
  let m = -Infinity;
  for (const x of xs) if (Number.isFinite(x) && x > m) m = x;
  if (m === -Infinity) return NaN;
  let s = 0;
  for (const x of xs) if (Number.isFinite(x)) s += Math.exp(x - m);
  return m + Math.log(s);
}

// quantile is the q-quantile of the finite values.
function quantile(values, q) {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (!v.length) return NaN;
  return v[Math.min(v.length - 1, Math.max(0, Math.round(q * (v.length - 1))))];
}

// cellValues turns the matrix into what the colour shows.
function cellValues(mat, mode) {
  return mat.lsum.map((row, r) => {
    const xs = row.map((v) => (v === null ? NaN : v));
    if (mode === 'token') return xs.map((v) => v / Math.max(1, mat.reasoning_len[r]));
    if (mode === 'row') {
      const z = logSumExp(xs);
      return xs.map((v) => v - z);
    }
    return xs;
  });
}

V.pages.collapse = async function (main, params) {
  const runs = await V.api('/api/runs');
  const run = V.runOf(runs, params.run);
  const picker = V.runPicker(runs, run && run.id, (id) => V.go('collapse', { run: id }));
  let list;
  try {
    list = await V.api('/api/transcripts', { run: run.id });
  } catch (e) {
    if (!(e instanceof V.Missing)) throw e;
    main.replaceChildren(V.h('p', { class: 'note' }, 'This export leaves out the collapse readings (exported with -curves-only).'));
    return;
  }
  if (!list.collapse.length) {
    main.replaceChildren(V.h('div', { class: 'toolbar' }, picker), V.h('p', { class: 'note' }, 'This run has no collapse readings yet (collapse.every).'));
    return;
  }
  const steps = list.collapse;
  const step = steps.includes(Number(params.step)) ? Number(params.step) : steps[steps.length - 1];
  const reading = await V.api('/api/collapse', { run: run.id, step });
  const schemes = reading.matrices.map((m) => m.scheme);
  const scheme = schemes.includes(params.scheme) ? params.scheme : schemes[0];
  const mode = modes[params.mode] ? params.mode : 'row';
  const mat = reading.matrices[schemes.indexOf(scheme)];
  const go = (changes) => V.go('collapse', Object.assign({ run: run.id, step, scheme, mode }, changes));

  const at = steps.indexOf(step);
  const stepLabel = V.h('span', { class: 'step-label' }, `step ${step} (reading ${at + 1} of ${steps.length})`);
  const toolbar = V.h('div', { class: 'toolbar' }, picker,
    V.h('button', { disabled: at <= 0, onclick: () => go({ step: steps[at - 1] }) }, '◀'),
    V.h('input', { type: 'range', min: 0, max: steps.length - 1, step: 1, value: at, class: 'step-slider',
      oninput: (e) => (stepLabel.textContent = `step ${steps[e.target.value]} (reading ${Number(e.target.value) + 1} of ${steps.length})`),
      onchange: (e) => go({ step: steps[e.target.value] }) }),
    V.h('button', { disabled: at >= steps.length - 1, onclick: () => go({ step: steps[at + 1] }) }, '▶'), stepLabel,
    V.h('label', null, 'scheme', V.select(schemes.map((s) => [s, s.replace(/^collapse_/, '')]), scheme, (v) => go({ scheme: v }))),
    V.h('label', null, 'colour', V.select(Object.entries(modes).map(([k, m]) => [k, m.label]), mode, (v) => go({ mode: v }))));

  V.onChange = async () => {
    const fresh = await V.api('/api/transcripts', { run: run.id });
    if (fresh.collapse.length !== steps.length) V.render();
  };
  const side = V.h('div', { class: 'panel side' });
  const hoverRow = V.h('pre', { class: 'hover-text row-text' }, 'Hover over a cell for its chain and prompt.');
  const hoverCol = V.h('pre', { class: 'hover-text col-text' });
  const heat = V.h('div', { class: 'panel heat' });
  main.replaceChildren(toolbar, V.h('div', { class: 'collapse' }, heat, side));
  drawHeatmap(heat, mat, mode, hoverRow, hoverCol);
  side.append(metricsTable(mat), V.h('h3', null, 'Reasoning (row)'), hoverRow, V.h('h3', null, 'Prompt (column)'), hoverCol);
};

// metricsTable lists the reading's metrics, the key ones first.
function metricsTable(mat) {
  const prefix = mat.scheme + '/';
  const get = (k) => mat.metrics[prefix + k];
  const rows = keyMetrics.filter(([k]) => get(k) !== undefined).map(([k, label]) =>
    V.h('tr', null, V.h('td', null, label), V.h('td', null, V.fmt(get(k)))));
  const distinct = new Set(mat.rows.map((r) => r.text)).size;
  rows.push(V.h('tr', null, V.h('td', null, 'distinct reasoning texts'), V.h('td', null, `${distinct} of ${mat.rows.length}`)));
  const rest = Object.keys(mat.metrics).filter((k) => !keyMetrics.some(([x]) => prefix + x === k)).sort();
  return V.h('div', null, V.h('h3', null, 'This reading'), V.h('table', { class: 'kv metrics' }, rows),
    V.h('details', null, V.h('summary', { class: 'note' }, `all ${Object.keys(mat.metrics).length} metrics`),
      V.h('table', { class: 'kv' }, rest.map((k) => V.h('tr', null, V.h('td', null, k.slice(prefix.length)), V.h('td', null, V.fmt(mat.metrics[k])))))));
}

// drawHeatmap draws the matrix: the cells, each row's own prompt outlined,
// at the right each row's pointwise MI (own column against the mean over
// the prompts) and whether it was retrieved, and below how many rows
// score best under each column.
function drawHeatmap(box, mat, mode, hoverRow, hoverCol) {
  const R = mat.lsum.length, C = R ? mat.lsum[0].length : 0;
  const vals = cellValues(mat, mode);
  const flat = vals.flat();
  const lo = quantile(flat, 0.02), hi = quantile(flat, 1);
  const avail = Math.max(300, (box.clientWidth || 700) - 24 - 40 - 130);
  const cw = Math.max(3, Math.min(40, Math.floor(avail / Math.max(1, C))));
  const ch = Math.max(3, Math.min(14, Math.floor(620 / Math.max(1, R))));
  const left = 40, top = 4, statW = 120, colStatH = 60;
  const W = left + C * cw + 10 + statW, H = top + R * ch + 8 + colStatH + 28;
  const svg = V.s('svg', { class: 'heatmap', viewBox: `0 0 ${W} ${H}`, width: W, height: H });
  const cells = V.s('g', { class: 'cells' });
  const norm = (v) => (hi > lo ? (v - lo) / (hi - lo) : 1);
  const best = new Array(C).fill(0);
  const pmi = [];
  for (let r = 0; r < R; r++) {
    const raw = mat.lsum[r].map((v) => (v === null ? NaN : v));
    let arg = -1;
    for (let j = 0; j < C; j++) {
      if (Number.isFinite(raw[j]) && (arg < 0 || raw[j] > raw[arg])) arg = j;
      const own = j === mat.col[r];
      cells.append(V.s('rect', { class: 'cell' + (own ? ' own' : ''), x: left + j * cw, y: top + r * ch, width: cw, height: ch, fill: V.viridis(norm(vals[r][j])) }));
    }
    if (arg >= 0) best[arg]++;
    const perTok = mode === 'token' ? Math.max(1, mat.reasoning_len[r]) : 1;
    pmi.push((raw[mat.col[r]] - (logSumExp(raw) - Math.log(C))) / perTok);
  }
  svg.append(cells);
  // Row labels: the group of the row's episode, where it changes.
  let prev = null;
  mat.rows.forEach((row, r) => {
    if (row.group !== prev) svg.append(V.s('text', { x: left - 4, y: top + r * ch + Math.min(ch, 11), 'text-anchor': 'end' }, 'g' + row.group));
    prev = row.group;
  });
  // Row statistics.
  const sx = left + C * cw + 10;
  const pmax = Math.max(1e-9, ...pmi.filter(Number.isFinite).map(Math.abs));
  pmi.forEach((v, r) => {
    const w = Number.isFinite(v) ? (Math.abs(v) / pmax) * (statW - 22) : 0;
    svg.append(V.s('rect', { class: 'row-stat', x: sx + 12, y: top + r * ch + 0.5, width: w, height: Math.max(1, ch - 1), fill: v >= 0 ? '#5b8def' : '#e8804d' },
      V.s('title', null, `row ${r}: own prompt − mean over prompts = ${V.fmt(v)} ${mode === 'token' ? 'nats/token' : 'nats'}`)));
    svg.append(V.s('rect', { class: 'retrieved', x: sx, y: top + r * ch + 0.5, width: 8, height: Math.max(1, ch - 1), fill: mat.retrieved[r] ? '#2ca02c' : '#d62728' },
      V.s('title', null, mat.retrieved[r] ? 'retrieved: the chain scores best under its own prompt' : 'not retrieved')));
  });
  svg.append(V.s('text', { x: sx, y: top + R * ch + 14 }, 'retrieved,'), V.s('text', { x: sx, y: top + R * ch + 27 }, 'pointwise MI'));
  // Column statistics.
  const cy = top + R * ch + 8;
  const bmax = Math.max(1, ...best);
  best.forEach((n, j) => {
    const h = (n / bmax) * (colStatH - 14);
    svg.append(V.s('rect', { class: 'col-stat', x: left + j * cw + (cw > 4 ? 0.5 : 0), y: cy + (colStatH - 14) - h, width: Math.max(1, cw - (cw > 4 ? 1 : 0)), height: h, fill: '#8a94a6' },
      V.s('title', null, `column ${j}: best for ${n} of ${R} chains`)));
  });
  svg.append(V.s('text', { x: left, y: cy + colStatH }, `rows that score best under each column (${C} prompts)`));

  const hit = V.s('rect', { x: left, y: top, width: C * cw, height: R * ch, fill: 'transparent' });
  const focus = V.s('rect', { fill: 'none', stroke: '#fff', 'stroke-width': 2, visibility: 'hidden', width: cw, height: ch });
  svg.append(focus, hit);
  hit.addEventListener('mousemove', (ev) => {
    const b = svg.getBoundingClientRect();
    const x = (ev.clientX - b.left) * (W / b.width), y = (ev.clientY - b.top) * (H / b.height);
    const j = Math.floor((x - left) / cw), r = Math.floor((y - top) / ch);
    if (r < 0 || r >= R || j < 0 || j >= C) return;
    focus.setAttribute('x', left + j * cw);
    focus.setAttribute('y', top + r * ch);
    focus.setAttribute('visibility', 'visible');
    const row = mat.rows[r] || {}, col = mat.columns[j] || {};
    V.tooltip(ev, `row ${r} (group ${row.group}, sample ${row.sample}, turn ${row.turn}) × column ${j} (group ${col.group}, turn ${col.turn})\n` +
      `${modes[mode].label}: ${V.fmt(vals[r][j])} ${modes[mode].unit}\nown column ${mat.col[r]}${j === mat.col[r] ? ' (this one)' : ''}; ` +
      `${mat.retrieved[r] ? 'retrieved' : 'not retrieved'}; ${mat.reasoning_len[r]} reasoning tokens`);
    hoverRow.textContent = `row ${r}: group ${row.group}, sample ${row.sample}, turn ${row.turn}\n\n${row.text || ''}`;
    hoverCol.textContent = `column ${j}: group ${col.group}, turn ${col.turn}\n\n${col.text || ''}`;
  });
  hit.addEventListener('mouseleave', (ev) => {
    focus.setAttribute('visibility', 'hidden');
    V.tooltip(ev, null);
  });
  box.replaceChildren(
    V.h('h3', null, `${mat.scheme}: ${R} reasoning chains × ${C} prompts`),
    svg,
    V.h('div', { class: 'toolbar' }, V.h('span', { class: 'scale' }, V.fmt(lo), V.h('span', { class: 'bar', style: { background: 'linear-gradient(90deg,' + [0, 0.25, 0.5, 0.75, 1].map(V.viridis).join(',') + ')' } }), V.fmt(hi), ' ' + modes[mode].unit)),
    V.h('p', { class: 'note' }, 'Each row is a sampled reasoning chain, each column a sampled prompt; a cell is the chain\'s log-probability after that prompt, ' +
      'its own prompt outlined in white. Healthy reasoning depends on its prompt: rows differ, and each is brightest at its own column. ' +
      'Under template collapse a chain is as likely after any prompt as after its own: the rows become alike, each flat in the row-normalised colours, ' +
      'and the outlined cells no longer stand out.'));
}
