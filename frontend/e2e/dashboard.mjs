// End-to-end check of the dashboard in a real Chromium (playwright-core).
//
//   node e2e/dashboard.mjs --url http://127.0.0.1:PORT/ --names lab1,lab2 \
//        --screenshot /tmp/dash.png [--timeout 30] [--live-timeout 10] \
//        [--chromium /usr/bin/chromium]
//
// Opens the page, waits until a card for every named machine is visible and
// online, records every meter's data-value, waits until at least one value
// of each named machine changed (live updates), saves a full-page
// screenshot and prints a one-line JSON summary. Exit 0 on success; on any
// failure it prints why (still one JSON line), tries to save the
// screenshot anyway and exits 1. The browser path can also come from
// $CHROMIUM.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'

function parseArgs(argv) {
  const out = { timeout: 30, liveTimeout: 10, chromium: process.env.CHROMIUM || '/usr/bin/chromium' }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const val = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`)
      return argv[++i]
    }
    if (a === '--url') out.url = val()
    else if (a === '--names') out.names = val().split(',').map((s) => s.trim()).filter(Boolean)
    else if (a === '--screenshot') out.screenshot = val()
    else if (a === '--timeout') out.timeout = Number(val())
    else if (a === '--live-timeout') out.liveTimeout = Number(val())
    else if (a === '--chromium') out.chromium = val()
    else throw new Error(`unknown argument ${a}`)
  }
  if (!out.url) throw new Error('--url is required')
  if (!out.names?.length) throw new Error('--names is required (comma-separated machine names)')
  if (!out.screenshot) throw new Error('--screenshot is required')
  return out
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Reads every card: name, id, online, and all data-value attributes keyed by testid (+ GPU index). */
function readCards() {
  return [...document.querySelectorAll('[data-testid="node-card"]')].map((card) => {
    const meters = {}
    for (const el of card.querySelectorAll('[data-value]')) {
      const gpu = el.closest('[data-gpu-index]')
      const key = (gpu ? `gpu${gpu.getAttribute('data-gpu-index')}.` : '') + (el.getAttribute('data-testid') || 'value')
      meters[key] = el.getAttribute('data-value')
    }
    const rect = card.getBoundingClientRect()
    return {
      name: card.getAttribute('data-node-name'),
      id: card.getAttribute('data-node-id'),
      online: card.getAttribute('data-online') === 'true',
      visible: rect.width > 0 && rect.height > 0,
      gpuError: card.querySelector('[data-testid="gpu-error"]')?.textContent?.trim() || '',
      meters,
    }
  })
}

async function main() {
  const t0 = Date.now()
  let opts
  try {
    opts = parseArgs(process.argv.slice(2))
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: String(err.message ?? err) }))
    console.error('usage: node e2e/dashboard.mjs --url URL --names a,b --screenshot FILE')
    return 1
  }
  const profile = mkdtempSync(join(tmpdir(), 'labpool-e2e-'))
  const consoleErrors = []
  let context
  let page
  let stage = 'launch'
  let result = { ok: false, url: opts.url, names: opts.names }
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: opts.chromium,
      headless: true,
      viewport: { width: 1280, height: 800 },
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
    page = context.pages()[0] ?? (await context.newPage())
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()))
    page.on('pageerror', (e) => consoleErrors.push(String(e)))

    stage = 'open page'
    await page.goto(opts.url, { waitUntil: 'domcontentloaded', timeout: opts.timeout * 1000 })

    stage = 'wait for online cards'
    const deadline = Date.now() + opts.timeout * 1000
    let cards = []
    for (;;) {
      cards = await page.evaluate(readCards)
      const missing = opts.names.filter((n) => !cards.some((c) => c.name === n && c.online && c.visible))
      if (missing.length === 0) break
      if (Date.now() > deadline) {
        const seen = cards.map((c) => `${c.name}(${c.online ? 'online' : 'offline'})`).join(', ') || 'no cards'
        throw new Error(`after ${opts.timeout}s these machines have no visible online card: ${missing.join(', ')}; page shows: ${seen}`)
      }
      await sleep(250)
    }
    const first = Object.fromEntries(cards.filter((c) => opts.names.includes(c.name)).map((c) => [c.name, c.meters]))

    stage = 'wait for live updates'
    const liveDeadline = Date.now() + opts.liveTimeout * 1000
    const changed = Object.fromEntries(opts.names.map((n) => [n, []]))
    for (;;) {
      cards = await page.evaluate(readCards)
      for (const n of opts.names) {
        const c = cards.find((x) => x.name === n)
        if (!c) continue
        for (const [k, v] of Object.entries(c.meters)) {
          if (first[n][k] !== undefined && first[n][k] !== v && !changed[n].includes(k)) changed[n].push(k)
        }
      }
      const still = opts.names.filter((n) => changed[n].length === 0)
      if (still.length === 0) break
      if (Date.now() > liveDeadline) {
        throw new Error(`no meter value changed within ${opts.liveTimeout}s on: ${still.join(', ')}`)
      }
      await sleep(250)
    }

    const final = await page.evaluate(() => ({
      title: document.title,
      cards: document.querySelectorAll('[data-testid="node-card"]').length,
      gpuMeters: document.querySelectorAll('[data-testid="gpu-meter"]').length,
      stale: !!document.querySelector('[data-testid="stale-banner"]'),
    }))
    result = {
      ok: true,
      url: opts.url,
      title: final.title,
      cards: final.cards,
      gpuMeters: final.gpuMeters,
      staleBanner: final.stale,
      nodes: Object.fromEntries(
        opts.names.map((n) => {
          const c = cards.find((x) => x.name === n)
          return [n, { id: c.id, online: c.online, gpuError: c.gpuError || undefined, changed: changed[n], meters: c.meters }]
        }),
      ),
      consoleErrors,
    }
  } catch (err) {
    result = { ok: false, url: opts.url, stage, error: String(err?.message ?? err).split('\n')[0], consoleErrors }
  }
  if (page) {
    try {
      await page.screenshot({ path: opts.screenshot, fullPage: true })
      result.screenshot = opts.screenshot
    } catch (err) {
      result.screenshotError = String(err?.message ?? err).split('\n')[0]
      if (result.ok) result = { ...result, ok: false, error: `screenshot: ${result.screenshotError}` }
    }
  }
  result.ms = Date.now() - t0
  await context?.close().catch(() => {})
  rmSync(profile, { recursive: true, force: true })
  console.log(JSON.stringify(result))
  return result.ok ? 0 : 1
}

process.exitCode = await main()
