// The built-in page of the deploy plane: the fleet list with filters, kept current by the
// application stream; one application's resource tree as a graph, each node's live manifest,
// events and pod logs; the live diff with the field managers that changed each drifted
// field; the revision history with rollback and sync for admins. It uses only the
// /v1/deploy API (Argo CD's route names) with the session cookie of the sign-in flow; every
// write is a same-origin fetch with Content-Type application/json, which is what the plane's
// CSRF check (CookieRequestAllowed) demands of a cookie session. Nothing is fetched from
// anywhere else.
'use strict';
const api = '../api/v1';
const apps = new Map();
const state = { admin: false, view: null, tab: 'tree', tree: null, diff: null, node: null, sub: 'manifest', treeStream: null };
// The operator's own field managers (kinds/managers.go: universe-operator, universe-operator-*,
// universe-deploy-plane): a field they own is desired, not drift.
const isOurs = (m) => m === 'universe-operator' || m.startsWith('universe-operator-') || m === 'universe-deploy-plane';
const $ = (id) => document.getElementById(id);
const live = new URLSearchParams(location.search).get('live') !== '0';

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of kids.flat(Infinity)) if (c !== undefined && c !== null) e.append(c instanceof Node ? c : String(c));
  return e;
}
const badge = (text) => el('span', { class: 'badge ' + (text || 'Unknown') }, text || 'Unknown');
const key = (a) => a.metadata.namespace + '/' + a.metadata.name;
const health = (a) => (a.status && a.status.health && a.status.health.status) || 'Unknown';
const sync = (a) => (a.status && a.status.sync && a.status.sync.status) || 'Unknown';
const kindOf = (a) => ((a.metadata.annotations || {})['deploy.openuniverse.dev/resource'] || '').split('/').pop();
const appQ = (a) => '?appNamespace=' + encodeURIComponent(a.metadata.namespace);
const appPath = (a, sub) => api + '/applications/' + encodeURIComponent(a.metadata.name) + (sub ? '/' + sub : '');

class HTTPError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

async function call(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (!res.ok) {
    let msg = res.status + ' ' + res.statusText;
    try { const b = await res.json(); msg += ': ' + (b.message || b.error); } catch (e) { /* not JSON */ }
    throw new HTTPError(res.status, msg);
  }
  const text = await res.text();
  return text ? JSON.parse(text) : {};
}
const get = (path) => call('GET', path);

// notServed says a route is not on this plane yet (a plain 404 or 501), in words.
function notServed(e, what) {
  if (e instanceof HTTPError && (e.status === 404 || e.status === 501 || e.status === 405)) {
    return what + ' is not served by this deploy plane yet (' + e.message + ')';
  }
  return e.message;
}

// ---- the fleet list ----

const filters = ['org', 'namespace', 'health', 'sync', 'kind'];
const facet = { org: (a) => a.spec.project, namespace: (a) => a.metadata.namespace, health, sync, kind: kindOf };

function fillFilters() {
  for (const f of filters) {
    const sel = $('f-' + f);
    const cur = sel.value;
    const vals = [...new Set([...apps.values()].map(facet[f]).filter(Boolean))].sort();
    const have = [...sel.options].slice(1).map((o) => o.value);
    if (have.join('\n') === vals.join('\n')) continue;
    sel.length = 1;
    for (const v of vals) sel.append(el('option', { value: v }, v));
    sel.value = vals.includes(cur) ? cur : '';
  }
}

