// The console's entry: find out who the credential is, then draw the page
// the URL names, again on every navigation.
import { ApiError, session, setToken, token } from './api.js';
import { h, replace, errorBox } from './dom.js';
import { PREFIX, captureLinks, go, href, parse } from './router.js';
import { consumersPage, consumerPage } from './pages/consumers.js';
import { recordsPage } from './pages/records.js';
import { recordPage } from './pages/record.js';
import { queuePage } from './pages/queue.js';
import { streamsPage, streamPage } from './pages/streams.js';
import { statsPage } from './pages/stats.js';

const pages = {
  consumers: consumersPage,
  consumer: consumerPage,
  records: recordsPage,
  record: recordPage,
  queue: queuePage,
  streams: streamsPage,
  stream: streamPage,
  stats: statsPage,
  notfound: notFoundPage,
};

const main = document.getElementById('main');
let ctx = null; // {auth, identity, build} once signed in
let drawing = 0;
let drawnAt = ''; // the path and query of the page drawn last

// event is the navigation that asked for the page; none on the first load.
async function draw(event) {
  const mine = ++drawing;
  drawnAt = location.pathname + location.search;
  const route = parse(location);
  if (!ctx) {
    try {
      ctx = await session();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        signIn(token() ? err : null);
        return;
      }
      replace(main, errorBox(err));
      return;
    }
    header();
  }
  highlight(route);
  replace(main, h('p', { class: 'loading', role: 'status' }, 'Loading…'));
  const node = h('div', { class: 'page' });
  try {
    await pages[route.page](node, route, ctx);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401 && ctx.auth) {
      ctx = null;
      signIn(err);
      return;
    }
    node.appendChild(errorBox(err));
  }
  if (mine !== drawing) return; // a later navigation drew its own page
  replace(main, node);
  const title = node.querySelector('h1');
  document.title = `${title ? title.textContent : 'dedupd'} · dedupd console`;
  // The link or button that navigated is gone with the old page: the
  // keyboard carries on from the new page's top, not from the document's.
  if (event) {
    main.focus({ preventScroll: true });
    if (event.type === 'console:navigate') window.scrollTo(0, 0);
  }
}

function signIn(err) {
  replace(document.getElementById('nav'));
  replace(document.getElementById('who'));
  const input = h('input', {
    id: 'token', type: 'password', name: 'token', autocomplete: 'off', required: true, spellcheck: 'false',
  });
  const form = h('form', { class: 'signin', on: { submit: async (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    ctx = null;
    await draw(e);
  } } },
  h('h1', null, 'Sign in'),
  h('p', null, 'This dedupd needs a credential. Paste a token from its --auth-tokens file. ',
    'It is kept in this browser tab only (sessionStorage) and sent to this server alone.'),
  err ? errorBox(err) : null,
  h('label', { for: 'token' }, 'Token'), input,
  h('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  replace(main, form);
  document.title = 'Sign in · dedupd console';
  input.focus();
}

function header() {
  const nav = document.getElementById('nav');
  replace(nav,
    h('a', { href: PREFIX, 'data-page': 'consumers' }, 'Consumers'),
    h('a', { href: href(['queue']), 'data-page': 'queue' }, 'Reconciliation queue'),
    h('a', { href: href(['stats']), 'data-page': 'stats' }, 'Stats'));
  const id = ctx.identity;
  const role = id.admin ? 'admin' : 'read and work only';
  const scope = id.consumers.includes('*') ? 'every consumer' : id.consumers.join(', ');
  replace(document.getElementById('who'),
    h('span', { title: `consumers: ${scope}` }, id.name, ' · ', role),
    ctx.auth ? h('button', { type: 'button', class: 'link', on: { click: signOut } }, 'Sign out') : null);
}

function highlight(route) {
  const section = route.page === 'queue' || route.page === 'stats' ? route.page : 'consumers';
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.page === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

function signOut() {
  setToken('');
  ctx = null;
  go(PREFIX);
}

async function notFoundPage(node) {
  node.append(h('h1', null, 'No such page'),
    h('p', null, 'The console has no page at this address. ', h('a', { href: PREFIX }, 'Go to the consumers')));
}

captureLinks(document);
// A jump within the page (the skip link) fires popstate too; only a new
// path or query is a new page.
window.addEventListener('popstate', (e) => {
  if (location.pathname + location.search !== drawnAt) draw(e);
});
window.addEventListener('console:navigate', draw);
draw();
