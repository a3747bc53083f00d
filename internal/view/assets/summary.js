// summary.js: the Summary page: a run's summary as the console prints it
// (validation success against the baselines, with 95% intervals), its
// identity and its resolved config.
'use strict';

V.pages.summary = async function (main, params) {
  const runs = await V.api('/api/runs');
  const run = V.runOf(runs, params.run);
  if (!run) {
    main.replaceChildren(V.h('p', { class: 'note' }, 'No runs.'));
    return;
  }
  const sum = await V.api('/api/summary', { run: run.id });
  const settings = (sum.identity && sum.identity.config) || {};
  const filter = V.h('input', { type: 'search', placeholder: 'filter settings…', size: 24 });
  const table = V.h('table', { class: 'kv identity' });
  const fill = () => {
    const q = filter.value.toLowerCase();
    table.replaceChildren(...Object.keys(settings).sort().filter((k) => !q || k.toLowerCase().includes(q) || String(settings[k]).toLowerCase().includes(q))
      .map((k) => V.h('tr', null, V.h('td', null, k), V.h('td', null, settings[k]))));
  };
  filter.addEventListener('input', fill);
  fill();
  const id = sum.identity || {};
  main.replaceChildren(
    V.h('div', { class: 'toolbar' }, V.runPicker(runs, run.id, (v) => V.go('summary', { run: v }))),
    V.h('h2', null, run.name, ' ', V.h('span', { class: 'badge' + (run.live ? ' running' : '') }, sum.status)),
    V.h('div', { class: 'panel' }, V.h('h3', null, 'Summary'), V.h('pre', { class: 'summary-text' }, sum.text)),
    V.h('div', { style: { display: 'grid', gridTemplateColumns: 'minmax(0, 1fr) minmax(0, 1fr)', gap: '12px', marginTop: '12px' } },
      V.h('div', { class: 'panel' }, V.h('h3', null, 'Identity (run.json)'),
        V.h('p', { class: 'note' }, [id.env ? 'environment ' + id.env : null, id.config_hash ? 'config hash ' + id.config_hash.slice(0, 16) + '…' : null].filter(Boolean).join(' · ') ||
          'The settings that change what the run computes.'),
        filter, V.h('div', { class: 'identity-box' }, table)),
      V.h('div', { class: 'panel' }, V.h('h3', null, 'Resolved config (config.yaml)'), V.h('pre', { class: 'config' }, sum.config_yaml || '(none)'))));
};