function renderList() {
  fillFilters();
  const body = document.querySelector('#apps tbody');
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : null;
  body.textContent = '';
  const q = $('f-q').value.trim().toLowerCase();
  const sorted = [...apps.values()].filter((a) => filters.every((f) => !$('f-' + f).value || facet[f](a) === $('f-' + f).value) &&
    (!q || a.metadata.name.toLowerCase().includes(q))).sort((a, b) => key(a).localeCompare(key(b)));
  for (const a of sorted) {
    const open = () => { location.hash = '#/app/' + encodeURIComponent(a.metadata.namespace) + '/' + encodeURIComponent(a.metadata.name); };
    const tr = el('tr', { class: 'app', tabindex: 0, 'data-key': key(a), onclick: open,
      onkeydown: (ev) => {
        if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); open(); }
        if (ev.key === 'ArrowDown' && tr.nextSibling) { ev.preventDefault(); tr.nextSibling.focus(); }
        if (ev.key === 'ArrowUp' && tr.previousSibling) { ev.preventDefault(); tr.previousSibling.focus(); }
      } },
    el('td', {}, el('a', { href: '#/app/' + encodeURIComponent(a.metadata.namespace) + '/' + encodeURIComponent(a.metadata.name), tabindex: -1 }, a.metadata.name)),
    el('td', {}, a.metadata.namespace), el('td', {}, a.spec.project), el('td', {}, kindOf(a)),
    el('td', {}, badge(health(a))), el('td', {}, badge(sync(a))),
    el('td', { class: 'rev' }, (a.status && a.status.sync && a.status.sync.revision) || ''));
    body.append(tr);
    if (focused === key(a)) tr.focus();
  }
  $('count').textContent = sorted.length + ' of ' + apps.size;
}

function openStream(resourceVersion) {
  if (!live) return;
  const es = new EventSource(api + '/stream/applications?resourceVersion=' + encodeURIComponent(resourceVersion || ''));
  es.onopen = () => { $('live').textContent = 'live'; $('live').classList.add('on'); };
  es.onerror = () => { $('live').textContent = 'reconnecting'; $('live').classList.remove('on'); };
  es.onmessage = (m) => {
    const ev = JSON.parse(m.data).result;
    const k = key(ev.application);
    if (ev.type === 'DELETED') apps.delete(k); else apps.set(k, ev.application);
    renderList();
    if (state.view && state.view === k) renderAppHead();
  };
}

// ---- one application ----

function current() { return state.view ? apps.get(state.view) : null; }

function renderAppHead() {
  const a = current();
  if (!a) return;
  $('app-title').textContent = a.metadata.namespace + '/' + a.metadata.name;
  $('app-health').replaceChildren(badge(health(a)));
  $('app-sync').replaceChildren(badge(sync(a)));
  $('app-rev').textContent = (a.status.sync && a.status.sync.revision) || '';
  const img = (a.spec.info || []).find((i) => i.name === 'Image');
  $('app-image').textContent = img ? img.value : '';
  const msg = (a.status.health && a.status.health.message) || '';
  const op = a.status.operationState;
  $('app-msg').textContent = [msg, op ? 'last operation: ' + op.phase + (op.message ? ' — ' + op.message : '') : ''].filter(Boolean).join(' · ');
  $('btn-sync').hidden = !state.admin;
  if (state.tab === 'history') renderHistory();
}

async function showApp(ns, name) {
  const k = ns + '/' + name;
  if (state.view !== k) { $('app-note').hidden = true; $('app-note').textContent = ''; delete $('app-note').dataset.rollback; }
  state.view = k;
  state.node = null;
  $('list').hidden = true;
  $('app').hidden = false;
  $('node').hidden = true;
  if (!apps.has(k)) {
    try { apps.set(k, await get(api + '/applications/' + encodeURIComponent(name) + '?appNamespace=' + encodeURIComponent(ns))); } catch (e) { $('error').textContent = e.message; return; }
  }
  renderAppHead();
  selectTab(state.tab, false);
  watchTree();
}

