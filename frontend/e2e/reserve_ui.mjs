// The machine view's reservation strip and the Launch dialog's share, MIG
// and time fields in a real Chromium (playwright-core), against `labpool
// web` wired to real agents:
//
//   node e2e/reserve_ui.mjs --url http://127.0.0.1:PORT/?token=SECRET \
//        --node gpu1 --reservation rsv-... --shots DIR [--timeout 60]
//
// Opens the machine view of --node, waits for the strip to show the
// reservation, saves DIR/reservation-strip.png (the strip) and
// DIR/machine-view.png (the page); then opens the Launch dialog on --node,
// asks for a 0.5 share capped at 20GiB for 30m, waits for the plan to name
// the machine and saves DIR/launch-share.png (the dialog); then asks for
// both GPUs with no time limit (DIR/launch-reserved.png: the plan names the
// reservation) and for 30 minutes (DIR/launch-before.png: it fits). Prints
// one JSON line: { ok, block: { text, title, clipped }, plan, fields: {
// share, mem, mig, time }, reserved, before, consoleErrors }; exit 1 names
// the failing stage.
import { finish, firstLine, openBrowser, parseArgs, stageClock } from './browser.mjs'

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), {
      flags: { '--url': 'url', '--node': 'node', '--reservation': 'reservation', '--shots': 'shots' },
      required: ['--url', '--node', '--reservation', '--shots'],
      defaults: { timeout: 60 },
    })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: firstLine(err) }))
    return 1
  }
  const stages = stageClock()
  const result = { ok: false }
  let browser
  try {
    browser = await openBrowser(opts, { name: 'reserve-ui', viewport: { width: 1280, height: 900 }, args: ['--lang=en-US'] })
    const { page } = browser
    page.setDefaultTimeout(opts.timeout * 1000)
    stages.enter('dashboard')
    await page.goto(opts.url, { waitUntil: 'domcontentloaded' })
    const card = page.locator(`[data-testid="node-card"][data-node-name="${opts.node}"][data-online="true"]`)
    await card.waitFor({ state: 'visible' })
    stages.enter('machine view')
    await card.locator('[data-testid="node-open"]').click()
    const strip = page.getByTestId('reservation-strip')
    const block = strip.getByTestId(`reservation-${opts.reservation}`)
    await block.waitFor({ state: 'visible' })
    // clipped: its label is cut short (an ellipsis), unreadable.
    result.block = {
      text: (await block.innerText()).trim(),
      title: await block.getAttribute('title'),
      clipped: await block.evaluate((b) => [b, ...b.querySelectorAll('*')].some((e) => e.scrollWidth > e.clientWidth + 1)),
    }
    await strip.scrollIntoViewIfNeeded()
    await strip.screenshot({ path: `${opts.shots}/reservation-strip.png` })
    await page.screenshot({ path: `${opts.shots}/machine-view.png`, fullPage: true })

    stages.enter('launch dialog')
    await page.getByTestId('launch-button').click()
    const dialog = page.getByTestId('launch-dialog')
    await dialog.waitFor()
    const option = page.getByTestId('launch-node').locator(`option[data-name="${opts.node}"]`)
    await page.getByTestId('launch-node').selectOption((await option.getAttribute('value')) ?? '')
    await page.getByTestId('launch-image').fill('labpool-test/busybox:1')
    await page.getByTestId('launch-cmd').fill('sleep 600')
    await page.getByTestId('launch-share').fill('0.5')
    await page.getByTestId('launch-share-mem').fill('20GiB')
    const time = page.getByTestId('launch-time')
    await time.fill('30m')
    stages.enter('plan')
    const plan = page.getByTestId('launch-plan')
    await plan.filter({ hasText: opts.node }).waitFor()
    result.plan = (await plan.innerText()).replace(/\s+/g, ' ').trim()
    result.fields = {}
    for (const [k, id] of [['share', 'launch-share'], ['mem', 'launch-share-mem'], ['mig', 'launch-mig'], ['time', 'launch-time']]) {
      const f = page.getByTestId(id)
      result.fields[k] = (await f.count()) ? { visible: await f.isVisible(), value: await f.inputValue() } : null
    }
    await dialog.screenshot({ path: `${opts.shots}/launch-share.png` })

    // Both GPUs with no time limit cross the reservation: the plan says so;
    // with 30 minutes, ending before it, they fit.
    stages.enter('reserved')
    await page.getByTestId('launch-share').fill('')
    await page.getByTestId('launch-share-mem').fill('')
    await page.getByTestId('launch-gpus').fill('2')
    await time.fill('')
    await plan.filter({ hasText: 'reserved' }).waitFor()
    result.reserved = (await plan.innerText()).replace(/\s+/g, ' ').trim()
    await dialog.screenshot({ path: `${opts.shots}/launch-reserved.png` })
    stages.enter('before the reservation')
    await time.fill('30m')
    await plan.filter({ hasText: 'Runs on' }).waitFor()
    result.before = (await plan.innerText()).replace(/\s+/g, ' ').trim()
    await dialog.screenshot({ path: `${opts.shots}/launch-before.png` })
    result.consoleErrors = browser.consoleErrors
    result.ok = true
  } catch (err) {
    result.stage = stages.current
    result.error = firstLine(err)
    if (browser) await browser.page.screenshot({ path: `${opts.shots}/failed.png`, fullPage: true }).catch(() => {})
  }
  stages.done(result)
  return finish(result, browser)
}

process.exitCode = await main()
