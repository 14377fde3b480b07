// End-to-end walk through the history, alerts and report views in a real
// Chromium (playwright-core), against `labpool web`:
//
//   node e2e/history_ui.mjs --url http://127.0.0.1:PORT/?token=SECRET \
//        --node gpu1 --shots DIR [--alert-rule gpu-temp] [--gpu 1] \
//        [--timeout 60] [--chromium /usr/bin/chromium]
//
// Opens the dashboard, clicks the card of --node (the machine view), waits
// for its charts, switches to GPU --gpu and through the ranges, drags across
// a chart to zoom (and checks the window narrowed and was fetched again),
// opens the pool usage view, waits in the alerts view for an active alert of
// --alert-rule (when given), opens the report and exports its CSV. Saves a
// screenshot of each view into --shots (dashboard.png, machine-host.png,
// machine-gpu.png, machine-24h.png, machine-stale.png (history requests
// refused: the kept answer, marked stale), machine-zoom.png, pool.png,
// alerts.png, report.png, report-node.png; with --offline:
// machine-offline.png and the narrow-*.png of a 720 px window) and prints
// one JSON line; exit 1 names the failing stage.
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { firstLine, openBrowser, parseArgs } from './browser.mjs'

const flags = {
  '--url': 'url',
  '--node': 'node',
  '--shots': 'shots',
  '--alert-rule': 'alertRule',
  '--gpu': ['gpu', 'number'],
  '--offline': ['offline', 'bool'],
}

