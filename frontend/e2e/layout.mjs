// The window at 1280×800 (a laptop's screen), in a real Chromium
// (playwright-core), against the dev server (e2e/devserver.mjs, started here
// on a free port unless --url names one started with the same flags):
//
//   node e2e/layout.mjs [--shots DIR] [--url URL] [--timeout 30] [--chromium PATH]
//   npm run e2e:layout
//
// 1. A machine's long name is shown whole beside its "this machine" badge,
//    on its card and in the dense view (the badge wraps below it instead).
// 2. On the Jobs tab, with a port of a job forwarded, every row's action
//    buttons and every tunnel URL lie within the viewport, whole (the
//    table scrolls nowhere, the URL is not cut short).
// 3. Opening a job's logs from the page's top brings the log panel into
//    view, whole.
//
// Saves (in DIR, else a new temporary folder) layout-cards.png, layout-dense.png, layout-jobs.png and
// layout-logs.png (what the viewport shows). Prints one JSON line; on
// failure ok is false, with the stage and the reason, and the exit status
// is 1.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { finish, firstLine, openBrowser, parseArgs, stageClock, startDevServer } from './browser.mjs'

const W = 1280
const H = 800
// Longer than the card leaves a name beside its ID and badge before: a
// workstation named as labs name them.
const LONG = 'alice-workstation-a100x8-lab'

/** Where el lies, and whether its text is cut (clipped by its own box or an ancestor's). */
const boxOf = (el) => {
  const r = el.getBoundingClientRect()
  let clipped = el.scrollWidth > el.clientWidth + 1
  for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
    const s = getComputedStyle(a)
    if (s.overflowX === 'visible') continue
    const ar = a.getBoundingClientRect()
    if (r.left < ar.left - 1 || r.right > ar.right + 1) clipped = true
  }
  return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height, clipped, text: el.textContent.trim() }
}

