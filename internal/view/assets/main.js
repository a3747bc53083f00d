// main.js: draws the page the address names, and follows the runs' files
// as they change (server-sent events from /api/events).
'use strict';

let renderSeq = 0;
let renders = 0;

// render draws the current page; a newer render supersedes one still
// loading. document.body's data-page and data-renders say what was drawn
// last (for tests, and for whoever reads the DOM).
V.render = async function () {
  const { page, params } = V.route();
  const seq = ++renderSeq;
  const draw = V.pages[page] || V.pages.curves;
  for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', a.dataset.page === page);
  const main = document.getElementById('main');
  // The new page is drawn beside the old one, unseen but laid out (the
  // charts measure their width), and replaces it once drawn.
  const target = V.h('div', { class: 'rendering' });
  main.append(target);
  V.onResize = null;
  V.onChange = null;
  document.getElementById('tooltip').hidden = true;
  try {
    await draw(target, params);
  } catch (e) {
    if (seq === renderSeq) target.replaceChildren(V.h('p', { class: 'error' }, String(e.message || e)));
  }
  if (seq !== renderSeq) {
    target.remove();
    return;
  }
  target.classList.remove('rendering');
  main.replaceChildren(target);
  document.body.dataset.page = page;
  document.body.dataset.renders = String(++renders);
};

// follow listens for changed runs and draws the page again.
function follow() {
  const status = document.getElementById('status');
  if (V.embedded) {
    status.textContent = 'exported ' + V.embedded.exported.replace('T', ' ').replace('Z', ' UTC') + (V.embedded.curves_only ? ' · curves only' : '');
    return;
  }
  const dot = V.h('span', { class: 'dot' });
  const text = V.h('span', null, 'connecting…');
  status.replaceChildren(dot, text);
  const es = new EventSource('api/events');
  es.onopen = () => { dot.classList.add('live'); text.textContent = 'live'; };
  es.onerror = () => { dot.classList.remove('live'); text.textContent = 'reconnecting…'; };
  let pending = null;
  es.addEventListener('change', () => {
    V.cache.clear();
    // Redraw once the burst of writes of a step has settled: what the page
    // asks to be done (V.onChange), or the whole page.
    clearTimeout(pending);
    pending = setTimeout(() => (V.onChange ? V.onChange() : V.render()), 300);
  });
}

window.addEventListener('hashchange', V.render);
let resizeTimer = null;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => V.onResize && V.onResize(), 150);
});
follow();
V.render();
