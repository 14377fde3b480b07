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
import { finish, firstLine, openBrowser, parseArgs } from './browser.mjs'

const flags = {
  '--url': 'url',
  '--names': ['names', 'list'],
  '--screenshot': 'screenshot',
  '--live-timeout': ['liveTimeout', 'number'],
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
    opts = parseArgs(process.argv.slice(2), { flags, required: ['--url', '--names', '--screenshot'], defaults: { liveTimeout: 10 } })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: firstLine(err) }))
    console.error('usage: node e2e/dashboard.mjs --url URL --names a,b --screenshot FILE')
    return 1
  }
  let browser
  let page
  let consoleErrors = []
  let stage = 'launch'
  let result = { ok: false, url: opts.url, names: opts.names }
  try {
    browser = await openBrowser(opts, { name: 'e2e' })
    page = browser.page
    consoleErrors = browser.consoleErrors

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
    result = { ok: false, url: opts.url, stage, error: firstLine(err), consoleErrors }
  }
  if (page) {
    try {
      await page.screenshot({ path: opts.screenshot, fullPage: true })
      result.screenshot = opts.screenshot
    } catch (err) {
      result.screenshotError = firstLine(err)
      if (result.ok) result = { ...result, ok: false, error: `screenshot: ${result.screenshotError}` }
    }
  }
  result.ms = Date.now() - t0
  return finish(result, browser)
}

process.exitCode = await main()
