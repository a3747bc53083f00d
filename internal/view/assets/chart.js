// chart.js: line charts in SVG: lines, bands, points with intervals,
// marks, linear or log y axis, and a hover read-out.
'use strict';

// ticks returns about n round values covering [lo, hi].
V.ticks = function (lo, hi, n) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / mag;
  const step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
};

// logTicks returns the powers of ten in [lo, hi] (with 2 and 5 between
// them when the range spans few decades), or linear ticks inside one.
V.logTicks = function (lo, hi) {
  const a = Math.floor(Math.log10(lo)), b = Math.ceil(Math.log10(hi));
  if (b - a <= 1) return V.ticks(lo, hi, 4);
  const out = [];
  for (let k = a; k <= b; k++) {
    for (const m of b - a <= 3 ? [1, 2, 5] : [1]) {
      const v = m * Math.pow(10, k);
      if (v >= lo && v <= hi) out.push(v);
    }
  }
  return out;
};

// extent returns [min, max] of the finite values (positive ones on a log
// axis), or null.
function extent(arrays, log) {
  let lo = Infinity, hi = -Infinity;
  for (const a of arrays) {
    for (const v of a || []) {
      if (!Number.isFinite(v) || (log && v <= 0)) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  return lo <= hi ? [lo, hi] : null;
}

// nearest returns the index of the value in sorted xs closest to x.
function nearest(xs, x) {
  let lo = 0, hi = xs.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < x) lo = mid;
    else hi = mid;
  }
  return Math.abs(xs[lo] - x) <= Math.abs(xs[hi] - x) ? lo : hi;
}

