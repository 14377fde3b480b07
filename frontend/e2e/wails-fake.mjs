// DEV CHECK helper: fake Wails bindings for a plain Chromium, used by
// e2e/wails-shim.mjs and `e2e/jobs.mjs --wails`. shim() runs in the page
// before any script (page.addInitScript) and backs window.go.app.Bindings
// and window.runtime with the page's own HTTP API (e2e/devserver.mjs or
// `labpool web`), the way the Go side does in the window.

// Runs in the page before any script: Go-binding look-alikes over HTTP.
export function shim() {
  const get = async (path, init) => {
    // `labpool web` takes a call that changes something only as JSON.
    if (init?.method && init.method !== 'GET') init = { ...init, headers: { 'Content-Type': 'application/json', ...init.headers } }
    const r = await fetch('/api/v1' + path, init)
    const t = await r.text()
    if (!r.ok) throw new Error(JSON.parse(t).message) // Wails rejects with the Go error text
    return t ? JSON.parse(t) : undefined
  }
  const post = (path, body) =>
    get(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) })
  window.__calls = []
  const track = (name, f) => (...a) => (window.__calls.push(name), f(...a))
  window.go = {
    app: {
      Bindings: {
        Self: track('Self', () => get('/self')),
        Nodes: track('Nodes', () => get('/nodes')),
        GPUs: track('GPUs', () => get('/gpus')),
        History: track('History', (id, s) => get(`/history?node=${encodeURIComponent(id)}&seconds=${s}`)),
        Pool: track('Pool', () => get('/pool')),
        CreatePool: track('CreatePool', () => post('/pool/create')),
        JoinPool: track('JoinPool', (code, addr) => post('/pool/join', { code, addr })),
        RemoveMember: track('RemoveMember', (id) => get(`/pool/members/${id}`, { method: 'DELETE' })),
        Jobs: track('Jobs', async (all) => get(all ? '/jobs?all=1' : '/jobs')),
        Job: track('Job', (id) => get(`/jobs/${encodeURIComponent(id)}`)),
        PlanLaunch: track('PlanLaunch', (req) => post('/jobs/plan', req)),
        Launch: track('Launch', (req) => post('/jobs', req)),
        StopJob: track('StopJob', (id) => post(`/jobs/${encodeURIComponent(id)}/stop`)),
        RemoveJob: track('RemoveJob', (id) => get(`/jobs/${encodeURIComponent(id)}`, { method: 'DELETE' })),
        JobStats: track('JobStats', (id) => get(`/jobs/${encodeURIComponent(id)}/stats`)),
        OpenJob: track('OpenJob', (id, port) => post(`/jobs/${encodeURIComponent(id)}/open`, { port })),
        Tunnels: track('Tunnels', () => get('/tunnels')),
        Images: track('Images', (node) => get(`/images?node=${encodeURIComponent(node)}`)),
        // Like the Go side: stream the log and emit "job:logs" events.
        FollowLogs: track('FollowLogs', async (id, tail) => {
          const ctl = new AbortController()
          window.__follows[id]?.abort()
          window.__follows[id] = ctl
          const r = await fetch(`/api/v1/jobs/${encodeURIComponent(id)}/logs?follow=1&tail=${tail}`, { signal: ctl.signal })
          if (!r.ok) throw new Error(JSON.parse(await r.text()).message)
          void (async () => {
            const rd = r.body.pipeThrough(new TextDecoderStream()).getReader()
            try {
              for (;;) {
                const { value, done } = await rd.read()
                if (done) break
                window.__emit('job:logs', { job: id, text: value })
              }
            } catch {
              // stopped
            }
            window.__emit('job:logs', { job: id, text: '', eof: true })
          })()
        }),
        StopLogs: track('StopLogs', async (id) => window.__follows[id]?.abort()),
        SelfTestEnabled: track('SelfTestEnabled', async () => true),
        SelfTestReport: track('SelfTestReport', async (r) => {
          window.__report = r
        }),
      },
    },
  }
  let es
  window.__follows = {}
  const local = new Map() // events emitted by the fake Go side itself
  window.__emit = (name, data) => {
    for (const cb of local.get(name) ?? []) cb(data)
  }
  window.runtime = {
    EventsOn(name, cb) {
      if (name === 'job:logs') {
        if (!local.has(name)) local.set(name, new Set())
        local.get(name).add(cb)
        return () => local.get(name).delete(cb)
      }
      es ??= new EventSource('/api/v1/events')
      const h = (ev) => cb(JSON.parse(ev.data))
      es.addEventListener(name, h)
      return () => es.removeEventListener(name, h)
    },
  }
}
