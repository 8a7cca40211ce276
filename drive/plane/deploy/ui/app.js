// The built-in page: the application list with health and sync badges (kept current by the
// application stream) and one application's resource tree. It uses only the /v1/deploy API,
// with the session cookie of the sign-in flow.
'use strict';
const api = '../api/v1';
const apps = new Map();

function badge(text) {
  const s = document.createElement('span');
  s.className = 'badge ' + (text || 'Unknown');
  s.textContent = text || 'Unknown';
  return s;
}

function cell(tr, content) {
  const td = document.createElement('td');
  if (content instanceof Node) td.appendChild(content); else td.textContent = content || '';
  tr.appendChild(td);
}

function render() {
  const body = document.querySelector('#apps tbody');
  body.textContent = '';
  const sorted = [...apps.values()].sort((a, b) => (a.metadata.namespace + '/' + a.metadata.name).localeCompare(b.metadata.namespace + '/' + b.metadata.name));
  for (const a of sorted) {
    const tr = document.createElement('tr');
    tr.className = 'app';
    cell(tr, a.metadata.name);
    cell(tr, a.metadata.namespace);
    cell(tr, a.spec.project);
    cell(tr, (a.metadata.annotations || {})['deploy.openuniverse.dev/resource']);
    cell(tr, badge(a.status && a.status.health && a.status.health.status));
    cell(tr, badge(a.status && a.status.sync && a.status.sync.status));
    cell(tr, a.status && a.status.sync && a.status.sync.revision);
    tr.onclick = () => showTree(a);
    body.appendChild(tr);
  }
}

async function get(path) {
  const res = await fetch(path, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
  if (!res.ok) {
    let msg = res.status + ' ' + res.statusText;
    try { msg += ': ' + (await res.json()).message; } catch (e) { /* not JSON */ }
    throw new Error(msg);
  }
  return res.json();
}

async function showTree(a) {
  const sec = document.getElementById('tree');
  sec.style.display = 'block';
  sec.querySelector('h2').textContent = a.metadata.namespace + '/' + a.metadata.name;
  const box = sec.querySelector('.nodes');
  box.textContent = 'loading…';
  try {
    const tree = await get(api + '/applications/' + encodeURIComponent(a.metadata.name) + '/resource-tree?appNamespace=' + encodeURIComponent(a.metadata.namespace));
    box.textContent = '';
    const byParent = new Map();
    for (const n of tree.nodes || []) {
      const p = (n.parentRefs && n.parentRefs[0] && n.parentRefs[0].uid) || '';
      if (!byParent.has(p)) byParent.set(p, []);
      byParent.get(p).push(n);
    }
    const walk = (uid, depth) => {
      for (const n of byParent.get(uid) || []) {
        const d = document.createElement('div');
        d.className = 'node';
        d.style.paddingLeft = (depth * 22) + 'px';
        const k = document.createElement('span');
        k.className = 'kind';
        k.textContent = n.kind;
        d.appendChild(k);
        d.appendChild(document.createTextNode(n.name + ' '));
        if (n.health) d.appendChild(badge(n.health.status));
        box.appendChild(d);
        walk(n.uid, depth + 1);
      }
    };
    walk('', 0);
    if (!box.childNodes.length) box.textContent = 'no resources';
  } catch (e) {
    box.textContent = e.message;
  }
}

async function load() {
  try {
    const me = await get(api + '/session/userinfo');
    document.getElementById('who').textContent = me.username || '';
    // signed in: offer sign-out only
    document.getElementById('signin').hidden = !!me.loggedIn || !!me.username;
    document.getElementById('signout').hidden = !(me.loggedIn || me.username);
    const list = await get(api + '/applications');
    for (const a of list.items || []) apps.set(a.metadata.namespace + '/' + a.metadata.name, a);
    render();
    // ?live=0 leaves the stream closed (a headless capture waits for the network to idle)
    if (new URLSearchParams(location.search).get('live') === '0') return;
    const es = new EventSource(api + '/stream/applications?resourceVersion=' + encodeURIComponent(list.metadata.resourceVersion || ''));
    es.onmessage = (m) => {
      const ev = JSON.parse(m.data).result;
      const k = ev.application.metadata.namespace + '/' + ev.application.metadata.name;
      if (ev.type === 'DELETED') apps.delete(k); else apps.set(k, ev.application);
      render();
    };
  } catch (e) {
    document.getElementById('error').textContent = e.message;
  }
}

load();