/** Reads every chart of the page: title, points, bands, x range. */
function readCharts() {
  const box = document.querySelector('[data-testid="charts"]')
  return {
    tier: box?.getAttribute('data-tier') ?? '',
    step: Number(box?.getAttribute('data-step') ?? 0),
    busy: box?.getAttribute('aria-busy') === 'true',
    charts: [...document.querySelectorAll('[data-testid="chart"]')].map((c) => ({
      title: c.getAttribute('data-title'),
      points: Number(c.getAttribute('data-points')),
      bands: c.getAttribute('data-bands') === 'true',
      xmin: Number(c.getAttribute('data-xmin')),
      xmax: Number(c.getAttribute('data-xmax')),
      canvas: !!c.querySelector('canvas'),
    })),
  }
}

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), { flags, required: ['--url', '--node', '--shots'], defaults: { timeout: 60, gpu: 0 } })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: firstLine(err) }))
    return 1
  }
  mkdirSync(opts.shots, { recursive: true })
  const ms = opts.timeout * 1000
  const result = { ok: false, stage: 'launch', shots: [] }
  let browser
  const shot = async (page, name) => {
    const file = join(opts.shots, name)
    await page.screenshot({ path: file, fullPage: true })
    result.shots.push(file)
  }
  const chartsReady = (page, want) =>
    page.waitForFunction(
      ({ want }) => {
        const box = document.querySelector('[data-testid="charts"]')
        if (!box || box.getAttribute('aria-busy') === 'true') return false
        const cs = [...document.querySelectorAll('[data-testid="chart"]')]
        if (cs.length < want.count || !cs.every((c) => c.querySelector('canvas'))) return false
        if (want.tier && box.getAttribute('data-tier') !== want.tier) return false
        const span = Number(cs[0].getAttribute('data-xmax')) - Number(cs[0].getAttribute('data-xmin'))
        if (want.span && Math.abs(span - want.span) > want.span * 0.02) return false
        return cs.some((c) => Number(c.getAttribute('data-points')) >= (want.points ?? 1))
      },
      { want },
      { timeout: ms },
    )
  try {
    browser = await openBrowser(opts, { name: 'history-ui', viewport: { width: 1280, height: 860 }, args: ['--lang=en-US'] })
    const { page, context } = browser
    page.setDefaultTimeout(ms)

    result.stage = 'dashboard'
    await page.goto(opts.url, { waitUntil: 'domcontentloaded' })
    const card = page.locator(`[data-testid="node-card"][data-node-name="${opts.node}"]`)
    await card.waitFor({ state: 'visible' })
    if (opts.offline) {
      // The machine is gone: its view still opens, from the history this
      // machine holds, and says it is offline.
      result.stage = 'offline machine view'
      await page.waitForFunction((n) => document.querySelector(`[data-testid="node-card"][data-node-name="${n}"]`)?.getAttribute('data-online') === 'false', opts.node)
      const t0 = Date.now()
      await card.locator('[data-testid="node-open"]').click()
      await page.locator('[data-testid="machine-offline"]').waitFor()
      await page.locator(`[data-testid="show-gpu-${opts.gpu}"]`).click()
      await chartsReady(page, { count: 5, points: 5 })
      result.openMs = Date.now() - t0
      result.offlineNote = (await page.locator('[data-testid="machine-offline"]').innerText()).trim()
      result.gpu = await page.evaluate(readCharts)
      await shot(page, 'machine-offline.png')
      // The window's smallest width (720 px): the views still read.
      result.stage = 'narrow window'
      await page.setViewportSize({ width: 720, height: 900 })
      await page.waitForTimeout(300)
      await shot(page, 'narrow-machine.png')
      await page.locator('[data-testid="tab-alerts"]').click()
      await page.locator('[data-testid="rules"]').waitFor()
      await shot(page, 'narrow-alerts.png')
      await page.locator('[data-testid="tab-report"]').click()
      await page.locator('[data-testid="report-table"], [data-testid="report-empty"]').first().waitFor()
      await shot(page, 'narrow-report.png')
    } else {
      await walk(page, card)
    }
    result.consoleErrors = browser.consoleErrors
    result.ok = true
    result.stage = 'done'
  } catch (err) {
    result.error = firstLine(err)
    if (browser) {
      result.consoleErrors = browser.consoleErrors
      await shot(browser.page, 'failed.png').catch(() => {})
    }
  } finally {
    await browser?.close()
  }
  console.log(JSON.stringify(result))
  return result.ok ? 0 : 1

  /** The walk through every view, with the machine online. */
  async function walk(page, card) {
    await page.waitForFunction((n) => document.querySelector(`[data-testid="node-card"][data-node-name="${n}"]`)?.getAttribute('data-online') === 'true', opts.node)
    result.cardHealth = await card.locator('[data-testid="gpu-health"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-health') + ': ' + e.getAttribute('title')))
    await shot(page, 'dashboard.png')

    result.stage = 'open machine view'
    const t0 = Date.now()
    const firstSeries = page.waitForResponse((r) => r.url().includes('/api/v1/history/series'))
    await card.locator('[data-testid="node-open"]').click()
    void firstSeries.then(() => (result.seriesMs = Date.now() - t0), () => {})
    await page.locator('[data-testid="machine-view"]').waitFor()
    await chartsReady(page, { count: 4, points: 5 })
    result.openMs = Date.now() - t0
    result.host = await page.evaluate(readCharts)
    await shot(page, 'machine-host.png')

    result.stage = 'gpu charts'
    await page.locator(`[data-testid="show-gpu-${opts.gpu}"]`).click()
    await page.waitForFunction(() => document.querySelector('[data-testid="chart"]')?.getAttribute('data-title') === 'Utilization')
    await chartsReady(page, { count: 5, points: 5 })
    result.gpu = await page.evaluate(readCharts)
    result.health = await page.locator('[data-testid="gpu-facts"] [data-testid="gpu-health"]').getAttribute('data-health')
    result.processes = (await page.locator('[data-testid="gpu-processes"]').innerText()).replace(/\s+/g, ' ').trim()
    await shot(page, 'machine-gpu.png')

    result.stage = 'ranges'
    result.ranges = {}
    const seconds = { '1h': 3600, '24h': 86400, '7d': 7 * 86400, '30d': 30 * 86400, '1y': 365 * 86400 }
    for (const r of ['24h', '7d', '30d', '1y', '1h']) {
      await page.locator(`[data-testid="range-${r}"]`).click()
      await page.waitForFunction((r) => document.querySelector(`[data-testid="range-${r}"]`)?.getAttribute('aria-pressed') === 'true', r)
      // A young history has no point yet in the coarse tiers: the chart is drawn empty.
      await chartsReady(page, { count: 5, points: 0, span: seconds[r] })
      const c = await page.evaluate(readCharts)
      result.ranges[r] = { tier: c.tier, step: c.step, span: c.charts[0].xmax - c.charts[0].xmin, points: c.charts[0].points, bands: c.charts[0].bands }
      if (r === '24h') await shot(page, 'machine-24h.png')
    }

    // The daemon stops answering history: a range seen before still draws,
    // from the answer the page kept, marked stale.
    result.stage = 'daemon unreachable'
    const errorsBefore = browser.consoleErrors.length
    await page.route('**/api/v1/history/**', (r) => r.abort())
    await page.locator('[data-testid="range-30d"]').click()
    await page.locator('[data-testid="history-stale"]').waitFor()
    await chartsReady(page, { count: 5, points: 0, span: seconds['30d'] })
    result.stale = (await page.locator('[data-testid="history-stale"]').innerText()).trim()
    await shot(page, 'machine-stale.png')
    await page.unroute('**/api/v1/history/**')
    browser.consoleErrors.splice(errorsBefore) // the refused requests, as the browser logs them

    // From the 7 d range (15 min points) into its last hours: the window is
    // fetched again, at a finer tier.
    result.stage = 'drag to zoom'
    await page.locator('[data-testid="range-7d"]').click()
    await chartsReady(page, { count: 5, points: 1, span: seconds['7d'] })
    const before = await page.evaluate(readCharts)
    const over = page.locator('[data-testid="chart"] .u-over').first()
    const box = await over.boundingBox()
    if (!box) throw new Error('no plot area to drag across')
    const y = box.y + box.height / 2
    await page.mouse.move(box.x + box.width * 0.96, y)
    await page.mouse.down()
    await page.mouse.move(box.x + box.width * 0.98, y, { steps: 6 })
    await page.mouse.move(box.x + box.width - 1, y, { steps: 6 })
    await page.mouse.up()
    await page.waitForFunction(() => !document.querySelector('[data-testid="zoom-reset"]')?.disabled)
    await page.waitForFunction((step) => Number(document.querySelector('[data-testid="charts"]')?.getAttribute('data-step')) < step, before.step).catch(() => {})
    await chartsReady(page, { count: 5, points: 1 })
    const after = await page.evaluate(readCharts)
    const spanBefore = before.charts[0].xmax - before.charts[0].xmin
    const spanAfter = after.charts[0].xmax - after.charts[0].xmin
    result.zoom = { spanBefore, spanAfter, tierBefore: before.tier, tier: after.tier, points: after.charts[0].points }
    if (!(spanAfter < spanBefore * 0.1)) throw new Error(`the drag did not zoom: span ${spanBefore} s -> ${spanAfter} s`)
    if (after.step >= before.step) throw new Error(`the zoomed window was not fetched at a finer tier: ${before.tier} -> ${after.tier}`)
    if (after.charts.some((c) => c.xmin !== after.charts[0].xmin)) throw new Error('the charts did not zoom together')
    // A second drag, into the last minutes, where the samples are.
    const box2 = await over.boundingBox()
    await page.mouse.move(box2.x + box2.width * 0.95, y)
    await page.mouse.down()
    await page.mouse.move(box2.x + box2.width - 1, y, { steps: 8 })
    await page.mouse.up()
    await page.waitForFunction((span) => {
      const c = document.querySelector('[data-testid="chart"]')
      return Number(c?.getAttribute('data-xmax')) - Number(c?.getAttribute('data-xmin')) < span / 2
    }, spanAfter)
    // (A window that starts before this young history's seconds do is
    // answered from the minutes tier: the daemon's choice, so any tier will do.)
    await chartsReady(page, { count: 5, points: 1 })
    const deeper = await page.evaluate(readCharts)
    result.zoom.deeperTier = deeper.tier
    result.zoom.deeperSpan = deeper.charts[0].xmax - deeper.charts[0].xmin
    result.zoom.deeperPoints = deeper.charts[0].points
    await shot(page, 'machine-zoom.png')
    await page.locator('[data-testid="zoom-reset"]').click()
    await page.waitForFunction(() => document.querySelector('[data-testid="zoom-reset"]')?.disabled)

    result.stage = 'pool view'
    await page.locator('[data-testid="tab-usage"]').click()
    await page.locator('[data-testid="stack-chart"] canvas').waitFor()
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="stack-chart"]')?.getAttribute('data-points')) > 0)
    // Drag into the last minutes of the hour, where this young pool has samples.
    const pbox = await page.locator('[data-testid="stack-chart"] .u-over').boundingBox()
    await page.mouse.move(pbox.x + pbox.width * 0.95, pbox.y + pbox.height / 2)
    await page.mouse.down()
    await page.mouse.move(pbox.x + pbox.width - 1, pbox.y + pbox.height / 2, { steps: 8 })
    await page.mouse.up()
    await page.waitForFunction(() => !document.querySelector('[data-testid="pool-zoom-reset"]')?.disabled)
    result.pool = (await page.locator('[data-testid="stack-chart"] figcaption').innerText()).replace(/\s+/g, ' ').trim()
    await shot(page, 'pool.png')

    result.stage = 'alerts view'
    await page.locator('[data-testid="tab-alerts"]').click()
    await page.locator('[data-testid="alerts-view"]').waitFor()
    await page.locator('[data-testid="rules"]').waitFor()
    if (opts.alertRule) {
      const alert = page.locator(`[data-testid="alert"][data-rule="${opts.alertRule}"]`).first()
      await alert.waitFor()
      result.alert = (await alert.innerText()).replace(/\s+/g, ' ').trim()
    }
    result.rules = await page.locator('[data-testid="rule"]').count()
    // An owner edits a rule: folder-disk-full from 90% to 95%.
    const rule = page.locator('[data-testid="rule"][data-rule="folder-disk-full"]')
    await rule.locator('[data-testid="rule-threshold"]').fill('95')
    await rule.locator('[data-testid="rule-save"]').click()
    await page.locator('.notice', { hasText: 'folder-disk-full saved' }).waitFor()
    result.ruleSaved = (await page.locator('.notice').textContent())?.trim()
    await shot(page, 'alerts.png')
    if (opts.alertRule) {
      await page.locator(`[data-testid="alert"][data-rule="${opts.alertRule}"] [data-testid="alert-mute"]`).first().click()
      // The rule is muted on its machine; the alert reads muted once that machine re-records it.
      result.muted = await page
        .locator(`[data-testid="alert"][data-rule="${opts.alertRule}"].muted`)
        .first()
        .waitFor({ timeout: 10000 })
        .then(() => true, () => false)
      result.muteNotice = (await page.locator('.notice').textContent())?.trim()
    }

    result.stage = 'report view'
    await page.locator('[data-testid="tab-report"]').click()
    const reportBy = (by) =>
      page.waitForFunction((by) => {
        const t = document.querySelector('[data-testid="report-table"]')
        return (t && t.getAttribute('data-by') === by) || document.querySelector('[data-testid="report-empty"]')
      }, by)
    await reportBy('member')
    result.reportRows = await page.locator('[data-testid="report-row"]').count()
    result.reportFirst = (await page.locator('[data-testid="report-row"]').first().innerText().catch(() => '')).replace(/\s+/g, ' ').trim()
    await shot(page, 'report.png')
    await page.locator('[data-testid="report-by-node"]').click()
    await reportBy('node')
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('[data-testid="report-csv"]').click()])
    const csvPath = join(opts.shots, 'report.csv')
    await download.saveAs(csvPath)
    result.csv = readFileSync(csvPath, 'utf8').split('\n')[0]
    await shot(page, 'report-node.png')
  }
}

process.exit(await main())
