// transcripts.js: the Transcripts page: a run's sample episodes by step,
// filtered by group, outcome and the filter's choice, each reply's tokens
// coloured by a recorded signal, and a search over every transcript.
'use strict';

// signals are what a reply token can be coloured by.
const signals = {
  logprob: {
    label: 'sampler log-prob',
    value: (t, i) => t.logprob && t.logprob[i],
    color: (v) => V.mix([255, 255, 255], [214, 39, 40], 1 - Math.exp(v)),
    scale: () => ['p = 1', 'p → 0', 'linear-gradient(90deg, #fff, #d62728)'],
    note: 'White: the sampler was sure of the token (p = exp(log-prob) near 1); red: it was unlikely.',
  },
  advantage: {
    label: 'advantage',
    value: (t, i) => t.advantage && t.advantage[i],
    color: (v, s) => (v >= 0 ? V.mix([255, 255, 255], [44, 160, 44], v / s) : V.mix([255, 255, 255], [214, 39, 40], -v / s)),
    scale: (s) => ['−' + V.fmt(s), '+' + V.fmt(s), 'linear-gradient(90deg, #d62728, #fff, #2ca02c)'],
    note: 'The advantage each token was trained with: only episodes whose group the filter kept have one.',
  },
  mismatch: {
    label: 'mismatch (old_logprob − logprob)',
    value: (t, i) => (t.old_logprob && t.logprob && t.old_logprob[i] !== null && t.logprob[i] !== null ? t.old_logprob[i] - t.logprob[i] : null),
    color: (v, s) => (v >= 0 ? V.mix([255, 255, 255], [148, 103, 189], v / s) : V.mix([255, 255, 255], [255, 127, 14], -v / s)),
    scale: (s) => ['−' + V.fmt(s), '+' + V.fmt(s), 'linear-gradient(90deg, #ff7f0e, #fff, #9467bd)'],
    note: 'The learner\'s old log-prob less the sampler\'s: the train–inference mismatch of each token (kept groups only).',
  },
};