function watchTree() {
  if (state.treeStream) { state.treeStream.close(); state.treeStream = null; }
  const a = current();
  if (!a) return;
  const load = (tree) => { state.tree = tree; if (state.tab === 'tree') drawTree(); };
  if (!live) { get(appPath(a, 'resource-tree') + appQ(a)).then(load, (e) => { $('graph').textContent = e.message; }); return; }
  const es = new EventSource(api + '/stream/applications/' + encodeURIComponent(a.metadata.name) + '/resource-tree' + appQ(a));
  es.onmessage = (m) => load(JSON.parse(m.data).result);
  es.onerror = () => { if (!state.tree) get(appPath(a, 'resource-tree') + appQ(a)).then(load, (e) => { $('graph').textContent = e.message; }); };
  state.treeStream = es;
}

function selectTab(tab, focus) {
  state.tab = tab;
  for (const b of document.querySelectorAll('.tabs button')) {
    const on = b.dataset.tab === tab;
    b.setAttribute('aria-selected', on ? 'true' : 'false');
    b.tabIndex = on ? 0 : -1;
    if (on && focus) b.focus();
    $('pane-' + b.dataset.tab).hidden = !on;
  }
  if (tab === 'tree') drawTree();
  if (tab === 'diff') loadDiff();
  if (tab === 'history') renderHistory();
  if (tab === 'logs') fillPods();
}

// drawTree lays the tree out in columns by depth (the application, its children, theirs)
// and draws each parent -> child edge as a curve.
function drawTree() {
  const box = $('graph');
  const a = current();
  if (!state.tree || !a) { box.textContent = 'loading…'; return; }
  const nodes = (state.tree.nodes || []).filter((n) => n.kind !== 'Secret');
  const byUID = new Map(nodes.map((n) => [n.uid, n]));
  const kids = new Map();
  const roots = [];
  for (const n of nodes) {
    const p = (n.parentRefs || []).map((r) => r.uid).find((u) => byUID.has(u));
    if (p) { if (!kids.has(p)) kids.set(p, []); kids.get(p).push(n); } else roots.push(n);
  }
  const W = window.innerWidth < 700 ? 160 : 210, H = 46, GX = 50, GY = 12;
  const placed = [];
  let row = 0;
  const place = (n, depth, parent) => {
    const me = { n, x: depth * (W + GX), y: row * (H + GY), parent };
    placed.push(me);
    const ch = kids.get(n.uid) || [];
    if (!ch.length) row++;
    for (const c of ch) place(c, depth + 1, me);
    if (ch.length) me.y = (placed.find((p) => p.parent === me).y + placed.filter((p) => p.parent === me).pop().y) / 2;
  };
  const root = { kind: ((a.metadata.annotations || {})['deploy.openuniverse.dev/resource'] || kindOf(a)).replace(/^(.*)\/([^/]+)$/, '$2 ($1)'), name: a.metadata.name, namespace: a.metadata.namespace, uid: 'app', health: a.status.health, root: true };
  const rootP = { n: root, x: 0, y: 0 };
  placed.push(rootP);
  for (const r of roots) place(r, 1, rootP);
  if (!roots.length) row = 1;
  const kidsOfRoot = placed.filter((p) => p.parent === rootP);
  if (kidsOfRoot.length) rootP.y = (kidsOfRoot[0].y + kidsOfRoot[kidsOfRoot.length - 1].y) / 2;
  const width = Math.max(...placed.map((p) => p.x)) + W + 4, height = row * (H + GY) + 4;
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('width', width); svg.setAttribute('height', height);
  const frag = [svg];
  for (const p of placed) {
    if (p.parent) {
      const x1 = p.parent.x + W, y1 = p.parent.y + H / 2, x2 = p.x, y2 = p.y + H / 2, mx = (x1 + x2) / 2;
      const path = document.createElementNS(ns, 'path');
      path.setAttribute('d', `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`);
      path.setAttribute('data-edge', (p.parent.n.kind + '/' + p.parent.n.name) + '->' + (p.n.kind + '/' + p.n.name));
      svg.append(path);
    }
    const h = (p.n.health && p.n.health.status) || (p.n.root ? 'Unknown' : '');
    const b = el('button', { type: 'button', class: 'gnode ' + (h || 'none') + (p.n.root ? ' root' : '') + (state.node && state.node.uid === p.n.uid ? ' sel' : ''),
      style: `left:${p.x}px;top:${p.y}px;width:${W}px`, 'data-kind': p.n.kind, 'data-name': p.n.name, 'data-health': h,
      title: p.n.kind + ' ' + p.n.name + (h ? ' — ' + h : '') + (p.n.health && p.n.health.message ? ': ' + p.n.health.message : ''),
      onclick: () => (p.n.root ? selectTab('diff', true) : selectNode(p.n)) },
    el('span', { class: 'k' }, p.n.kind + (h ? ' · ' + h : '')), el('span', { class: 'n' }, p.n.name));
    frag.push(b);
  }
  box.replaceChildren(...frag);
  box.style.height = Math.min(height + 8, Math.round(window.innerHeight * 0.7)) + 'px';
  box.onkeydown = (ev) => {
    const list = [...box.querySelectorAll('.gnode')];
    const i = list.indexOf(document.activeElement);
    if (i < 0) return;
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowRight') { ev.preventDefault(); (list[i + 1] || list[0]).focus(); }
    if (ev.key === 'ArrowUp' || ev.key === 'ArrowLeft') { ev.preventDefault(); (list[i - 1] || list[list.length - 1]).focus(); }
  };
}

