// The machine view's GPU topology and MIG in a real Chromium (playwright-core),
// against `labpool web`:
//
//   node e2e/topology_ui.mjs --url http://127.0.0.1:PORT/?token=SECRET \
//        --node gpu1 --shot FILE [--timeout 60] [--chromium /usr/bin/chromium]
//
// Opens the dashboard, clicks the card of --node (the machine view), waits
// for its topology matrix, reads every cell and each GPU's MIG mode, saves a
// screenshot to --shot and prints one JSON line: { ok, cells: { "0-1":
// "NV18", ... }, mig: { "0": "off", ... }, consoleErrors }; exit 1 names the
// failing stage.
import { finish, firstLine, openBrowser, parseArgs, stageClock } from './browser.mjs'

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), { flags: { '--url': 'url', '--node': 'node', '--shot': 'shot' }, required: ['--url', '--node', '--shot'], defaults: { timeout: 60 } })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: firstLine(err) }))
    return 1
  }
  const stages = stageClock()
  const result = { ok: false }
  let browser
  try {
    browser = await openBrowser(opts, { name: 'topology-ui', viewport: { width: 1280, height: 900 }, args: ['--lang=en-US'] })
    const { page } = browser
    page.setDefaultTimeout(opts.timeout * 1000)
    stages.enter('dashboard')
    await page.goto(opts.url, { waitUntil: 'domcontentloaded' })
    const card = page.locator(`[data-testid="node-card"][data-node-name="${opts.node}"]`)
    await card.waitFor({ state: 'visible' })
    stages.enter('machine view')
    await card.locator('[data-testid="node-open"]').click()
    await page.locator('[data-testid="topology-matrix"]').waitFor()
    stages.enter('read')
    result.cells = await page.evaluate(() =>
      Object.fromEntries([...document.querySelectorAll('[data-testid^="link-"]')].map((c) => [c.getAttribute('data-testid').slice(5), c.textContent.trim()])),
    )
    result.mig = await page.evaluate(() =>
      Object.fromEntries([...document.querySelectorAll('[data-testid^="mig-mode-"]')].map((c) => [c.getAttribute('data-testid').slice(9), c.textContent.trim()])),
    )
    result.linkTitle = await page.locator('[data-testid="link-0-4"]').getAttribute('title')
    stages.enter('screenshot')
    await page.screenshot({ path: opts.shot, fullPage: true })
    result.shot = opts.shot
    result.consoleErrors = browser.consoleErrors
    result.ok = true
  } catch (err) {
    result.stage = stages.current
    result.error = firstLine(err)
    if (browser) await browser.page.screenshot({ path: opts.shot, fullPage: true }).catch(() => {})
  }
  stages.done(result)
  return finish(result, browser)
}

process.exitCode = await main()
