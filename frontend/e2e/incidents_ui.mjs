// End-to-end check of the dashboard's order, the Launch dialog's default,
// one alert per incident and the report's unmeasured column, in a real
// Chromium (playwright-core), against `labpool web`:
//
//   node e2e/incidents_ui.mjs --url http://127.0.0.1:PORT/?token=SECRET \
//        --gpu-node gpu1 --plain-node laptop --shots DIR [--job train-idle] \
//        [--hot-gpu 7] [--timeout 60] [--chromium /usr/bin/chromium]
//
// Reads the cards' order and heights (GPU machines first, full; GPU-less
// ones after, compact), opens the Launch dialog and reads its GPU count,
// waits in the alerts view until the hot GPU's incident (folding its other
// rules) and the idle job's (naming --job and listing its GPUs) are the
// active alerts, and reads the report of the last hour by job with its
// unmeasured column. Saves dashboard.png, launch.png, alerts.png and
// report.png into --shots and prints one JSON line; exit 1 names the
// failing stage.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { finish, firstLine, openBrowser, parseArgs, stageClock } from './browser.mjs'

const flags = {
  '--url': 'url',
  '--gpu-node': 'gpuNode',
  '--plain-node': 'plainNode',
  '--shots': 'shots',
  '--job': 'job',
  '--hot-gpu': ['hotGPU', 'number'],
}

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), {
      flags,
      required: ['--url', '--gpu-node', '--plain-node', '--shots'],
      defaults: { timeout: 60, hotGPU: 7, job: 'train-idle' },
    })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: firstLine(err) }))
    return 1
  }
  mkdirSync(opts.shots, { recursive: true })
  const ms = opts.timeout * 1000
  const result = { ok: false, shots: [] }
  const clock = stageClock()
  let browser
  const shot = async (page, name) => {
    const file = join(opts.shots, name)
    await page.screenshot({ path: file, fullPage: true })
    result.shots.push(file)
  }
  try {
    browser = await openBrowser(opts, { name: 'incidents' })
    const { page } = browser

    clock.enter('dashboard')
    await page.goto(opts.url)
    await page.waitForFunction(
      ({ a, b }) => {
        const names = [...document.querySelectorAll('[data-testid="node-card"]')].map((c) => c.getAttribute('data-node-name'))
        return names.includes(a) && names.includes(b) && document.querySelectorAll('[data-testid="gpu-meter"]').length > 0
      },
      { a: opts.gpuNode, b: opts.plainNode },
      { timeout: ms },
    )
    result.cards = await page.evaluate(() =>
      [...document.querySelectorAll('[data-testid="node-card"]')].map((c) => {
        const r = c.getBoundingClientRect()
        const name = c.querySelector('[data-testid="node-name"]')
        // what does not fit: the card's content wider than the card, its name cut
        const overflow = [...c.querySelectorAll('*')].some((e) => e.getBoundingClientRect().right > r.right + 1)
        const nameCut = !!name && name.scrollWidth > name.clientWidth + 1
        return { name: c.getAttribute('data-node-name'), compact: c.getAttribute('data-compact') === 'true', top: Math.round(r.top), height: Math.round(r.height), overflow, nameCut }
      }),
    )
    await shot(page, 'dashboard.png')

    clock.enter('launch dialog')
    await page.click('[data-testid="launch-button"]')
    await page.waitForSelector('[data-testid="launch-gpus"]', { timeout: ms })
    result.launchGPUs = Number(await page.inputValue('[data-testid="launch-gpus"]'))
    await shot(page, 'launch.png')
    await page.keyboard.press('Escape')
    await page.waitForSelector('[data-testid="launch-gpus"]', { state: 'detached', timeout: ms })

    clock.enter('alerts')
    await page.click('[data-testid="tab-alerts"]')
    const want = { hot: opts.hotGPU, job: opts.job }
    await page.waitForFunction(
      (w) => {
        const as = [...document.querySelectorAll('[data-testid="active-alerts"] [data-testid="alert"]')]
        const text = as.map((a) => a.textContent)
        return (
          text.some((t) => t.includes(`GPU ${w.hot}`) && t.includes('gpu-temp') && t.includes('with')) &&
          text.some((t) => t.includes(`job ${w.job}`) && t.includes('GPUs'))
        )
      },
      want,
      { timeout: ms },
    )
    result.alerts = await page.evaluate(() =>
      [...document.querySelectorAll('[data-testid="active-alerts"] [data-testid="alert"]')].map((a) => ({
        rule: a.getAttribute('data-rule'),
        rules: a.querySelector('[data-testid="alert-rules"]')?.textContent ?? '',
        text: a.textContent.replace(/\s+/g, ' ').trim(),
      })),
    )
    await shot(page, 'alerts.png')

    clock.enter('report')
    await page.click('[data-testid="tab-report"]')
    await page.click('[data-testid="report-range-1h"]')
    await page.click('[data-testid="report-by-job"]')
    await page.waitForFunction((job) => [...document.querySelectorAll('[data-testid="report-row"]')].some((r) => r.textContent.includes(job)), opts.job, {
      timeout: ms,
    })
    result.report = await page.evaluate(() => ({
      header: [...document.querySelectorAll('[data-testid="report-view"] thead th')].map((th) => th.textContent.trim()),
      rows: [...document.querySelectorAll('[data-testid="report-row"]')].map((r) => ({
        label: r.querySelector('th')?.textContent.trim(),
        cells: [...r.querySelectorAll('td.num')].map((td) => td.textContent.trim()),
        unmeasured: r.querySelector('[data-testid="report-unmeasured"]')?.textContent.trim() ?? null,
      })),
    }))
    await shot(page, 'report.png')
    result.consoleErrors = browser.consoleErrors
    clock.enter('done')
    result.ok = true
  } catch (err) {
    result.stage = clock.current
    result.error = firstLine(err)
    if (browser) await shot(browser.page, 'failure.png').catch(() => {})
  }
  clock.done(result)
  return finish(result, browser)
}

process.exit(await main())