function selectNode(n) {
  state.node = n;
  $('node').hidden = false;
  $('node-title').textContent = n.kind + ' ' + (n.namespace ? n.namespace + '/' : '') + n.name;
  $('node-logs').hidden = n.kind !== 'Pod';
  for (const b of document.querySelectorAll('#graph .gnode')) b.classList.toggle('sel', b.dataset.kind === n.kind && b.dataset.name === n.name);
  showSub(state.sub === 'logs' && n.kind !== 'Pod' ? 'manifest' : state.sub);
}

async function showSub(sub) {
  state.sub = sub;
  for (const b of document.querySelectorAll('.subtabs button')) b.setAttribute('aria-pressed', b.dataset.sub === sub ? 'true' : 'false');
  const n = state.node, a = current(), out = $('node-body');
  out.textContent = 'loading…';
  try {
    if (sub === 'manifest') out.textContent = await manifestOf(a, n);
    if (sub === 'events') out.textContent = await eventsOf(a, n);
    if (sub === 'logs') out.textContent = await logsOf(a, n.name, n.namespace, 200);
  } catch (e) {
    out.textContent = notServed(e, sub === 'manifest' ? 'A live manifest' : sub === 'events' ? 'Events' : 'Pod logs');
  }
}

// manifestOf is the node's live object (Argo CD's applications/{name}/resource); a Secret's
// values are masked here too, should one ever arrive.
async function manifestOf(a, n) {
  const q = new URLSearchParams({ appNamespace: a.metadata.namespace, namespace: n.namespace || '', resourceName: n.name,
    version: n.version || '', kind: n.kind, group: n.group || '' });
  try {
    const r = await get(appPath(a, 'resource') + '?' + q);
    return yaml(mask(JSON.parse(r.manifest)));
  } catch (e) {
    // not served yet: the live state the managed-resources diff carries, where the node is managed
    if (!state.diff) state.diff = (await get(appPath(a, 'managed-resources') + appQ(a))).items || [];
    const d = state.diff.find((x) => x.kind === n.kind && x.name === n.name && (x.namespace || '') === (n.namespace || ''));
    if (d && d.liveState && d.liveState !== 'null') return '# from managed-resources (' + notServed(e, 'applications/{name}/resource') + ')\n' + yaml(clean(mask(JSON.parse(d.liveState))));
    throw e;
  }
}

