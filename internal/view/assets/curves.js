// curves.js: the Curves page: any metric of the runs, smoothed, runs that
// differ only in seed drawn as one band, validation rates with their 95%
// intervals, and the collapse alarm's regimes along each run.
'use strict';

// defaultMetrics are shown when the address names none (those the runs
// logged).
const defaultMetrics = ['val-env/success', 'train/success', 'train/score', 'actor/entropy',
  'collapse_first_turn_sample/mi_estimate', 'collapse_first_turn_sample/retrieval_accuracy', 'rollout/filter_kept_ratio'];

// regimes name the values of collapse/regime (algos.Regime.Code).
V.regimes = [
  null,
  { name: 'diverse', color: '#2ca02c' },
  { name: 'compressed', color: '#1f77b4' },
  { name: 'template collapse', color: '#d62728' },
  { name: 'low-entropy collapse', color: '#ff7f0e' },
  { name: 'incoherent', color: '#9467bd' },
];

V.pages.curves = async function (main, params) {
  const runs = await V.api('/api/runs');
  const have = new Set(runs.metrics);
  const st = {
    m: params.m ? params.m.split(',').filter(Boolean) : defaultMetrics.filter((m) => have.has(m)),
    smooth: params.smooth !== undefined ? Number(params.smooth) : 0.6,
    band: params.band || 'minmax',
    group: params.group !== '0',
    y: params.y === 'log' ? 'log' : 'lin',
    hide: new Set(params.hide ? params.hide.split(',') : []),
  };
  if (!st.m.length) st.m = runs.metrics.slice(0, 4);
  const byName = new Map(runs.runs.map((r) => [r.name, r]));
  const index = new Map(runs.runs.map((r, i) => [r.id, i]));
  const visible = (id) => !st.hide.has(runs.runs[index.get(id)].name);
  const multiSeed = runs.arms.some((a) => a.runs.length > 1);

  const save = () => V.setParams({ m: st.m.join(','), smooth: st.smooth, band: st.band, group: st.group ? null : '0',
    y: st.y === 'log' ? 'log' : null, hide: [...st.hide].filter((n) => byName.has(n)).join(',') });

  // The runs, by arm: each a check box and its colour.
  const colorOf = (id) => (st.group ? V.color(runs.runs[index.get(id)].arm) : V.color(index.get(id)));
  const panel = V.h('aside', { class: 'panel runs-panel' });
  function drawPanel() {
    panel.replaceChildren(V.h('h3', null, `${runs.runs.length} run${runs.runs.length > 1 ? 's' : ''}` +
      (runs.arms.length > 1 ? `, ${runs.arms.length} arms` : '')));
    runs.arms.forEach((arm, ai) => {
      const ids = arm.runs;
      const all = ids.every(visible);
      const head = V.h('label', { class: 'arm-head' },
        V.h('input', { type: 'checkbox', checked: all, onchange: (e) => {
          for (const id of ids) {
            const n = runs.runs[index.get(id)].name;
            if (e.target.checked) st.hide.delete(n); else st.hide.add(n);
          }
          save(); drawPanel(); draw();
        } }),
        st.group ? V.h('span', { class: 'swatch', style: { background: V.color(ai) } }) : null,
        arm.label + (ids.length > 1 ? ` (${ids.length} seeds)` : ''));
      const items = ids.map((id) => {
        const r = runs.runs[index.get(id)];
        return V.h('label', { class: 'run', title: r.id },
          V.h('input', { type: 'checkbox', checked: visible(id), onchange: (e) => {
            if (e.target.checked) st.hide.delete(r.name); else st.hide.add(r.name);
            save(); drawPanel(); draw();
          } }),
          st.group ? null : V.h('span', { class: 'swatch', style: { background: colorOf(id) } }),
          r.name + (r.seed && ids.length > 1 ? ` · seed ${r.seed}` : ''),
          V.h('span', { class: 'meta' }, V.h('span', { class: 'badge' + (r.live ? ' running' : '') }, r.status.split(':')[0]),
            ` ${Math.max(r.last_step, 0)}${r.steps ? '/' + r.steps : ''}`));
      });
      panel.append(V.h('div', { class: 'arm' }, head, items));
    });
  }
  drawPanel();

  // The controls.
  const chips = V.h('div', { class: 'chips' });
  function drawChips() {
    chips.replaceChildren(...st.m.map((m) => V.h('span', { class: 'chip' }, m,
      V.h('button', { title: 'remove', onclick: () => { st.m = st.m.filter((x) => x !== m); save(); drawChips(); layoutCharts(); draw(); } }, '×'))));
  }
  drawChips();
  const listId = 'metric-list';
  const picker = V.h('input', { type: 'text', list: listId, placeholder: 'add a metric…', size: 34, class: 'metric-input',
    onchange: (e) => {
      const m = e.target.value.trim();
      if (have.has(m) && !st.m.includes(m)) {
        st.m.push(m);
        save(); drawChips(); layoutCharts(); draw();
      }
      e.target.value = '';
    } });
  const smoothLabel = V.h('span', { class: 'smooth-value' }, st.smooth.toFixed(2));
  const toolbar = V.h('div', { class: 'toolbar' },
    picker, V.h('datalist', { id: listId }, runs.metrics.map((m) => V.h('option', { value: m }))),
    V.h('label', null, 'smoothing (EMA)', V.h('input', { type: 'range', min: 0, max: 0.99, step: 0.01, value: st.smooth, class: 'smooth',
      oninput: (e) => { st.smooth = Number(e.target.value); smoothLabel.textContent = st.smooth.toFixed(2); save(); draw(); } }), smoothLabel),
    multiSeed ? V.h('label', null, V.h('input', { type: 'checkbox', checked: st.group,
      onchange: (e) => { st.group = e.target.checked; save(); drawPanel(); draw(); } }), 'group seeds') : null,
    multiSeed ? V.h('label', null, 'band', V.select([['minmax', 'min–max'], ['std', '± std'], ['seeds', 'each seed']], st.band,
      (v) => { st.band = v; save(); draw(); })) : null,
    V.h('label', null, 'y axis', V.select([['lin', 'linear'], ['log', 'log']], st.y, (v) => { st.y = v; save(); draw(); })));

  const grid = V.h('div', { class: 'charts' });
  const regimeBox = V.h('div', { class: 'panel regimes', hidden: true });
  const charts = new Map();
  function layoutCharts() {
    charts.clear();
    grid.replaceChildren(...st.m.map((m) => {
      const box = V.h('div', { class: 'panel chart', 'data-metric': m }, V.h('h3', null, m), V.h('div', { class: 'plot-box' }));
      charts.set(m, box);
      return box;
    }));
  }
  layoutCharts();
  main.replaceChildren(V.h('div', { class: 'curves' }, panel,
    V.h('section', null, V.h('div', { class: 'panel toolbar-box' }, toolbar, chips), V.h('div', { style: { height: '10px' } }), grid, regimeBox,
      V.h('p', { class: 'note' }, 'Smoothing is an exponential moving average (debiased, as TensorBoard\'s); the raw values are the faint line. ' +
        'Validation success rates are points with their 95% Wilson intervals over the validation episodes. ' +
        'Bands span the seeds of an arm (runs whose settings differ only in run.seed), at the steps they all logged.'))));

  async function draw() {
    const wanted = [...st.m];
    const regimeRuns = runs.runs.filter((r) => visible(r.id));
    const [replies, regime, changed] = await Promise.all([
      Promise.all(wanted.map((m) => V.api('/api/series', { metric: m }))),
      have.has('collapse/regime') ? V.api('/api/series', { metric: 'collapse/regime' }) : null,
      have.has('collapse/regime_changed') ? V.api('/api/series', { metric: 'collapse/regime_changed' }) : null,
    ]);
    const marks = regimeMarks(regime, changed, regimeRuns);
    wanted.forEach((m, i) => {
      const box = charts.get(m);
      if (!box) return;
      const plot = box.querySelector('.plot-box');
      const spec = specFor(replies[i]);
      spec.marks = regimeRuns.length <= 8 ? marks : [];
      plot.replaceChildren(V.chart(spec, plot.clientWidth || 440));
    });
    drawRegimes(regime, changed, regimeRuns, marks);
  }

  // specFor turns a metric's series into what the chart draws.
  function specFor(reply) {
    const byRun = new Map(reply.runs.map((r) => [r.run, r]));
    const spec = { lines: [], bands: [], points: [], log: st.y === 'log', xLabel: 'step' };
    const w = st.smooth;
    const one = runs.runs.length === 1;
    runs.arms.forEach((arm, ai) => {
      const members = arm.runs.filter((id) => visible(id) && byRun.has(id)).map((id) => byRun.get(id));
      if (!members.length) return;
      if (st.group && members.length > 1) {
        const color = V.color(ai);
        const smooth = members.map((r) => ({ steps: r.steps, values: V.ema(r.values, w) }));
        const b = V.band(smooth, st.band);
        if (st.band === 'seeds') {
          for (const r of smooth) spec.lines.push({ color, xs: r.steps, ys: r.values, cls: 'seed' });
        } else {
          spec.bands.push({ color, xs: b.steps, lo: b.lo, hi: b.hi });
        }
        spec.lines.push({ color, xs: b.steps, ys: b.mean, cls: 'line', label: `${arm.label} (mean of ${members.length})` });
        return;
      }
      for (const r of members) {
        const color = colorOf(r.run);
        const name = one ? reply.metric : runs.runs[index.get(r.run)].name;
        const smoothed = w > 0 ? V.ema(r.values, w) : r.values;
        if (r.lo) {
          spec.points.push({ color, xs: r.steps, ys: r.values, lo: r.lo, hi: r.hi, label: name + ` (of ${r.episodes} episodes, 95% interval)` });
          spec.lines.push({ color, xs: r.steps, ys: smoothed, cls: 'line' });
          continue;
        }
        if (w > 0) spec.lines.push({ color, xs: r.steps, ys: r.values, cls: 'raw' });
        spec.lines.push({ color, xs: r.steps, ys: smoothed, cls: 'line', label: name });
      }
    });
    return spec;
  }

  // regimeMarks are the steps at which a run's regime changed.
  function regimeMarks(regime, changed, shown) {
    if (!regime || !changed) return [];
    const codes = new Map(regime.runs.map((r) => [r.run, new Map(r.steps.map((s, i) => [s, r.values[i]]))]));
    const out = [];
    for (const r of changed.runs) {
      if (!shown.some((x) => x.id === r.run)) continue;
      r.steps.forEach((s, i) => {
        if (r.values[i] !== 1) return;
        const code = codes.get(r.run) && codes.get(r.run).get(s);
        const reg = V.regimes[code] || { name: 'none', color: '#667085' };
        out.push({ x: s, run: r.run, code, color: reg.color, title: `step ${s}: ${runs.runs[index.get(r.run)].name} → ${reg.name}` });
      });
    }
    return out;
  }

  // drawRegimes draws a strip per run: its regime from each collapse
  // reading to the next, with the changes marked.
  function drawRegimes(regime, changed, shown, marks) {
    const rows = regime ? regime.runs.filter((r) => shown.some((x) => x.id === r.run)) : [];
    regimeBox.hidden = !rows.length;
    if (!rows.length) return;
    const W = Math.max(400, (regimeBox.clientWidth || grid.clientWidth || 824) - 24);
    const left = 170, rowH = 16, top = 4;
    const H = top + rows.length * rowH + 26;
    let xmax = 1;
    for (const r of rows) xmax = Math.max(xmax, runs.runs[index.get(r.run)].last_step, r.steps[r.steps.length - 1]);
    const X = (s) => left + (s / xmax) * (W - left - 12);
    const svg = V.s('svg', { class: 'plot regime-strip', viewBox: `0 0 ${W} ${H}`, width: W, height: H });
    rows.forEach((r, k) => {
      const y = top + k * rowH;
      const last = runs.runs[index.get(r.run)].last_step;
      svg.append(V.s('text', { x: left - 6, y: y + 11, 'text-anchor': 'end' }, runs.runs[index.get(r.run)].name.slice(-28)));
      r.steps.forEach((s, i) => {
        const end = i + 1 < r.steps.length ? r.steps[i + 1] : Math.min(xmax, Math.max(last, s + 1));
        const reg = V.regimes[r.values[i]];
        svg.append(V.s('rect', { class: 'seg', x: X(s), y, width: Math.max(2, X(end) - X(s)), height: rowH - 4,
          fill: reg ? reg.color : '#d0d5dd' }, V.s('title', null, `steps ${s}–${end}: ${reg ? reg.name : 'no regime yet'}`)));
      });
      for (const mk of marks.filter((x) => x.run === r.run)) {
        svg.append(V.s('path', { class: 'change', d: `M${X(mk.x)},${y - 1}l-4,-4h8z`, fill: '#1d2330' }, V.s('title', null, mk.title)));
        svg.append(V.s('line', { x1: X(mk.x), x2: X(mk.x), y1: y - 1, y2: y + rowH - 4, stroke: '#1d2330', 'stroke-width': 1.5 }));
      }
    });
    const axisY = top + rows.length * rowH + 4;
    for (const t of V.ticks(0, xmax, 8)) {
      if (t !== Math.round(t)) continue;
      svg.append(V.s('text', { x: X(t), y: axisY + 12, 'text-anchor': 'middle' }, t));
    }
    regimeBox.replaceChildren(V.h('h3', null, 'Collapse alarm: regime at each collapse reading (collapse/regime; ▼ a change, collapse/regime_changed)'), svg,
      V.h('div', { class: 'regime-legend' }, V.regimes.filter(Boolean).map((r) =>
        V.h('span', null, V.h('span', { class: 'swatch', style: { background: r.color, height: '10px' } }), ' ' + r.name))));
  }

  await draw();
  V.onResize = draw;
  // A change of the runs' files: new rows are drawn in place; new runs or
  // metrics draw the page again.
  V.onChange = async () => {
    const fresh = await V.api('/api/runs');
    const same = fresh.runs.length === runs.runs.length && fresh.metrics.length === runs.metrics.length &&
      fresh.runs.every((r, i) => r.id === runs.runs[i].id && r.arm === runs.runs[i].arm);
    if (!same) return V.render();
    runs.runs.forEach((r, i) => Object.assign(r, fresh.runs[i]));
    drawPanel();
    await draw();
    document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
  };
};