V.pages.transcripts = async function (main, params) {
  const runs = await V.api('/api/runs');
  const run = V.runOf(runs, params.run);
  if (!run) {
    main.replaceChildren(V.h('p', { class: 'note' }, 'No runs.'));
    return;
  }
  let list;
  try {
    list = await V.api('/api/transcripts', { run: run.id });
  } catch (e) {
    if (!(e instanceof V.Missing)) throw e;
    main.replaceChildren(V.h('p', { class: 'note' }, 'This export leaves out the transcripts (exported with -curves-only).'));
    return;
  }
  const st = {
    run: run.id,
    label: params.label || 'all',
    file: params.file || '',
    ep: params.ep !== undefined ? Number(params.ep) : null,
    group: params.group || '',
    outcome: params.outcome || 'all',
    kept: params.kept || 'all',
    valid: params.valid || 'all',
    sort: params.sort || 'index',
    color: signals[params.color] ? params.color : 'logprob',
    q: params.q || '',
  };
  const files = list.files.filter((f) => st.label === 'all' || f.label === st.label);
  const fileId = (f) => f.label + '-' + f.step;
  const train = files.filter((f) => f.label === 'train');
  let file = files.find((f) => fileId(f) === st.file) || (train.length ? train[train.length - 1] : files[files.length - 1]);
  const save = () => V.setParams({ run: st.run, label: st.label === 'all' ? null : st.label, file: file ? fileId(file) : null, ep: st.ep,
    group: st.group, outcome: st.outcome === 'all' ? null : st.outcome, kept: st.kept === 'all' ? null : st.kept,
    valid: st.valid === 'all' ? null : st.valid, sort: st.sort === 'index' ? null : st.sort, color: st.color === 'logprob' ? null : st.color, q: st.q || null });
  const go = (changes) => V.go('transcripts', Object.assign({ run: st.run, label: st.label === 'all' ? null : st.label, file: file ? fileId(file) : null,
    color: st.color === 'logprob' ? null : st.color }, changes));

  if (!file) {
    main.replaceChildren(V.h('div', { class: 'toolbar' }, V.runPicker(runs, run.id, (id) => V.go('transcripts', { run: id }))),
      V.h('p', { class: 'note' }, 'This run has no transcripts yet (run.transcripts_every).'));
    return;
  }
  const data = await V.api('/api/episodes', { run: run.id, label: file.label, step: file.step });
  const at = files.indexOf(file);

  const groups = [...new Set(data.episodes.map((e) => e.group))].sort((a, b) => a - b);
  const shown = data.episodes.filter((e) =>
    (st.group === '' || String(e.group) === st.group) &&
    (st.outcome === 'all' || (st.outcome === 'success') === e.success) &&
    (st.kept === 'all' || (st.kept === 'kept') === !!e.kept) &&
    (st.valid === 'all' || (st.valid === 'valid') === !e.invalid_turns));
  if (st.sort === 'score-desc') shown.sort((a, b) => b.score - a.score);
  if (st.sort === 'score-asc') shown.sort((a, b) => a.score - b.score);
  if (st.ep === null || !shown.some((e) => e.index === st.ep)) st.ep = shown.length ? shown[0].index : null;

  const toolbar = V.h('div', { class: 'toolbar' },
    V.runPicker(runs, run.id, (id) => V.go('transcripts', { run: id })),
    V.h('label', null, 'transcripts', V.select([['all', 'train and validation'], ['train', 'train'], ['val', 'validation']], st.label,
      (v) => go({ label: v === 'all' ? null : v, file: null }))),
    V.h('button', { disabled: at <= 0, onclick: () => go({ file: fileId(files[at - 1]) }) }, '◀'),
    V.select(files.map((f) => [fileId(f), `${f.label} step ${f.step}`]), fileId(file), (v) => go({ file: v }), { class: 'file-select' }),
    V.h('button', { disabled: at >= files.length - 1, onclick: () => go({ file: fileId(files[at + 1]) }) }, '▶'),
    V.h('label', null, 'group', V.select([['', 'all'], ...groups.map((g) => [String(g), String(g)])], st.group, (v) => { st.group = v; st.ep = null; redraw(); })),
    V.h('label', null, 'outcome', V.select([['all', 'all'], ['success', 'success'], ['failure', 'failure']], st.outcome, (v) => { st.outcome = v; st.ep = null; redraw(); })),
    V.h('label', null, 'filter', V.select([['all', 'all'], ['kept', 'kept'], ['dropped', 'dropped']], st.kept, (v) => { st.kept = v; st.ep = null; redraw(); })),
    V.h('label', null, 'actions', V.select([['all', 'all'], ['valid', 'all valid'], ['invalid', 'some invalid']], st.valid, (v) => { st.valid = v; st.ep = null; redraw(); })),
    V.h('label', null, 'sort', V.select([['index', 'as sampled'], ['score-desc', 'reward ↓'], ['score-asc', 'reward ↑']], st.sort, (v) => { st.sort = v; redraw(); })),
    V.h('label', null, 'colour by', V.select(Object.entries(signals).map(([k, s]) => [k, s.label]), st.color, (v) => { st.color = v; redraw(); })),
    V.h('input', { type: 'search', placeholder: 'search all transcripts…', value: st.q, size: 24, class: 'search',
      onkeydown: (e) => { if (e.key === 'Enter') { st.q = e.target.value.trim(); redraw(); } } }));

  function redraw() {
    save();
    return V.render();
  }

  const hits = st.q ? await searchHits(run.id, st.q, go) : null;
  const listEl = V.h('ul', { class: 'episodes' }, shown.map((e) => V.h('li', {
    class: 'episode' + (e.index === st.ep ? ' selected' : ''), 'data-index': e.index,
    onclick: () => { st.ep = e.index; redraw(); },
  },
  V.h('span', { class: e.success ? 'ok' : 'bad' }, e.success ? '✓' : '✗'),
  `g${e.group} s${e.sample}`,
  e.kept === undefined || file.label !== 'train' ? null : V.h('span', { class: 'badge' }, e.kept ? 'kept' : 'dropped'),
  e.invalid_turns ? V.h('span', { class: 'badge invalid', title: 'replies that took no valid action' }, `${e.invalid_turns} invalid`) : null,
  V.h('span', { class: 'score' }, e.score.toFixed(2)))));

  V.onChange = async () => {
    const fresh = await V.api('/api/transcripts', { run: run.id });
    if (fresh.files.length !== list.files.length) V.render();
  };
  const ep = data.episodes.find((e) => e.index === st.ep);
  main.replaceChildren(...[toolbar, hits].filter(Boolean),
    V.h('div', { class: 'transcripts' },
      V.h('div', { class: 'panel' }, V.h('h3', null, `${shown.length} of ${data.episodes.length} episodes · ${file.label} step ${file.step}`), listEl),
      V.h('div', { class: 'panel episode-view' }, ep ? episodeView(ep, data, list, st.color) : V.h('p', { class: 'note' }, 'No episode matches.'))));
};

// searchHits lists the episodes of every transcript that hold text.
async function searchHits(run, text, go) {
  const res = await V.api('/api/search', { run, q: text });
  return V.h('div', { class: 'panel hits' },
    V.h('h3', null, `${res.hits.length}${res.more ? '+' : ''} episodes contain “${text}”`),
    res.hits.map((h) => V.h('a', { href: '#', onclick: (e) => { e.preventDefault(); go({ file: h.label + '-' + h.step, ep: h.episode, q: text }); } },
      `${h.label} step ${h.step} · g${h.group} s${h.sample} · ${h.score.toFixed(2)} ${h.success ? '✓' : '✗'} · `, highlight(h.snippet, text))));
}