async function eventsOf(a, n) {
  const q = new URLSearchParams({ appNamespace: a.metadata.namespace, resourceNamespace: n.namespace || '', resourceName: n.name, resourceUID: n.uid || '' });
  const list = await get(appPath(a, 'events') + '?' + q);
  const items = list.items || [];
  if (!items.length) return 'no events';
  return items.map((e) => [e.lastTimestamp || e.eventTime || (e.metadata && e.metadata.creationTimestamp) || '', e.type, e.reason,
    (e.count > 1 ? '×' + e.count + ' ' : '') + e.message].join('  ')).join('\n');
}

// logsOf reads a pod's last lines (Argo CD's applications/{name}/logs: newline-delimited
// {"result":{content,...}} messages), never following.
async function logsOf(a, pod, namespace, tail) {
  const q = new URLSearchParams({ appNamespace: a.metadata.namespace, namespace: namespace || a.metadata.namespace, podName: pod,
    tailLines: String(tail), follow: 'false' });
  const res = await fetch(appPath(a, 'logs') + '?' + q, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
  if (!res.ok) {
    let msg = res.status + ' ' + res.statusText;
    try { msg += ': ' + (await res.json()).message; } catch (e) { /* not JSON */ }
    throw new HTTPError(res.status, msg);
  }
  const lines = [];
  for (const l of (await res.text()).split('\n')) {
    if (!l.trim()) continue;
    try {
      const r = JSON.parse(l.replace(/^data: /, '')).result;
      if (r && !r.last) lines.push((r.timeStampStr || r.timeStamp || '') + ' ' + (r.content || ''));
    } catch (e) { lines.push(l); }
  }
  return lines.join('\n') || 'no log lines';
}

function fillPods() {
  const pods = ((state.tree && state.tree.nodes) || []).filter((n) => n.kind === 'Pod');
  const sel = $('logs-pod');
  sel.replaceChildren(...pods.map((p) => el('option', { value: p.namespace + '/' + p.name }, p.name)));
  if (!pods.length) $('logs-body').textContent = 'this application has no pods';
}

// ---- the live diff and its attribution ----

function mask(obj) {
  if (obj && obj.kind === 'Secret') {
    for (const f of ['data', 'stringData']) if (obj[f]) for (const k of Object.keys(obj[f])) obj[f][k] = '***';
  }
  return obj;
}

function clean(obj) {
  if (obj && obj.metadata) {
    obj = JSON.parse(JSON.stringify(obj));
    delete obj.metadata.managedFields;
  }
  return obj;
}

// ownedPaths walks a managedFields entry's fieldsV1 over obj and returns the concrete paths
// it owns ("spec.template.spec.containers[0].image"): f:<name> is a map key, k:{...} the list
// element with those key fields, v:<json> a set member, i:<n> an index, "." the element itself.
function ownedPaths(fields, obj, prefix, out) {
  for (const [k, sub] of Object.entries(fields || {})) {
    if (k === '.') { out.add(prefix); continue; }
    const kind = k.slice(0, 2), rest = k.slice(2);
    if (kind === 'f:') {
      const p = prefix ? prefix + '.' + rest : rest;
      const child = obj && typeof obj === 'object' ? obj[rest] : undefined;
      if (!sub || !Object.keys(sub).length) out.add(p); else ownedPaths(sub, child, p, out);
    } else if (Array.isArray(obj)) {
      let idx = -1;
      if (kind === 'k:') {
        const want = JSON.parse(rest);
        idx = obj.findIndex((e) => e && Object.entries(want).every(([kk, vv]) => JSON.stringify(e[kk]) === JSON.stringify(vv)));
      } else if (kind === 'v:') {
        idx = obj.findIndex((e) => JSON.stringify(e) === rest);
      } else if (kind === 'i:') {
        idx = Number(rest);
      }
      if (idx < 0) continue;
      const p = prefix + '[' + idx + ']';
      if (!sub || !Object.keys(sub).length) out.add(p); else ownedPaths(sub, obj[idx], p, out);
    }
  }
  return out;
}

// changedPaths lists the leaf paths where live and desired differ (status and the metadata
// the apiserver owns left out).
function changedPaths(a, b, prefix, out) {
  if (JSON.stringify(a) === JSON.stringify(b)) return out;
  const obj = (x) => x && typeof x === 'object';
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) changedPaths(a[i], b[i], prefix + '[' + i + ']', out);
  } else if (obj(a) && obj(b) && !Array.isArray(a) && !Array.isArray(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const p = prefix ? prefix + '.' + k : k;
      if (!prefix && k === 'status') continue;
      if (prefix === 'metadata' && ['managedFields', 'resourceVersion', 'generation', 'uid', 'creationTimestamp'].includes(k)) continue;
      changedPaths(a[k], b[k], p, out);
    }
  } else {
    out.push(prefix);
  }
  return out;
}

