// toolgate dashboard. Plain JavaScript, no build step, nothing fetched from
// elsewhere: every request goes to this gateway's /ui/api/ with the operator's
// key in an Authorization header (never in a URL, never in a cookie).
'use strict';

const KEY_STORE = 'toolgate.dashboard.key';
const STATES = ['prepared', 'pending', 'awaiting_approval', 'running', 'succeeded', 'rejected', 'unknown'];
const SVG_NS = 'http://www.w3.org/2000/svg';

let registryCache = null;
let whoami = null; // the signed-in key: {name, tenant, role, auth}
let refreshTimer = null;
let routeSeq = 0;

// ---- small DOM helpers (text only: data never becomes markup) ----

function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  setAttrs(n, attrs);
  append(n, children);
  return n;
}

function svg(tag, attrs, ...children) {
  const n = document.createElementNS(SVG_NS, tag);
  setAttrs(n, attrs);
  append(n, children);
  return n;
}

function setAttrs(n, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(n, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// fill replaces a node's children, skipping the parts a page leaves out.
function fill(node, ...parts) {
  node.replaceChildren(...parts.flat().filter(p => p !== null && p !== undefined && p !== false));
}

// ---- text people typed (assignees, notes, reasons): shown as what it holds ----

// HIDDEN is internal/textsafe's rule: a character that does not show as
// itself (a control, a format character — bidi overrides, isolates and
// marks, zero-width spaces and joiners —, a line or paragraph separator,
// any space but U+0020, a surrogate, a private-use or unassigned code
// point, a Hangul filler).
const HIDDEN = /[\p{C}\p{Z}\u115F\u1160\u3164\uFFA0]/gu;
const SHORT_ESCAPES = { '\x07': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v' };

// escapeHidden writes every hidden character of s as its Go escape (\u202e),
// as the CLI does; lines keeps newlines and tabs.
function escapeHidden(s, lines) {
  return String(s).replace(HIDDEN, c => {
    if (c === ' ' || (lines && (c === '\n' || c === '\t'))) return c;
    if (SHORT_ESCAPES[c]) return SHORT_ESCAPES[c];
    const cp = c.codePointAt(0);
    if (cp < 0x80) return '\\x' + cp.toString(16).padStart(2, '0');
    if (cp <= 0xFFFF) return '\\u' + cp.toString(16).padStart(4, '0');
    return '\\U' + cp.toString(16).padStart(8, '0');
  });
}

// userText is text people typed, escaped (escapeHidden) and isolated from
// the text around it (<bdi dir="auto">), so that no part of it can reorder
// or hide what stands beside it.
function userText(s, lines) {
  return el('bdi', { dir: 'auto', class: 'user-text' }, escapeHidden(s, lines));
}

function badge(state) { return el('span', { class: 'badge state-' + state, 'data-state': state }, state); }
function utc(t) { return t ? new Date(t).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z') : ''; }
function hms(t) { return new Date(t).toISOString().slice(11, 19); }
function pretty(v) { return v === undefined || v === null ? '' : JSON.stringify(v, null, 2); }
function actionLink(id) { return el('a', { href: '#/actions/' + encodeURIComponent(id), class: 'mono action-link' }, id); }

function age(t) {
  if (!t) return '';
  const s = Math.max(0, Math.round((Date.now() - new Date(t).getTime()) / 1000));
  if (s < 90) return s + ' s';
  if (s < 5400) return Math.round(s / 60) + ' min';
  return Math.round(s / 3600) + ' h';
}

// uid is a fresh element id, for a <label for> to name its control (a page
// can show the same controls once per row).
let uidSeq = 0;
function uid(prefix) { return prefix + '-' + (++uidSeq); }

function flash(text, isError) {
  const box = document.getElementById('flash');
  box.replaceChildren(el('div', { class: 'msg' + (isError ? ' error' : ''), id: 'flash-msg' }, text));
}

// ---- the API ----

class APIError extends Error {
  constructor(status, problem) {
    super(problem && (problem.detail || problem.title) || ('HTTP ' + status));
    this.status = status;
    this.problem = problem;
  }
}

async function api(method, path, body) {
  const headers = { 'Accept': 'application/json', 'X-Toolgate-Dashboard': '1' };
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) headers['Authorization'] = 'Bearer ' + key;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const resp = await fetch('/ui/api' + path, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit', cache: 'no-store', redirect: 'error',
  });
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!resp.ok) {
    if (resp.status === 401) showLogin('The key was refused; sign in again.');
    throw new APIError(resp.status, data);
  }
  return data;
}

// ---- sign in ----

function showLogin(message) {
  stopRefresh();
  document.getElementById('loading').hidden = true;
  document.getElementById('nav').hidden = true;
  document.getElementById('signout').hidden = true;
  document.getElementById('who').textContent = '';
  document.getElementById('page').replaceChildren();
  document.getElementById('login').hidden = false;
  document.getElementById('login-error').textContent = message || '';
  document.getElementById('key').focus();
}

async function signIn(e) {
  e.preventDefault();
  const input = document.getElementById('key');
  sessionStorage.setItem(KEY_STORE, input.value.trim());
  input.value = '';
  await boot();
}

async function boot() {
  let me;
  try {
    me = await api('GET', '/whoami');
  } catch (err) {
    if (err.status === 403) {
      sessionStorage.removeItem(KEY_STORE);
      showLogin('That key is not an operator key: ' + err.message);
    } else if (err.status !== 401) {
      showLogin('The gateway did not answer: ' + err.message);
    } else if (sessionStorage.getItem(KEY_STORE)) {
      sessionStorage.removeItem(KEY_STORE);
      showLogin('The key was refused.');
    } else {
      showLogin('');
    }
    return;
  }
  whoami = me;
  document.getElementById('loading').hidden = true;
  document.getElementById('login').hidden = true;
  document.getElementById('nav').hidden = false;
  document.getElementById('signout').hidden = !me.auth;
  document.getElementById('who').textContent = me.name + ' · tenant ' + me.tenant + (me.auth ? '' : ' · no auth (loopback)');
  route();
}

function signOut() {
  sessionStorage.removeItem(KEY_STORE);
  registryCache = null;
  showLogin('Signed out.');
}

// ---- routing: #/page/arg?query ----

function parseHash() {
  const h = location.hash.replace(/^#\/?/, '');
  const [p, q] = h.split('?');
  const parts = p.split('/').map(decodeURIComponent);
  return { page: parts[0] || 'actions', arg: parts.slice(1).join('/'), query: new URLSearchParams(q || '') };
}

// route renders the page the fragment names. Each page is built off-screen
// and shown only if no later navigation started meanwhile, so a slow answer
// for a page the operator already left never replaces the current one.
async function route() {
  if (!document.getElementById('login').hidden) return;
  stopRefresh();
  const seq = ++routeSeq;
  const { page, arg, query } = parseHash();
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('current', a.dataset.page === page);
  }
  document.getElementById('page').setAttribute('aria-busy', 'true');
  const root = el('section', { id: 'page', 'data-page': page, 'aria-busy': 'false' });
  let refresh = null;
  try {
    switch (page) {
      case 'actions': await (arg ? pageAction(root, arg) : pageActions(root, query)); break;
      case 'unknown': await pageUnknown(root); break;
      case 'approvals': await pageApprovals(root); break;
      case 'health': refresh = await pageHealth(root, query); break;
      case 'registry': await pageRegistry(root, arg, query); break;
      case 'status': refresh = await pageStatus(root); break;
      default: fill(root, el('p', { class: 'error' }, 'No page ' + page));
    }
  } catch (err) {
    if (err.status === 401) return;
    fill(root, el('p', { class: 'error' }, 'Could not load: ' + err.message));
  }
  if (seq !== routeSeq || !document.getElementById('login').hidden) return;
  document.getElementById('page').replaceWith(root);
  if (refresh) refreshTimer = setInterval(() => { refresh().catch(() => {}); }, 5000);
}

function stopRefresh() {
  if (refreshTimer) clearInterval(refreshTimer);
  refreshTimer = null;
}

async function registry() {
  if (!registryCache) registryCache = await api('GET', '/registry');
  return registryCache;
}

// ---- operator actions ----

async function operate(id, op, body) {
  try {
    const rec = await api('POST', '/actions/' + encodeURIComponent(id) + '/' + op, body || {});
    if (op === 'assign' || op === 'unassign') {
      flash(op + ' ' + id + ': ' + (rec.assignee ? 'assigned to ' + escapeHidden(rec.assignee) : 'nobody is assigned') + '; the action is still ' + rec.state + '.');
    } else {
      flash(op + ' ' + id + ': the action is now ' + rec.state + '.');
    }
  } catch (err) {
    flash(op + ' ' + id + ' failed: ' + escapeHidden(err.message), true);
  }
  await route();
}

function resolveControls(id) {
  const outcome = el('select', { class: 'resolve-outcome', 'aria-label': 'outcome' },
    el('option', { value: '' }, 'outcome…'),
    el('option', { value: 'succeeded' }, 'succeeded'),
    el('option', { value: 'rejected' }, 'rejected'),
    el('option', { value: 'not_started' }, 'not_started (run again)'));
  const noteID = uid('resolve-note');
  const note = el('input', { class: 'resolve-note', id: noteID, placeholder: 'what you verified', size: 24, maxlength: 1024 });
  const btn = el('button', {
    class: 'primary resolve', type: 'button', 'data-action': id,
    onclick: () => {
      if (!outcome.value) { flash('Choose the outcome you verified for ' + id + ' before resolving it.', true); return; }
      btn.disabled = true;
      operate(id, 'resolve', { outcome: outcome.value, note: note.value });
    },
  }, 'Resolve');
  return el('div', { class: 'ops' }, outcome, el('span', { class: 'labelled' }, el('label', { for: noteID, class: 'note-label' }, 'Resolve note (why)'), note), btn);
}

function reconcileButton(id) {
  const btn = el('button', {
    class: 'reconcile', type: 'button', 'data-action': id,
    onclick: () => { btn.disabled = true; operate(id, 'reconcile'); },
  }, 'Reconcile now');
  return btn;
}

function decisionControls(id) {
  const noteID = uid('decision-note');
  const note = el('input', { class: 'decision-note', id: noteID, placeholder: 'why', size: 20, maxlength: 1024 });
  const approve = el('button', {
    class: 'good approve', type: 'button', 'data-action': id,
    onclick: () => { approve.disabled = deny.disabled = true; operate(id, 'approve', { note: note.value }); },
  }, 'Approve');
  const deny = el('button', {
    class: 'bad deny', type: 'button', 'data-action': id,
    onclick: () => { approve.disabled = deny.disabled = true; operate(id, 'deny', { note: note.value }); },
  }, 'Deny');
  return el('div', { class: 'ops' }, el('span', { class: 'labelled' }, el('label', { for: noteID, class: 'note-label' }, 'Approve / deny note'), note), approve, deny);
}

// assignControls takes an action for the signed-in operator, releases it
// when it is theirs, or takes it over from another assignee. An assignment is
// information, not a lock: the other controls stay usable whoever holds it.
function assignControls(a) {
  const id = a.action_id;
  const mine = whoami && a.assignee === whoami.name;
  const noteID = uid('assign-note');
  const note = el('input', { class: 'assign-note', id: noteID, placeholder: 'why', size: 16, maxlength: 1024 });
  const btns = [];
  const press = (op, body) => { for (const b of btns) b.disabled = true; operate(id, op, Object.assign({ note: note.value }, body)); };
  if (!a.assignee) {
    btns.push(el('button', { class: 'assign', type: 'button', 'data-action': id, onclick: () => press('assign', {}) }, 'Assign to me'));
  } else if (mine) {
    btns.push(el('button', { class: 'unassign', type: 'button', 'data-action': id, onclick: () => press('unassign', {}) }, 'Release'));
  } else {
    btns.push(el('button', { class: 'assign', type: 'button', 'data-action': id, onclick: () => press('assign', {}) }, 'Assign to me'),
      el('button', { class: 'take-over', type: 'button', 'data-action': id, onclick: () => press('assign', { take_over: true }) }, 'Take over'));
  }
  return el('div', { class: 'ops assign-ops' }, el('span', { class: 'labelled' }, el('label', { for: noteID, class: 'note-label' }, 'Assignment note'), note), btns);
}

// assigneeText is who works an action, and since when (in full on the
// action's page, as an age in the queues).
function assigneeText(a, full) {
  if (!a.assignee) return el('span', { class: 'muted assignee' }, 'nobody');
  return el('span', { class: 'assignee', title: 'since ' + utc(a.assigned_at) }, el('strong', {}, userText(a.assignee)),
    el('span', { class: 'muted' }, full ? ' since ' + utc(a.assigned_at) : ' for ' + age(a.assigned_at)));
}

// assignmentEntry is a timeline entry for an assignment change.
function assignmentEntry(t) {
  const ch = t.assignment;
  const what = !ch.assignee ? ['Released by ', el('strong', {}, userText(ch.previous || ''))]
    : ch.previous ? ['Taken over by ', el('strong', {}, userText(ch.assignee)), ' from ', el('strong', {}, userText(ch.previous))]
      : ['Assigned to ', el('strong', {}, userText(ch.assignee))];
  return el('li', { class: 'assignment-change' },
    el('div', {}, what, el('span', { class: 'muted' }, ' by '), el('span', { class: 'mono' }, userText(t.by))),
    ch.note ? el('div', { class: 'note' }, 'note: ', userText(ch.note)) : null,
    el('div', { class: 'when' }, utc(t.at)));
}

// ---- pages ----

async function pageActions(root, query) {
  const reg = await registry();
  const params = new URLSearchParams();
  for (const k of ['state', 'tool_id', 'policy_version', 'correlation_id', 'cursor']) if (query.get(k)) params.set(k, query.get(k));
  params.set('limit', '50');
  const list = await api('GET', '/actions?' + params);

  const state = el('select', { id: 'filter-state', 'aria-label': 'state' }, el('option', { value: '' }, 'any state'),
    STATES.map(s => el('option', { value: s, selected: s === query.get('state') }, s)));
  const tool = el('select', { id: 'filter-tool', 'aria-label': 'tool' }, el('option', { value: '' }, 'any tool'),
    reg.tools.map(t => el('option', { value: t.tool_id, selected: t.tool_id === query.get('tool_id') }, t.tool_id)));
  // A rule's firing and the calls it caused are one query (docs/reference/files.md).
  const policy = el('input', { id: 'filter-policy', 'aria-label': 'policy version', placeholder: 'policy version',
    value: query.get('policy_version') || '', size: 16 });
  const corr = el('input', { id: 'filter-correlation', 'aria-label': 'correlation id', placeholder: 'correlation id',
    value: query.get('correlation_id') || '', size: 20 });
  const apply = () => {
    const q = new URLSearchParams();
    if (state.value) q.set('state', state.value);
    if (tool.value) q.set('tool_id', tool.value);
    if (policy.value.trim()) q.set('policy_version', policy.value.trim());
    if (corr.value.trim()) q.set('correlation_id', corr.value.trim());
    location.hash = '#/actions' + (q.toString() ? '?' + q : '');
  };
  state.addEventListener('change', apply);
  tool.addEventListener('change', apply);
  policy.addEventListener('change', apply);
  corr.addEventListener('change', apply);

  const rows = list.actions.map(a => el('tr', { 'data-action': a.action_id },
    el('td', {}, actionLink(a.action_id)), el('td', { class: 'mono' }, a.tool_id),
    el('td', {}, a.version || ''), el('td', {}, badge(a.state), a.needs_operator ? el('span', { class: 'flag' }, ' needs operator') : ''),
    el('td', {}, a.attempts), el('td', {}, a.owner || ''), el('td', { class: 'assignee' }, a.assignee ? userText(a.assignee) : ''),
    el('td', { class: 'age', title: 'created ' + utc(a.created_at) }, age(a.created_at)), el('td', { class: 'muted' }, utc(a.updated_at))));
  let next = null;
  if (list.next_cursor) {
    const q = new URLSearchParams(query);
    q.set('cursor', list.next_cursor);
    next = el('p', {}, el('a', { href: '#/actions?' + q, id: 'next-page' }, 'Next page →'));
  }
  fill(root, 
    el('h1', {}, 'Actions'),
    el('div', { class: 'filters' }, 'Filter:', state, tool, policy, corr),
    rows.length ? el('table', { id: 'actions' },
      el('thead', {}, el('tr', {}, ['Action', 'Tool', 'Version', 'State', 'Attempts', 'Owner', 'Assignee', 'Age', 'Updated'].map(h => el('th', {}, h)))),
      el('tbody', {}, rows)) : el('p', { class: 'muted' }, 'No actions match.'),
    next);
}

async function pageAction(root, id) {
  const a = await api('GET', '/actions/' + encodeURIComponent(id));
  const ops = [];
  if (a.state === 'unknown') ops.push(reconcileButton(a.action_id), resolveControls(a.action_id));
  if (a.state === 'pending' && a.attempts > 0) ops.push(resolveControls(a.action_id));
  if (a.state === 'awaiting_approval') ops.push(decisionControls(a.action_id));
  if (a.state === 'unknown' || a.state === 'awaiting_approval') ops.push(assignControls(a));

  const dl = el('dl', { class: 'summary' });
  const add = (k, v) => { if (v !== '' && v !== undefined && v !== null) dl.append(el('dt', {}, k), el('dd', {}, v)); };
  add('State', [badge(a.state), a.needs_operator ? el('span', { class: 'flag' }, ' needs operator') : '']);
  add('Tool', el('span', { class: 'mono' }, a.tool_id + (a.version ? ' @ ' + a.version : '')));
  add('Tenant', a.tenant);
  add('Owner', el('span', { id: 'owner' }, a.owner || '–'));
  add('Assignee', el('span', { id: 'assignee' }, assigneeText(a, true)));
  add('Attempts', String(a.attempts));
  add('Digest', el('span', { class: 'mono', id: 'digest' }, a.args_digest || '(no arguments bound)'));
  add('Downstream key', a.downstream_key ? el('span', { class: 'mono', id: 'downstream-key', title: 'search the downstream by this key' }, a.downstream_key) : '');
  add('Correlation', a.correlation_id);
  add('Scope', a.scope);
  add('Policy version', a.policy_version);
  add('Created', utc(a.created_at));
  add('Updated', utc(a.updated_at));
  add('Last sent', utc(a.last_sent_at));
  add('Unknown since', utc(a.unknown_since));

  const timeline = el('ol', { class: 'timeline', id: 'timeline' }, (a.history || []).map(t =>
    t.provider_transition ? providerTransition(t) : t.assignment ? assignmentEntry(t) : el('li', { class: 'to-' + t.to },
      el('div', {}, t.from ? badge(t.from) : el('span', { class: 'muted' }, 'new'), ' → ', badge(t.to)),
      el('div', {}, userText(t.reason || ''), el('span', { class: 'muted' }, ' by '), el('span', { class: 'mono' }, userText(t.by || ''))),
      el('div', { class: 'when' }, utc(t.at)))));

  const calls = a.provider_calls.length ? el('table', { id: 'provider-calls' },
    el('thead', {}, el('tr', {}, ['Provider', 'Route', 'Call id', 'At'].map(h => el('th', {}, h)))),
    el('tbody', {}, a.provider_calls.map(c => el('tr', {}, el('td', {}, c.name || ''), el('td', {}, c.route || ''),
      el('td', { class: 'mono' }, c.call_id || ''), el('td', { class: 'muted' }, utc(c.at))))))
    : el('p', { class: 'muted' }, 'No provider-call evidence was sent with this action.');

  let result = el('p', { class: 'muted' }, 'No result stored yet.');
  if (a.result) {
    result = el('div', { id: 'result' }, el('p', {}, 'HTTP ', el('strong', {}, a.result.status_code), ' ',
      el('span', { class: 'muted' }, a.result.content_type || '')),
      el('pre', {}, a.result.body_base64 ? '(binary, base64) ' + a.result.body_base64
        : typeof a.result.body === 'string' ? a.result.body : pretty(a.result.body)));
  }
  const hidden = [...(a.masked || []), ...(a.erased || [])];
  fill(root, 
    el('h1', {}, 'Action ', el('span', { class: 'mono', id: 'action-id' }, a.action_id)),
    el('div', { class: 'card' }, dl),
    ops.length ? el('div', { class: 'card ops', id: 'ops' }, el('strong', {}, 'Operator:'), ops) : null,
    el('h2', {}, 'History'), el('div', { class: 'card' }, timeline),
    el('h2', {}, 'Provider calls'), calls,
    el('h2', {}, 'Arguments'), a.arguments ? el('pre', { id: 'arguments' }, pretty(a.arguments)) : el('p', { class: 'muted' }, 'None bound.'),
    hidden.length ? el('p', { class: 'muted' }, 'Masked or erased (x-sensitive): ', hidden.join(', ')) : null,
    el('h2', {}, 'Result'), result);
}

// routeName is "openai / primary" for a provider route.
function routeName(r) {
  const parts = [r && r.name, r && r.route].filter(Boolean);
  return parts.length ? parts.join(' / ') : '(none)';
}

// providerTransition is a timeline entry for a change of model route: the
// prior route, the new one, the action's state then and the call's reason.
function providerTransition(t) {
  const pt = t.provider_transition;
  return el('li', { class: 'provider-transition' },
    el('div', {}, el('strong', {}, 'Provider route changed'), el('span', { class: 'muted' }, ' while '), badge(pt.action_state)),
    el('div', {}, el('span', { class: 'mono route-from' }, routeName(pt.from)), ' → ', el('span', { class: 'mono route-to' }, routeName(pt.to))),
    pt.reason ? el('div', { class: 'route-reason' }, userText(pt.reason)) : null,
    el('div', { class: 'when' }, utc(t.at)));
}

async function pageUnknown(root) {
  const list = await api('GET', '/actions?state=unknown&limit=200');
  const rows = list.actions.map(a => el('tr', { 'data-action': a.action_id },
    el('td', {}, actionLink(a.action_id)), el('td', { class: 'mono' }, a.tool_id),
    el('td', {}, age(a.unknown_since), el('div', { class: 'muted' }, utc(a.unknown_since))),
    el('td', {}, a.attempts), el('td', {}, a.needs_operator ? el('span', { class: 'flag' }, 'yes') : 'no'),
    el('td', { class: 'owner' }, a.owner || '–'), el('td', {}, assigneeText(a)),
    el('td', {}, el('div', { class: 'ops' }, reconcileButton(a.action_id), resolveControls(a.action_id)), assignControls(a))));
  fill(root, 
    el('h1', {}, 'Unknown actions ', el('span', { class: 'badge state-unknown', id: 'unknown-count' }, list.actions.length)),
    el('p', { class: 'muted' }, 'Their downstream effect may or may not exist. Reconcile runs the lookup now; resolve records what you verified by hand (not_started lets the action run again with the same key). Assign one to yourself so others know you work it: an assignment is information, not a lock.'),
    rows.length ? el('table', { id: 'unknown-queue' },
      el('thead', {}, el('tr', {}, ['Action', 'Tool', 'Unknown for', 'Attempts', 'Needs operator', 'Owner', 'Assignee', ''].map(h => el('th', {}, h)))),
      el('tbody', {}, rows)) : el('p', { class: 'muted', id: 'unknown-empty' }, 'Nothing is unknown.'),
    list.next_cursor ? el('p', { class: 'muted' }, 'Showing the first ' + rows.length + '; resolve these, or use Actions filtered by state unknown, to see the rest.') : null);
}

async function pageApprovals(root) {
  const list = await api('GET', '/actions?state=awaiting_approval&limit=200');
  const rows = list.actions.map(a => {
    const args = el('pre', { class: 'args' }, '…');
    api('GET', '/actions/' + encodeURIComponent(a.action_id))
      .then(full => { args.textContent = JSON.stringify(full.arguments); })
      .catch(err => { args.textContent = err.message; });
    return el('tr', { 'data-action': a.action_id },
      el('td', {}, actionLink(a.action_id)), el('td', { class: 'mono' }, a.tool_id, a.version ? ' @ ' + a.version : ''),
      el('td', {}, args), el('td', {}, age(a.updated_at)), el('td', {}, a.owner || '–'), el('td', {}, assigneeText(a)),
      el('td', {}, decisionControls(a.action_id), assignControls(a)));
  });
  fill(root, 
    el('h1', {}, 'Waiting for approval ', el('span', { class: 'badge state-awaiting_approval' }, list.actions.length)),
    el('p', { class: 'muted' }, 'Approving runs the action at once, through the ledger; denying answers its callers 403 action_denied.'),
    rows.length ? el('table', { id: 'approvals-queue' },
      el('thead', {}, el('tr', {}, ['Action', 'Tool', 'Arguments', 'Waiting', 'Owner', 'Assignee', ''].map(h => el('th', {}, h)))),
      el('tbody', {}, rows)) : el('p', { class: 'muted', id: 'approvals-empty' }, 'Nothing is waiting.'),
    list.next_cursor ? el('p', { class: 'muted' }, 'Showing the first ' + rows.length + '; use Actions filtered by state awaiting_approval to see the rest.') : null);
}

const WINDOWS = [
  { window: 30, step: 1, label: 'last 30 seconds, per second' },
  { window: 120, step: 1, label: 'last 2 minutes, per second' },
  { window: 900, step: 10, label: 'last 15 minutes, per 10 s' },
  { window: 3600, step: 60, label: 'last hour, per minute' },
];

async function pageHealth(root, query) {
  const window_ = Number(query.get('window')) || 900;
  const step = Number(query.get('step')) || 10;
  const pick = el('select', { id: 'window', 'aria-label': 'window' }, WINDOWS.map(w =>
    el('option', { value: w.window + '/' + w.step, selected: w.window === window_ && w.step === step }, w.label)));
  pick.addEventListener('change', () => {
    const [w, s] = pick.value.split('/');
    location.hash = '#/health?window=' + w + '&step=' + s;
  });
  const holder = el('div', { id: 'chart-holder' });
  const totals = el('div', { class: 'totals', id: 'totals' });
  fill(root, 
    el('h1', {}, 'Conflicts and invalid arguments next to call volume'),
    el('p', { class: 'muted' }, 'Every tool call this gateway handled for your tenant (kept in memory for an hour; a restart starts empty). ' +
      'Conflicts are 409 answers; a rising share usually means agents reuse an idempotency key for a new action. ' +
      'Invalid arguments are 422 invalid_arguments answers; a rising rate is an early sign of an agent out of step with a contract.'),
    el('div', { class: 'filters' }, pick),
    totals, el('div', { class: 'legend', id: 'legend' }, el('span', { class: 'l-calls' }, 'calls'),
      el('span', { class: 'l-conflicts' }, 'conflicts (409)'), el('span', { class: 'l-invalid' }, 'invalid arguments (422)'),
      el('span', { class: 'l-share' }, 'conflict share (right axis)'), el('span', { class: 'l-invalid-share' }, '422 share (right axis)')),
    holder);
  const draw = async () => {
    const s = await api('GET', '/series?window=' + window_ + '&step=' + step);
    const t = s.totals;
    const pct = n => t.calls ? (100 * n / t.calls).toFixed(1) + ' %' : '–';
    totals.replaceChildren(
      el('div', {}, el('strong', { id: 'total-calls' }, t.calls), 'calls'),
      el('div', {}, el('strong', { id: 'total-conflicts' }, t.conflicts), 'conflicts'),
      el('div', {}, el('strong', { id: 'conflict-share' }, pct(t.conflicts)), 'conflict share'),
      el('div', {}, el('strong', { id: 'total-invalid' }, t.invalid_arguments), 'invalid arguments (422)'),
      el('div', {}, el('strong', { id: 'invalid-share' }, pct(t.invalid_arguments)), '422 rate'),
      el('div', {}, el('strong', {}, t.key_reused), 'key reused with other arguments'),
      el('div', {}, el('strong', {}, t.unknown), 'outcome unknown'));
    holder.replaceChildren(chart(s));
  };
  await draw();
  return draw;
}

// niceMax rounds a maximum up so that four grid steps are round numbers.
function niceMax(v) {
  if (v <= 4) return 4;
  if (v <= 20) return Math.ceil(v / 4) * 4;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 4, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// chart draws the series as an SVG: calls as grey bars, the conflicts among
// them as red bars on the same axis with the invalid-argument answers (422)
// as amber bars stacked on them, and the conflict and 422 shares as lines.
function chart(s) {
  const W = 960, H = 300, L = 48, R = 48, T = 14, B = 34;
  const pw = W - L - R, ph = H - T - B;
  const n = s.points.length;
  const ymax = niceMax(Math.max(1, ...s.points.map(p => p.calls)));
  const bw = pw / n;
  const y = v => T + ph - (v / ymax) * ph;
  const g = svg('svg', { id: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-label': 'calls, idempotency conflicts and invalid arguments per ' + s.step_seconds + ' s' });
  for (let i = 0; i <= 4; i++) {
    const v = ymax * i / 4, yy = y(v);
    g.append(svg('line', { class: 'grid', x1: L, x2: W - R, y1: yy, y2: yy }),
      svg('text', { x: L - 6, y: yy + 4, 'text-anchor': 'end' }, Math.round(v)),
      svg('text', { x: W - R + 6, y: yy + 4 }, (25 * i) + '%'));
  }
  const share = [], invalidShare = [];
  s.points.forEach((p, i) => {
    const x = L + i * bw, w = Math.max(1, bw - (bw > 4 ? 1 : 0));
    const inv = p.invalid_arguments || 0;
    const label = hms(p.start) + ' UTC: ' + p.calls + ' calls, ' + p.conflicts + ' conflicts, ' + inv + ' invalid arguments';
    if (p.calls) g.append(svg('rect', { class: 'bar-calls', x, y: y(p.calls), width: w, height: ph - (y(p.calls) - T) }, svg('title', {}, label)));
    if (p.conflicts) g.append(svg('rect', { class: 'bar-conflicts', x, y: y(p.conflicts), width: w, height: ph - (y(p.conflicts) - T) }, svg('title', {}, label)));
    if (inv) g.append(svg('rect', { class: 'bar-invalid', x, y: y(p.conflicts + inv), width: w, height: y(p.conflicts) - y(p.conflicts + inv) }, svg('title', {}, label)));
    if (p.calls) {
      share.push([x + w / 2, T + ph - (p.conflicts / p.calls) * ph]);
      invalidShare.push([x + w / 2, T + ph - (inv / p.calls) * ph]);
    }
  });
  if (share.length > 1) g.append(svg('polyline', { class: 'share', points: share.map(p => p.join(',')).join(' ') }));
  for (const [cx, cy] of share) g.append(svg('circle', { class: 'share-dot', cx, cy, r: 2.5 }));
  if (invalidShare.length > 1) g.append(svg('polyline', { class: 'invalid-share', points: invalidShare.map(p => p.join(',')).join(' ') }));
  g.append(svg('line', { class: 'axis', x1: L, x2: W - R, y1: T + ph, y2: T + ph }));
  const ticks = 6;
  for (let i = 0; i <= ticks; i++) {
    const idx = Math.min(n - 1, Math.round(i * n / ticks));
    g.append(svg('text', { x: L + idx * bw + bw / 2, y: H - B + 16, 'text-anchor': 'middle' }, hms(s.points[idx].start)));
  }
  g.append(svg('text', { x: L, y: H - 4 }, 'UTC, ' + s.step_seconds + ' s per bar'));
  return g;
}

// ---- status: the gateway's health and the rollouts of every tool ----

function okBadge(ok, good, bad) {
  return el('span', { class: 'badge ' + (ok ? 'ok' : 'not-ok'), 'data-ok': ok ? 'true' : 'false' }, ok ? good : bad);
}

// healthCards is the health summary: what /readyz and the metrics know.
function healthCards(st) {
  const row = (id, name, badgeNode, ...detail) => el('tr', { id },
    el('th', {}, name), el('td', {}, badgeNode), el('td', { class: 'detail' }, detail));
  const rel = st.reconciler;
  const tr = st.tools_reload;
  return el('table', { id: 'health-summary' }, el('tbody', {},
    row('h-ledger', 'Ledger', okBadge(st.ledger.reachable, 'reachable', 'unreachable'),
      st.ledger.reachable ? (st.ledger.durability || []).join('; ') : st.ledger.detail),
    row('h-reconciler', 'Reconciler', okBadge(rel.running, 'running', 'not running'),
      rel.running ? (rel.last_step_at ? 'last step ' + age(rel.last_step_at) + ' ago (' + utc(rel.last_step_at) + ')' : 'no step settled yet') : 'no reconciler reports to this gateway',
      rel.errors ? el('span', { class: 'flag' }, ' · ' + rel.errors + ' failed steps') : ''),
    row('h-reload', 'Last tools reload', okBadge(tr.ok, 'ok', 'failed'),
      tr.ok ? 'tools loaded ' + utc(tr.loaded_at) : ['failed ' + utc(tr.failed_at) + ', serving the tools loaded ' + utc(tr.loaded_at) + ': ', el('span', { class: 'mono' }, tr.failure)]),
    row('h-drift', 'Upstream drift', okBadge(!st.upstream_drift.length, 'none', st.upstream_drift.length + ' stopped'),
      st.upstream_drift.map(d => el('div', { 'data-tool': d.tool_id }, el('span', { class: 'mono' }, d.tool_id), ': ', d.reason))),
    row('h-dlog', 'Decision log', okBadge(!st.decision_log.dropped, 'no drops', st.decision_log.dropped + ' dropped'),
      st.decision_log.dropped ? 'records dropped since the gateway started (toolgate_decision_log_dropped_total)' : '')));
}

// sunsetText says when a deprecated version stops taking new actions.
function sunsetText(v) {
  if (v.retired) return 'retired';
  if (!v.sunset) return 'deprecated';
  const days = Math.ceil((new Date(v.sunset).getTime() - Date.now()) / 86400000);
  return 'sunset ' + utc(v.sunset) + (days >= 0 ? ' (in ' + days + ' d)' : '');
}

// rolloutsOverview is every tool's rollout in one table, with the counts an
// operator scans for: canaries running, halted, deprecations and sunsets.
function rolloutsOverview(ro) {
  const rs = ro.rollouts;
  const count = m => rs.filter(r => r.mode === m).length;
  const deprecated = rs.flatMap(r => r.versions.filter(v => v.deprecated && !v.retired).map(v => ({ r, v })));
  const soon = deprecated.filter(({ v }) => v.sunset && new Date(v.sunset).getTime() - Date.now() < 30 * 86400000).length;
  const retired = rs.flatMap(r => r.versions.filter(v => v.retired)).length;
  const tally = (id, n, label) => el('div', {}, el('strong', { id }, n), label);
  return [
    el('div', { class: 'totals', id: 'rollout-counts' },
      tally('n-canary', count('canary'), 'canaries running'), tally('n-halted', count('halted'), 'halted'),
      tally('n-shadow', count('shadow'), 'in shadow'), tally('n-deprecated', deprecated.length, 'deprecated versions'),
      tally('n-sunset-soon', soon, 'sunsets within 30 days'), tally('n-retired', retired, 'retired')),
    rs.length ? el('table', { id: 'rollouts-overview' },
      el('thead', {}, el('tr', {}, ['Tool', 'Mode', 'Default', 'Candidate', 'Canary', 'Deprecations', 'Changed'].map(h => el('th', {}, h)))),
      el('tbody', {}, rs.map(r => el('tr', { 'data-tool': r.tool_id, 'data-mode': r.mode },
        el('td', {}, el('a', { href: '#/registry/' + encodeURIComponent(r.tool_id), class: 'mono' }, r.tool_id)),
        el('td', { class: 'mode' }, el('span', { class: 'badge rollout-' + r.mode, 'data-mode': r.mode }, r.mode)),
        el('td', { class: 'mono' }, r.default || '–'), el('td', { class: 'mono' }, r.candidate || ''),
        el('td', {}, r.canary ? r.canary.percent + '%' + (r.canary.principals && r.canary.principals.length ? ' + ' + r.canary.principals.join(', ') : '') : ''),
        el('td', { class: 'deprecations' }, r.versions.filter(v => v.deprecated).map(v => el('div', {}, el('span', { class: 'mono' }, v.version), ' ', sunsetText(v)))),
        el('td', { class: 'muted' }, r.updated_at ? utc(r.updated_at) + ' by ' + (r.updated_by || '–') : '')))))
      : el('p', { class: 'muted' }, 'No tools.'),
  ];
}

async function pageStatus(root) {
  const health = el('div', { id: 'health-holder' });
  const rollouts = el('div', { id: 'rollouts-holder' });
  fill(root, el('h1', {}, 'Status'),
    el('p', { class: 'muted' }, 'What /readyz and the metrics say, refreshed every 5 s. Upstream drift lists only the tools your key may call; the counts are the gateway\'s.'),
    el('h2', {}, 'Health'), health, el('h2', {}, 'Rollouts'), rollouts);
  const draw = async () => {
    const [st, ro] = await Promise.all([api('GET', '/status'), api('GET', '/rollouts')]);
    health.replaceChildren(healthCards(st));
    rollouts.replaceChildren(...rolloutsOverview(ro));
  };
  await draw();
  return draw;
}

// rolloutCell is a tool's rollout in one cell: its mode and candidate.
function rolloutCell(r) {
  if (!r) return '';
  const mode = el('span', { class: 'badge rollout-' + r.mode, 'data-mode': r.mode }, r.mode);
  return r.candidate ? [mode, ' ', el('span', { class: 'mono' }, r.candidate)] : mode;
}

// rolloutSection is a tool's rollout: default, candidate and mode, what the
// shadow candidate would refuse, the canary's comparison, every version's
// deprecation and the audit history. Counts only: no argument values.
function rolloutSection(r) {
  const parts = [el('h2', {}, 'Rollout')];
  const dl = el('dl', { class: 'summary', id: 'rollout' });
  const add = (k, v) => { if (v !== '' && v !== undefined && v !== null) dl.append(el('dt', {}, k), el('dd', {}, v)); };
  add('Mode', rolloutCell(r));
  add('Default', [el('span', { class: 'mono', id: 'rollout-default' }, r.default || '–'),
    el('span', { class: 'muted' }, r.default_source === 'rollout' ? ' set by the rollout' : ' the newest released version (toolgate.lock) the policy does not deprecate')]);
  add('Previous', r.previous ? el('span', { class: 'mono' }, r.previous + ' (rollback restores it)') : '');
  add('Rolled back', r.rolled_back ? el('span', { class: 'mono' }, r.rolled_back + ' (a promote serves it again)') : '');
  if (r.canary) {
    add('Canary', 'the new actions of ' + r.canary.percent + '% of the callers' + (r.canary.principals && r.canary.principals.length ? ' and every new action of ' + r.canary.principals.join(', ') : '') +
      '; halts when a rate exceeds the default\'s by ' + (r.canary.halt_margin * 100).toFixed(1) + '% after ' + r.canary.halt_min_sample + ' actions each');
  }
  add('Revision', String(r.revision) + (r.updated_at ? ' · ' + utc(r.updated_at) + ' by ' + (r.updated_by || '–') : ''));
  parts.push(dl);
  parts.push(el('table', { id: 'rollout-versions' },
    el('thead', {}, el('tr', {}, ['Version', 'Role', 'Deprecation'].map(h => el('th', {}, h)))),
    el('tbody', {}, r.versions.map(v => el('tr', { 'data-version': v.version },
      el('td', { class: 'mono' }, v.version), el('td', {}, [(v.role || '').replace('_', ' '), v.held ? el('span', { class: 'muted' }, ' released, not the default by itself: ' + v.held) : '']),
      el('td', {}, !v.deprecated ? '' : v.deprecated_at ? ['deprecated ' + utc(v.deprecated_at) + ', sunset ' + utc(v.sunset),
        v.retired ? el('span', { class: 'flag' }, ' retired: new actions refused') : ''] : 'deprecated'))))));
  if (r.shadow) {
    const sh = r.shadow;
    parts.push(el('h3', {}, 'Shadow validation of ', el('span', { class: 'mono' }, sh.candidate)),
      el('p', { id: 'shadow-summary' }, sh.calls + ' calls validated, ' + sh.would_fail + ' would fail'));
    parts.push(sh.failures.length ? el('table', { id: 'shadow-failures' },
      el('thead', {}, el('tr', {}, ['#', 'Would-be failure', 'Pointer', 'Code', 'Calls', 'From'].map(h => el('th', {}, h)))),
      el('tbody', {}, sh.failures.map((f, i) => el('tr', {},
        el('td', {}, String(i + 1)), el('td', {}, f.cause), el('td', { class: 'mono' }, f.pointer), el('td', { class: 'mono' }, f.code),
        el('td', {}, String(f.calls)), el('td', {}, f.principals.map(p => p.principal + ' (' + p.calls + ')').join(', '))))))
      : el('p', { class: 'muted' }, 'No would-be failures.'));
  }
  if (r.comparison && r.comparison.length) {
    const pc = x => (x * 100).toFixed(1) + '%';
    parts.push(el('h3', {}, 'Canary comparison'), el('table', { id: 'canary-comparison' },
      el('thead', {}, el('tr', {}, ['Version', 'Role', 'Actions', '422', 'Downstream 4xx', 'Downstream 5xx', 'Unknown', 'Mean latency'].map(h => el('th', {}, h)))),
      el('tbody', {}, r.comparison.map(o => el('tr', { 'data-role': o.role },
        el('td', { class: 'mono' }, o.version), el('td', {}, o.role), el('td', {}, String(o.calls)), el('td', {}, pc(o.invalid_rate)),
        el('td', {}, pc(o.downstream_4xx_rate)), el('td', {}, pc(o.downstream_5xx_rate)), el('td', {}, pc(o.unknown_rate)),
        el('td', {}, Math.round(o.mean_latency_ms) + ' ms'))))));
  }
  parts.push(el('h3', {}, 'History'), r.history.length ? el('ol', { class: 'timeline', id: 'rollout-history' }, r.history.map(ev =>
    el('li', { 'data-action': ev.action },
      el('div', {}, el('span', { class: 'badge' }, ev.action), ' ', el('span', { class: 'muted' }, 'r' + ev.revision + ' by '), el('span', { class: 'mono' }, ev.by)),
      el('div', {}, ev.detail || ''),
      ev.approver ? el('div', {}, 'approved by ', el('strong', {}, ev.approver), ev.approval_source ? el('span', { class: 'muted' }, ' (' + ev.approval_source + ')') : '') : '',
      ev.note ? el('div', { class: 'note' }, 'note: ', userText(ev.note)) : '',
      el('div', { class: 'when' }, utc(ev.at)))))
    : el('p', { class: 'muted', id: 'rollout-history-empty' }, 'No rollout changes yet.'));
  return parts;
}

async function pageRegistry(root, toolID, query) {
  const reg = await registry();
  if (!toolID) {
    const ro = await api('GET', '/rollouts');
    const byTool = new Map(ro.rollouts.map(r => [r.tool_id, r]));
    fill(root, el('h1', {}, 'Registry'),
      el('table', { id: 'registry' },
        el('thead', {}, el('tr', {}, ['Tool', 'Owner', 'Risk', 'Consumers', 'Versions', 'Default', 'Rollout', 'Bound'].map(h => el('th', {}, h)))),
        el('tbody', {}, reg.tools.map(t => el('tr', { 'data-tool': t.tool_id },
          el('td', {}, el('a', { href: '#/registry/' + encodeURIComponent(t.tool_id), class: 'mono' }, t.tool_id)),
          el('td', {}, t.owner || ''), el('td', {}, t.risk_level || ''), el('td', {}, t.consumers.join(', ')),
          el('td', {}, t.versions.map(v => v.version + (v.deprecated ? ' (deprecated)' : '')).join(', ')),
          el('td', { class: 'default' }, (byTool.get(t.tool_id) || {}).default || t.default_version || ''),
          el('td', { class: 'rollout' }, rolloutCell(byTool.get(t.tool_id))),
          el('td', {}, t.bound ? 'yes' : el('span', { class: 'flag' }, 'no')))))));
    return;
  }
  const t = reg.tools.find(x => x.tool_id === toolID);
  if (!t) { fill(root, el('p', { class: 'error' }, 'No tool ' + toolID)); return; }
  const versions = t.versions.map(v => v.version);
  const from = query.get('from') || versions[Math.max(0, versions.length - 2)];
  const to = query.get('to') || versions[versions.length - 1];
  const sel = (id, cur) => el('select', { id }, versions.map(v => el('option', { value: v, selected: v === cur }, v)));
  const fromSel = sel('diff-from', from), toSel = sel('diff-to', to);
  const go = () => { location.hash = '#/registry/' + encodeURIComponent(toolID) + '?' + new URLSearchParams({ from: fromSel.value, to: toSel.value }); };
  fromSel.addEventListener('change', go);
  toSel.addEventListener('change', go);

  const show = query.get('show');
  const vrows = t.versions.map(v => el('tr', { 'data-version': v.version },
    el('td', { class: 'mono' },
      el('a', { href: '#/registry/' + encodeURIComponent(toolID) + '?' + new URLSearchParams({ from, to, show: v.version }), title: 'show the schema file' }, v.version), v.deprecated ? el('span', { class: 'muted' }, ' deprecated') : '',
      v.version === t.default_version ? el('span', { class: 'badge' }, 'default') : ''),
    el('td', { class: 'mono' }, v.name), el('td', {}, v.effect), el('td', {}, v.description),
    el('td', {}, v.errors.map(e => e.code).join(', ')),
    el('td', {}, v.rules.map(r => r.id + ' (' + r.outcome + ')').join(', '))));
  const parts = [
    el('h1', {}, el('span', { class: 'mono' }, t.tool_id)),
    el('p', {}, 'Owner ', el('strong', {}, t.owner || '–'), ', risk ', el('strong', {}, t.risk_level || '–'),
      ', consumers: ', t.consumers.join(', ') || 'none', t.bound ? '' : el('span', { class: 'flag' }, ' · not bound in this gateway')),
    el('table', { id: 'versions' },
      el('thead', {}, el('tr', {}, ['Version', 'Name', 'Effect', 'Description', 'Errors', 'Rules'].map(h => el('th', {}, h)))),
      el('tbody', {}, vrows)),
  ];
  parts.push(...rolloutSection(await api('GET', '/rollouts/' + encodeURIComponent(toolID))));
  if (show) {
    const raw = await api('GET', '/registry/' + encodeURIComponent(toolID) + '/' + encodeURIComponent(show));
    parts.push(el('h2', {}, 'Schema file ', el('span', { class: 'mono' }, 'v' + show + '.json')), el('pre', { id: 'schema' }, pretty(raw)));
  }
  parts.push(el('h2', {}, 'Diff'));
  if (versions.length < 2) {
    parts.push(el('p', { class: 'muted' }, 'Only one version: nothing to compare.'));
  } else {
    parts.push(el('div', { class: 'filters' }, 'from', fromSel, 'to', toSel));
    const d = await api('GET', '/diff?' + new URLSearchParams({ tool: toolID, from, to }));
    const r = d.report;
    parts.push(el('div', { class: 'card', id: 'diff-summary' },
      'Tier ', el('span', { class: 'badge tier-' + r.tier }, r.tier), ' · required bump ', el('strong', {}, r.required_bump),
      ' · declared ', el('strong', {}, r.declared_bump || '–'), ' · ',
      r.bump_ok ? el('span', {}, 'the declared bump is enough') : el('span', { class: 'flag' }, 'the declared bump is not enough'),
      el('span', { class: 'muted' }, ' (' + d.consumers + ' consumers)')));
    parts.push(r.changes.length ? el('table', { id: 'diff' },
      el('thead', {}, el('tr', {}, ['Tier', 'Kind', 'Direction', 'Pointer', 'Detail'].map(h => el('th', {}, h)))),
      el('tbody', {}, r.changes.map(c => el('tr', {}, el('td', {}, el('span', { class: 'badge tier-' + c.tier }, c.tier)),
        el('td', { class: 'mono' }, c.kind), el('td', {}, c.direction), el('td', { class: 'mono' }, c.pointer), el('td', {}, c.detail)))))
      : el('p', { class: 'muted' }, 'No differences.'));
  }
  fill(root, ...parts);
}

// ---- start ----

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('login-form').addEventListener('submit', signIn);
  document.getElementById('signout').addEventListener('click', signOut);
  window.addEventListener('hashchange', () => {
    document.getElementById('flash').replaceChildren();
    route();
  });
  boot();
});