// highlight marks the first match of text in s.
function highlight(s, text) {
  const i = s.toLowerCase().indexOf(text.toLowerCase());
  if (i < 0) return s;
  return V.h('span', null, s.slice(0, i), V.h('mark', null, s.slice(i, i + text.length)), s.slice(i + text.length));
}

// episodeView shows one episode: its header, its messages, and each reply
// as coloured tokens with the turn's reward.
function episodeView(ep, data, list, colorBy) {
  const sig = signals[colorBy];
  let scale = 1e-9;
  if (colorBy !== 'logprob') {
    for (const e of data.episodes) {
      for (const t of e.turns) {
        for (let i = 0; i < (t.ids || []).length; i++) {
          const v = sig.value(t, i);
          if (v !== null && v !== undefined && Number.isFinite(v)) scale = Math.max(scale, Math.abs(v));
        }
      }
    }
  }
  const [lo, hi, gradient] = sig.scale(scale);
  const head = V.h('div', null,
    V.h('h2', null, `group ${ep.group} · sample ${ep.sample} · `, V.h('span', { class: ep.success ? 'ok' : 'bad' }, ep.success ? 'success' : 'failure'),
      ` · score ${ep.score.toFixed(2)}`),
    V.h('div', { class: 'note' }, `seed ${ep.seed} · ${ep.actions} actions · policy ${ep.policy} version ${ep.policy_version}` +
      (ep.kept === undefined || data.label !== 'train' ? '' : ep.kept ? ' · the filter kept its group' : ' · the filter dropped its group') +
      (ep.rerender_drift === undefined ? '' : ` · rerender drift ${ep.rerender_drift}`) + (ep.error ? ' · error: ' + ep.error : '')),
    V.h('div', { class: 'toolbar', style: { marginTop: '6px' } },
      V.h('span', { class: 'scale' }, sig.label + ': ', lo, V.h('span', { class: 'bar', style: { background: gradient } }), hi),
      V.h('span', { class: 'note' }, sig.note + ' Entropy per token is not recorded in the run directory, so it cannot be shown.')),
    !data.decoded ? V.h('p', { class: 'note' }, 'The replies are shown as text: ' + (list.tokenizer_error || 'no tokenizer') + '.') : null);

  const turnAt = new Map(ep.turns.map((t, k) => [t.message, [t, k]]));
  const body = ep.messages.map((m, i) => {
    if (m.role !== 'assistant' || !turnAt.has(i)) {
      return V.h('details', { class: 'msg', open: m.role !== 'system' },
        V.h('summary', null, V.h('span', { class: 'role' }, m.role), V.h('span', { class: 'first' }, ' ' + m.content.split('\n')[0].slice(0, 90))), V.h('pre', null, m.content));
    }
    const [t, k] = turnAt.get(i);
    return V.h('div', { class: 'msg turn', 'data-turn': k },
      V.h('div', { class: 'turn-head' }, V.h('span', { class: 'role' }, `assistant · turn ${k + 1}`),
        t.reward === undefined ? null : V.h('span', { class: 'reward', title: t.reward_from_score ? 'the episode\'s score less the rewards before this turn' : 'as the next prompt reports it' },
          `reward ${V.fmt(t.reward)}${t.reward_from_score ? ' (score − earlier rewards)' : ''}`),
        t.invalid ? V.h('span', { class: 'invalid', title: 'the next prompt says the environment took no valid action from this reply' }, 'no valid action') : null,
        V.h('span', null, `${t.ids ? t.ids.length : 0} reply tokens after a prompt of ${t.prompt_tokens}`)),
      V.h('div', { class: 'reply' }, replyTokens(t, m.content, sig, scale)));
  });
  return V.h('div', null, head, body);
}

// replyTokens renders a reply's tokens coloured by a signal, with every
// recorded value in the token's title; without decoded tokens, the text.
function replyTokens(t, text, sig, scale) {
  if (!t.tokens || !t.tokens.length) return text;
  return t.tokens.map((tok, i) => {
    const v = sig.value(t, i);
    const has = v !== null && v !== undefined && Number.isFinite(v);
    const parts = [`id ${t.ids[i]}`];
    if (t.logprob && t.logprob[i] !== null) parts.push(`log-prob ${V.fmt(t.logprob[i])} (p ${Math.exp(t.logprob[i]).toFixed(3)})`);
    if (t.advantage && t.advantage[i] !== null) parts.push(`advantage ${V.fmt(t.advantage[i])}`);
    if (t.old_logprob && t.old_logprob[i] !== null) {
      parts.push(`old log-prob ${V.fmt(t.old_logprob[i])}`);
      if (t.logprob && t.logprob[i] !== null) parts.push(`mismatch ${V.fmt(t.old_logprob[i] - t.logprob[i])}`);
    }
    const shownText = tok.replace(/\n/g, '↵\n') || '\u200b';
    return V.h('span', { class: 'tok', title: parts.join(' · '), style: { background: has ? sig.color(v, scale) : '#eceef2' } }, shownText);
  });
}