// attribute names, for each drifted field, the managers other than the operator that own it
// in the live object: who changed it.
function attribute(liveObj, desiredObj) {
  const owners = [];
  for (const m of (liveObj && liveObj.metadata && liveObj.metadata.managedFields) || []) {
    if (isOurs(m.manager) || (m.subresource === 'status')) continue;
    owners.push({ manager: m.manager + (m.subresource ? ' (' + m.subresource + ')' : ''), op: m.operation, time: m.time, paths: ownedPaths(m.fieldsV1, liveObj, '', new Set()) });
  }
  return changedPaths(liveObj, desiredObj, '', []).map((p) => ({
    path: p,
    by: owners.filter((o) => [...o.paths].some((q) => p === q || p.startsWith(q + '.') || p.startsWith(q + '['))),
  }));
}

async function loadDiff() {
  const a = current(), pane = $('pane-diff');
  pane.replaceChildren(el('p', { class: 'muted' }, 'comparing the desired objects with the cluster (server-side dry-run)…'));
  let resp;
  try { resp = await get(appPath(a, 'managed-resources') + appQ(a)); } catch (e) { pane.replaceChildren(el('p', { class: 'notice' }, e.message)); return; }
  if (current() !== a) return;
  state.diff = resp.items || [];
  const items = state.diff.filter((d) => d.kind !== 'Secret');
  const drifted = items.filter((d) => d.modified);
  const out = [el('p', { id: 'diff-summary' }, drifted.length ? drifted.length + ' of ' + items.length + ' objects differ from the desired state'
    : 'in sync: all ' + items.length + ' objects match the desired state')];
  for (const d of items) {
    const liveObj = d.liveState && d.liveState !== 'null' ? JSON.parse(d.liveState) : null;
    const want = d.targetState && d.targetState !== 'null' ? JSON.parse(d.targetState) : null;
    const box = el('div', { class: 'diff-item', 'data-kind': d.kind, 'data-name': d.name });
    box.append(el('h3', {}, d.kind + ' ' + (d.namespace ? d.namespace + '/' : '') + d.name + ' ', badge(d.modified ? 'OutOfSync' : 'Synced')));
    if (d.modified && liveObj && want) {
      const rows = attribute(liveObj, want);
      if (rows.length) {
        box.append(el('ul', { class: 'attribution' }, rows.map((r) => el('li', { 'data-path': r.path },
          el('code', {}, r.path), ' — ',
          r.by.length ? r.by.map((o, i) => [i ? ', ' : '', 'changed by ', el('span', { class: 'mgr' }, o.manager), o.time ? ' at ' + o.time : '']) : 'no other manager owns it (removed or defaulted)'))));
      }
    }
    if (d.diff) box.append(diffBlock(d.diff));
    else if (!d.modified) box.append(el('p', { class: 'muted' }, 'no difference'));
    out.push(box);
  }
  pane.replaceChildren(...out);
}

function diffBlock(text) {
  const pre = el('pre', { class: 'mono diff', tabindex: 0 });
  for (const l of text.split('\n')) {
    const c = l.startsWith('+++') || l.startsWith('---') ? 'hunk' : l.startsWith('+') ? 'add' : l.startsWith('-') ? 'del' : l.startsWith('@@') ? 'hunk' : '';
    pre.append(c ? el('span', { class: c }, l) : l + '\n');
  }
  return pre;
}

