// DEV CHECK: exercises the Wails code path of the UI in a plain Chromium.
// It injects a fake window.go.app.Bindings + window.runtime (backed by the
// page's own HTTP API, e.g. e2e/devserver.mjs or `labpool web`) before the
// app loads, enables the self-test, and prints the report the app sends to
// SelfTestReport. Exit 0 when the report shows at least one card.
//
//   node e2e/wails-shim.mjs --url http://127.0.0.1:8787/ [--screenshot FILE]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'

const args = process.argv.slice(2)
const opt = (n) => (args.indexOf(n) >= 0 ? args[args.indexOf(n) + 1] : undefined)
const url = opt('--url')
const shot = opt('--screenshot')
if (!url) {
  console.log(JSON.stringify({ ok: false, error: '--url is required' }))
  process.exit(1)
}

// Runs in the page before any script: Go-binding look-alikes over HTTP.
function shim() {
  const get = async (path, init) => {
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
        SelfTestEnabled: track('SelfTestEnabled', async () => true),
        SelfTestReport: track('SelfTestReport', async (r) => {
          window.__report = r
        }),
      },
    },
  }
  let es
  window.runtime = {
    EventsOn(name, cb) {
      es ??= new EventSource('/api/v1/events')
      const h = (ev) => cb(JSON.parse(ev.data))
      es.addEventListener(name, h)
      return () => es.removeEventListener(name, h)
    },
  }
}

const profile = mkdtempSync(join(tmpdir(), 'labpool-shim-'))
let code = 1
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1280, height: 800 },
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
})
try {
  const page = ctx.pages()[0] ?? (await ctx.newPage())
  await page.addInitScript(shim)
  await page.goto(url)
  await page.waitForFunction(() => window.__report, null, { timeout: 20000 })
  const report = JSON.parse(await page.evaluate(() => window.__report))
  const calls = await page.evaluate(() => [...new Set(window.__calls)])
  if (shot) await page.screenshot({ path: shot, fullPage: true })
  const ok = report.cards > 0 && report.cpuValues.length > 0 && calls.includes('Nodes')
  console.log(JSON.stringify({ ok, report, calls }))
  code = ok ? 0 : 1
} catch (err) {
  console.log(JSON.stringify({ ok: false, error: String(err?.message ?? err).split('\n')[0] }))
} finally {
  await ctx.close()
  rmSync(profile, { recursive: true, force: true })
}
process.exit(code)