// chart draws spec into an SVG of the given width:
//   height, log, xLabel, xRange ([lo, hi], optional)
//   bands:  [{color, xs, lo, hi}]
//   lines:  [{color, xs, ys, cls: 'line' | 'raw' | 'seed', dash, label}]
//   points: [{color, xs, ys, lo, hi, label}]   (validation rates, intervals)
//   marks:  [{x, color, title}]                (vertical markers)
// Lines with a label, and points, are read out on hover.
V.chart = function (spec, width) {
  const W = Math.max(260, width), H = spec.height || 240;
  const m = { l: 54, r: 12, t: 8, b: 30 };
  const svg = V.s('svg', { class: 'plot', viewBox: `0 0 ${W} ${H}`, width: W, height: H });
  const log = !!spec.log;
  const bands = spec.bands || [], lines = spec.lines || [], points = spec.points || [], marks = spec.marks || [];
  const xe = spec.xRange || extent([...lines.map((l) => l.xs), ...bands.map((b) => b.xs), ...points.map((p) => p.xs)], false);
  const ye = extent([...lines.map((l) => l.ys), ...bands.flatMap((b) => [b.lo, b.hi]), ...points.flatMap((p) => [p.ys, p.lo, p.hi])], log);
  if (!xe || !ye) {
    svg.append(V.s('text', { x: W / 2, y: H / 2, 'text-anchor': 'middle' }, log ? 'no positive values for a log axis' : 'no data'));
    return svg;
  }
  let [x0, x1] = xe;
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  let [y0, y1] = ye;
  if (log) {
    if (y1 === y0) { y0 /= 2; y1 *= 2; }
    const pad = (Math.log10(y1) - Math.log10(y0)) * 0.05;
    y0 = Math.pow(10, Math.log10(y0) - pad);
    y1 = Math.pow(10, Math.log10(y1) + pad);
  } else {
    if (y1 === y0) { const d = Math.abs(y0) * 0.1 || 1; y0 -= d; y1 += d; }
    const pad = (y1 - y0) * 0.05;
    y0 -= pad;
    y1 += pad;
  }
  const X = (x) => m.l + ((x - x0) / (x1 - x0)) * (W - m.l - m.r);
  const Y = log
    ? (y) => H - m.b - ((Math.log10(y) - Math.log10(y0)) / (Math.log10(y1) - Math.log10(y0))) * (H - m.t - m.b)
    : (y) => H - m.b - ((y - y0) / (y1 - y0)) * (H - m.t - m.b);
  const ok = (y) => Number.isFinite(y) && (!log || y > 0);

  const grid = V.s('g', { class: 'grid' }), axis = V.s('g', { class: 'axis' });
  for (const t of log ? V.logTicks(y0, y1) : V.ticks(y0, y1, 5)) {
    grid.append(V.s('line', { x1: m.l, x2: W - m.r, y1: Y(t), y2: Y(t) }));
    axis.append(V.s('text', { x: m.l - 6, y: Y(t) + 4, 'text-anchor': 'end' }, V.fmt(t)));
  }
  for (const t of V.ticks(x0, x1, Math.max(2, Math.floor(W / 90)))) {
    if (Math.abs(t - Math.round(t)) > 1e-9) continue;
    axis.append(V.s('line', { x1: X(t), x2: X(t), y1: H - m.b, y2: H - m.b + 4 }));
    axis.append(V.s('text', { x: X(t), y: H - m.b + 16, 'text-anchor': 'middle' }, V.fmt(t)));
  }
  axis.append(V.s('line', { x1: m.l, x2: W - m.r, y1: H - m.b, y2: H - m.b }));
  axis.append(V.s('line', { x1: m.l, x2: m.l, y1: m.t, y2: H - m.b }));
  if (spec.xLabel) axis.append(V.s('text', { x: W - m.r, y: H - 2, 'text-anchor': 'end' }, spec.xLabel));
  svg.append(grid, axis);

  const clip = 'clip' + Math.random().toString(36).slice(2);
  svg.append(V.s('clipPath', { id: clip }, V.s('rect', { x: m.l - 6, y: m.t - 2, width: W - m.l - m.r + 12, height: H - m.t - m.b + 4 })));
  const data = V.s('g', { 'clip-path': `url(#${clip})` });
  svg.append(data);

  for (const b of bands) {
    let top = '', bottom = [];
    b.xs.forEach((x, i) => {
      if (!ok(b.lo[i]) || !ok(b.hi[i])) return;
      top += (top ? 'L' : 'M') + X(x).toFixed(1) + ',' + Y(b.hi[i]).toFixed(1);
      bottom.push('L' + X(x).toFixed(1) + ',' + Y(b.lo[i]).toFixed(1));
    });
    if (top) data.append(V.s('path', { class: 'band', fill: b.color, d: top + bottom.reverse().join('') + 'Z' }));
  }
  for (const l of lines) {
    let d = '', pen = false;
    l.xs.forEach((x, i) => {
      if (!ok(l.ys[i])) { pen = false; return; }
      d += (pen ? 'L' : 'M') + X(x).toFixed(1) + ',' + Y(l.ys[i]).toFixed(1);
      pen = true;
    });
    if (!d) continue;
    const single = l.xs.filter((x, i) => ok(l.ys[i])).length === 1;
    if (single) {
      const i = l.ys.findIndex(ok);
      data.append(V.s('circle', { class: l.cls || 'line', cx: X(l.xs[i]), cy: Y(l.ys[i]), r: 2.5, fill: l.color }));
    }
    data.append(V.s('path', { class: l.cls || 'line', stroke: l.color, d, 'stroke-dasharray': l.dash || null }));
  }
  for (const p of points) {
    p.xs.forEach((x, i) => {
      if (!ok(p.ys[i])) return;
      if (p.lo && ok(p.lo[i]) && ok(p.hi[i])) {
        data.append(V.s('line', { class: 'ci', stroke: p.color, x1: X(x), x2: X(x), y1: Y(p.lo[i]), y2: Y(p.hi[i]) }));
        for (const v of [p.lo[i], p.hi[i]]) data.append(V.s('line', { class: 'ci', stroke: p.color, x1: X(x) - 3, x2: X(x) + 3, y1: Y(v), y2: Y(v) }));
      }
      data.append(V.s('circle', { class: 'val-point', cx: X(x), cy: Y(p.ys[i]), r: 2.8, fill: '#fff', stroke: p.color, 'stroke-width': 1.5 }));
    });
  }
  for (const k of marks) {
    if (k.x < x0 || k.x > x1) continue;
    const g = V.s('g', { class: 'mark' });
    g.append(V.s('line', { x1: X(k.x), x2: X(k.x), y1: m.t, y2: H - m.b, stroke: k.color, 'stroke-dasharray': '2 3', 'stroke-width': 1 }));
    g.append(V.s('path', { d: `M${X(k.x) - 4},${m.t}L${X(k.x) + 4},${m.t}L${X(k.x)},${m.t + 6}Z`, fill: k.color }, V.s('title', null, k.title || '')));
    svg.append(g);
  }

  const readable = [...lines.filter((l) => l.label), ...points.filter((p) => p.label)];
  if (readable.length) {
    const guide = V.s('line', { class: 'hover-line', y1: m.t, y2: H - m.b, visibility: 'hidden' });
    const hit = V.s('rect', { x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b, fill: 'transparent' });
    svg.append(guide, hit);
    hit.addEventListener('mousemove', (ev) => {
      const r = svg.getBoundingClientRect();
      const x = x0 + ((ev.clientX - r.left) * (W / r.width) - m.l) / (W - m.l - m.r) * (x1 - x0);
      let best = null;
      for (const s of readable) {
        if (!s.xs.length) continue;
        const i = nearest(s.xs, x);
        if (best === null || Math.abs(s.xs[i] - x) < Math.abs(best - x)) best = s.xs[i];
      }
      if (best === null) return;
      guide.setAttribute('x1', X(best));
      guide.setAttribute('x2', X(best));
      guide.setAttribute('visibility', 'visible');
      const rows = [V.h('div', null, 'step ' + best)];
      for (const s of readable.slice(0, 24)) {
        const i = s.xs.indexOf(best);
        if (i < 0) continue;
        let text = s.label + '  ' + V.fmt(s.ys[i]);
        if (s.lo && Number.isFinite(s.lo[i])) text += `  [${V.fmt(s.lo[i])}, ${V.fmt(s.hi[i])}]`;
        rows.push(V.h('div', { class: 'row' }, V.h('span', { class: 'swatch', style: { background: s.color } }), text));
      }
      V.tooltip(ev, rows);
    });
    hit.addEventListener('mouseleave', (ev) => {
      guide.setAttribute('visibility', 'hidden');
      V.tooltip(ev, null);
    });
  }
  svg.dataset.x0 = x0;
  svg.dataset.x1 = x1;
  return svg;
};