// yaml renders a JSON value as YAML for reading (not a full emitter: enough for manifests).
function yaml(v, ind) {
  ind = ind || '';
  const plain = (x) => x !== '' && !/^[-?:,\[\]{}#&*!|>'"%@`\s]|: | #|\n|\s$|:$/.test(x) && !/^(true|false|null|yes|no|on|off|~|[-+]?[0-9][0-9_.eE+-]*)$/i.test(x);
  const scalar = (x) => (typeof x === 'string' ? (plain(x) ? x : JSON.stringify(x)) : String(x));
  if (Array.isArray(v)) {
    if (!v.length) return '[]';
    return v.map((x) => ind + '- ' + (x && typeof x === 'object' ? yaml(x, ind + '  ').trimStart() : scalar(x))).join('\n');
  }
  if (v && typeof v === 'object') {
    const ks = Object.keys(v);
    if (!ks.length) return '{}';
    return ks.map((k) => {
      const x = v[k];
      if (x && typeof x === 'object' && Object.keys(x).length) return ind + k + ':\n' + yaml(x, ind + '  ');
      return ind + k + ': ' + (x && typeof x === 'object' ? (Array.isArray(x) ? '[]' : '{}') : scalar(x));
    }).join('\n');
  }
  return ind + scalar(v);
}

// ---- history, rollback and sync ----

// renderHistory draws the History tab. Every stream update of the application calls it; the
// rows are kept when nothing in them changed, so a Rollback button is not replaced under a
// click in progress (a press on one button and a release on its replacement clicks nothing).
function renderHistory() {
  const a = current();
  const body = document.querySelector('#history tbody');
  const rows = [...((a.status && a.status.history) || [])].reverse();
  const drawn = JSON.stringify([a.metadata.namespace, a.metadata.name, state.admin, rows]);
  if (body.dataset.drawn === drawn) return;
  body.dataset.drawn = drawn;
  const top = rows.length ? rows[0].id : -1;
  body.replaceChildren(...rows.map((h) => el('tr', { 'data-id': h.id },
    el('td', {}, String(h.id)), el('td', { class: 'rev' }, h.revision),
    el('td', {}, h.deployedAt || ''), el('td', {}, (h.initiatedBy && (h.initiatedBy.username || (h.initiatedBy.automated ? 'automated' : ''))) || ''),
    el('td', {}, state.admin && h.id !== top ? el('button', { type: 'button', class: 'danger', 'data-rollback': h.id, onclick: () => rollback(a, h) }, 'Rollback') :
      h.id === top ? el('span', { class: 'muted' }, 'current') : ''))));
  if (!rows.length) body.replaceChildren(el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'no history recorded yet')));
}

function confirmDialog(title, text, okLabel) {
  return new Promise((resolve) => {
    const d = $('confirm');
    $('confirm-title').textContent = title;
    $('confirm-text').textContent = text;
    $('confirm-ok').textContent = okLabel;
    d.returnValue = 'cancel';
    // close() queues the close event rather than firing it (Chromium with the next frame):
    // the close of an earlier opening can arrive after this one opened. A close event while
    // the dialog is open is that stale one, not this opening's answer.
    d.onclose = () => { if (!d.open) resolve(d.returnValue === 'ok'); };
    d.showModal();
    $('confirm-cancel').focus();
  });
}

async function rollback(a, h) {
  const ok = await confirmDialog('Roll back ' + a.metadata.name + '?', 'Roll ' + a.metadata.namespace + '/' + a.metadata.name + ' back to ' + h.revision +
    ' (history id ' + h.id + '). A CR from git is rolled back by a commit to the universe repository.', 'Roll back');
  if (!ok) return;
  try {
    const r = await call('POST', appPath(a, 'rollback') + appQ(a), { id: h.id, appNamespace: a.metadata.namespace });
    const rev = r.operation && r.operation.sync && r.operation.sync.revision;
    const note = $('app-note');
    note.hidden = false;
    note.textContent = 'Rollback to ' + h.revision + ' requested' + (rev ? ': commit ' + rev + ' (the sweep applies it)' : '');
    note.dataset.rollback = rev || '';
  } catch (e) {
    $('error').textContent = 'rollback: ' + e.message;
  }
}