// Within the viewport, give or take the fraction of a pixel a scroll leaves.
const inView = (b) => b.width > 0 && b.left >= -1 && b.right <= W + 1 && b.top >= -1 && b.bottom <= H + 1

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), { flags: { '--url': 'url', '--shots': 'shots' } })
    opts.shots ??= mkdtempSync(join(tmpdir(), 'labpool-layout-'))
  } catch (err) {
    console.log(JSON.stringify({ ok: false, stage: 'arguments', error: firstLine(err) }))
    console.error('usage: node e2e/layout.mjs [--shots DIR] [--url URL]')
    return 1
  }
  const stages = stageClock('dev server')
  const enter = stages.enter
  const ms = opts.timeout * 1000
  const result = { ok: false, viewport: `${W}x${H}`, shots: [] }
  let server, browser, page
  let consoleErrors = []
  const shot = async (name) => {
    const path = join(opts.shots, `layout-${name}.png`)
    await page.screenshot({ path })
    result.shots.push(path)
  }
  try {
    if (!opts.url) server = await startDevServer(['--self-name', LONG, '--offline-after', '0'], ms)
    const url = opts.url ?? server.url
    result.url = url
    const api = (p, init) => fetch(new URL(`api/v1${p}`, url), init).then((r) => (r.ok ? r.json() : Promise.reject(new Error(`${p}: ${r.status}`))))

    enter('forward a port')
    const jobs = await api('/jobs')
    const web = jobs.find((j) => j.state === 'running' && (j.spec.ports ?? []).length > 0)
    if (!web) throw new Error('the dev server runs no job with a port')
    const tunnel = await api(`/jobs/${web.id}/open`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ port: web.spec.ports[0] }) })
    result.tunnel = tunnel.url

    enter('open page')
    browser = await openBrowser(opts, { name: 'layout', viewport: { width: W, height: H } })
    ;({ page, consoleErrors } = browser)
    await page.goto(url, { waitUntil: 'domcontentloaded', timeout: ms })
    const card = page.locator(`[data-testid="node-card"][data-node-name="${LONG}"]`)
    await card.waitFor({ timeout: ms })

    enter('name beside this machine')
    const name = await card.getByTestId('node-name').evaluate(boxOf)
    const tag = await card.locator('.tag').filter({ hasText: 'this machine' }).evaluate(boxOf)
    result.cardName = name
    if (name.text !== LONG || name.clipped) throw new Error(`the card shows the name ${JSON.stringify(name.text)} cut short (clipped ${name.clipped}); want ${LONG} whole`)
    if (tag.clipped || !inView(tag)) throw new Error(`the "this machine" badge is cut or out of view: ${JSON.stringify(tag)}`)
    await shot('cards')
    if (await page.getByTestId('view-dense').count()) {
      await page.getByTestId('view-dense').click()
      const row = page.locator('[data-testid="dense-row"] td.machine').filter({ hasText: 'this machine' }).first()
      await row.waitFor({ timeout: ms })
      const dn = await row.locator('.name button, .name .label').first().evaluate(boxOf)
      const dt = await row.locator('.tag').evaluate(boxOf)
      result.denseName = dn
      if (dn.text !== LONG || dn.clipped) throw new Error(`the dense view shows the name ${JSON.stringify(dn.text)} cut short (clipped ${dn.clipped}); want ${LONG} whole`)
      if (dt.clipped) throw new Error(`the dense view's "this machine" badge is cut: ${JSON.stringify(dt)}`)
      await shot('dense')
      await page.getByTestId('view-cards').click()
    }

    enter('jobs')
    await page.getByTestId('tab-jobs').click()
    await page.getByTestId('job-tunnel').first().waitFor({ timeout: ms })
    // With the ended jobs shown too, the table is as long as a lab's.
    await page.getByTestId('jobs-all').check({ force: true })
    await page.locator('[data-testid="job-row"][data-state="exited"]').first().waitFor({ timeout: ms })
    const overflow = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
      table: [...document.querySelectorAll('.tablewrap')].map((t) => t.scrollWidth - t.clientWidth),
    }))
    result.overflow = overflow
    if (overflow.page > 0 || overflow.table.some((d) => d > 0)) throw new Error(`the Jobs tab scrolls sideways at ${W}px: page by ${overflow.page}px, table by ${overflow.table.join(', ')}px`)
    const rows = page.getByTestId('job-row')
    result.rows = await rows.count()
    if (result.rows < 5) throw new Error(`${result.rows} job rows; want the dev server's jobs`)
    const buttons = await page.locator('[data-testid="job-row"] td.acts .btn').evaluateAll((els) => els.map((e) => ({ job: e.closest('tr').dataset.jobName, label: e.textContent.trim(), ...(() => {
      const r = e.getBoundingClientRect()
      return { left: r.left, right: r.right, width: r.width }
    })() })))
    result.buttons = buttons.length
    const outside = buttons.filter((b) => !(b.width > 0 && b.left >= 0 && b.right <= W))
    if (buttons.length === 0) throw new Error('no action buttons in the Jobs table')
    if (outside.length) throw new Error(`action buttons outside the ${W}px viewport: ${outside.map((b) => `${b.job} ${b.label} at ${Math.round(b.left)}..${Math.round(b.right)}`).join('; ')}`)
    const link = await page.getByTestId('job-tunnel').first().evaluate(boxOf)
    result.tunnelShown = link
    if (link.clipped || link.left < 0 || link.right > W) throw new Error(`the tunnel URL is cut or outside the viewport: ${JSON.stringify(link)}`)
    if (!link.text.includes(tunnel.url.replace(/^https?:\/\//, ''))) throw new Error(`the tunnel link says ${JSON.stringify(link.text)}; want the whole ${tunnel.url}`)
    await shot('jobs')

    enter('logs')
    await page.evaluate(() => window.scrollTo(0, 0))
    const running = page.locator('[data-testid="job-row"][data-state="running"]').filter({ has: page.getByTestId('job-logs-button') }).first()
    await running.getByTestId('job-logs-button').click()
    const panel = page.getByTestId('job-logs-panel')
    await panel.waitFor({ timeout: ms })
    // The panel comes into view (it may scroll there smoothly).
    await page
      .waitForFunction(
        ([w, h]) => {
          const r = document.querySelector('[data-testid="job-logs-panel"]')?.getBoundingClientRect()
          const top = document.querySelector('header.bar')?.getBoundingClientRect().bottom ?? 0
          return !!r && r.top >= top - 1 && r.bottom <= h + 1 && r.left >= -1 && r.right <= w + 1
        },
        [W, H],
        { timeout: 5000 },
      )
      .catch(() => {})
    const lp = await panel.evaluate(boxOf)
    result.logs = lp
    if (!inView(lp)) throw new Error(`the logs opened out of view: panel at ${Math.round(lp.top)}..${Math.round(lp.bottom)} px of a ${H} px viewport`)
    // Not under the header, which stays at the top of the window.
    const header = await page.locator('header.bar').evaluate((e) => e.getBoundingClientRect().bottom)
    if (lp.top < header - 1) throw new Error(`the logs opened under the header: panel from ${Math.round(lp.top)} px, header to ${Math.round(header)} px`)
    await shot('logs')
    enter('done')
    result.ok = consoleErrors.length === 0
    if (!result.ok) result.error = `console errors: ${consoleErrors.join(' | ')}`
  } catch (err) {
    result.stage = stages.current
    result.error = firstLine(err)
    if (page) await shot('failed').catch(() => {})
  }
  stages.done(result)
  result.consoleErrors = [...consoleErrors]
  await browser?.close()
  server?.stop()
  return finish(result, browser)
}

process.exitCode = await main()