async function doSync() {
  const a = current();
  if (!a) return;
  if (!await confirmDialog('Sync ' + a.metadata.name + '?', 'Reconcile ' + a.metadata.namespace + '/' + a.metadata.name + ' now (and sweep git when it came from git).', 'Sync')) return;
  try {
    await call('POST', appPath(a, 'sync') + appQ(a), { appNamespace: a.metadata.namespace });
    $('app-note').hidden = false;
    $('app-note').textContent = 'Sync requested';
  } catch (e) {
    $('error').textContent = 'sync: ' + e.message;
  }
}

// ---- routing and start ----

function route() {
  $('error').textContent = '';
  const m = location.hash.match(/^#\/app\/([^/]+)\/([^/]+)(?:\/(\w+))?$/);
  if (m) {
    if (m[3]) state.tab = m[3];
    showApp(decodeURIComponent(m[1]), decodeURIComponent(m[2]));
    return;
  }
  if (state.treeStream) { state.treeStream.close(); state.treeStream = null; }
  state.view = null; state.tree = null; state.diff = null;
  $('app').hidden = true;
  $('list').hidden = false;
  renderList();
  const first = document.querySelector('#apps tbody tr');
  if (first && document.activeElement === document.body) first.focus();
}

function wire() {
  for (const f of ['q', ...filters]) $('f-' + f).addEventListener('input', renderList);
  $('filters').addEventListener('submit', (e) => e.preventDefault());
  const tabs = [...document.querySelectorAll('.tabs button')];
  for (const b of tabs) {
    b.addEventListener('click', () => selectTab(b.dataset.tab, false));
    b.addEventListener('keydown', (ev) => {
      const i = tabs.indexOf(b);
      if (ev.key === 'ArrowRight') selectTab(tabs[(i + 1) % tabs.length].dataset.tab, true);
      if (ev.key === 'ArrowLeft') selectTab(tabs[(i + tabs.length - 1) % tabs.length].dataset.tab, true);
    });
  }
  for (const b of document.querySelectorAll('.subtabs button')) b.addEventListener('click', () => showSub(b.dataset.sub));
  $('btn-sync').addEventListener('click', doSync);
  $('logs-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    const [ns, pod] = ($('logs-pod').value || '/').split('/');
    if (!pod) return;
    $('logs-body').textContent = 'loading…';
    try { $('logs-body').textContent = await logsOf(current(), pod, ns, Math.min(5000, Number($('logs-tail').value) || 200)); } catch (err) { $('logs-body').textContent = notServed(err, 'Pod logs'); }
  });
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && state.view && !$('confirm').open) location.hash = '#/';
    if (ev.key === '/' && !state.view && document.activeElement.tagName !== 'INPUT') { ev.preventDefault(); $('f-q').focus(); }
  });
  window.addEventListener('hashchange', route);
}

async function load() {
  wire();
  try {
    const me = await get(api + '/session/userinfo');
    $('who').textContent = me.username || '';
    $('signin').hidden = !!(me.loggedIn || me.username);
    $('signout').hidden = !(me.loggedIn || me.username);
    try { state.admin = (await get(api + '/account/can-i/applications/sync/*/*')).value === 'yes'; } catch (e) { state.admin = false; }
    const list = await get(api + '/applications');
    for (const a of list.items || []) apps.set(key(a), a);
    route();
    openStream(list.metadata && list.metadata.resourceVersion);
  } catch (e) {
    $('error').textContent = e.message;
  }
}

load();
