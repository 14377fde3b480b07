// End-to-end check of the jobs UI in a real Chromium (playwright-core):
//
//   node e2e/jobs.mjs --url http://127.0.0.1:PORT/ --node gpu2 \
//        --image labpool-test/busybox:1 --cmd "sh -c 'echo hello; sleep 600'" \
//        --expect-log hello --screenshot /tmp/jobs.png [--chromium /usr/bin/chromium]
//
// Opens the Launch dialog, picks the machine and the image, enters the
// command, launches, switches to Jobs, waits for the row to be running,
// opens its logs and waits for the text, stops it and waits for "exited".
// Prints one JSON line; exit 1 with the failing stage otherwise (a
// screenshot is saved either way).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'

function parseArgs(argv) {
  const out = { timeout: 30, chromium: process.env.CHROMIUM || '/usr/bin/chromium' }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    const val = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`)
      return argv[++i]
    }
    if (a === '--url') out.url = val()
    else if (a === '--node') out.node = val()
    else if (a === '--image') out.image = val()
    else if (a === '--cmd') out.cmd = val()
    else if (a === '--expect-log') out.expectLog = val()
    else if (a === '--screenshot') out.screenshot = val()
    else if (a === '--timeout') out.timeout = Number(val())
    else if (a === '--chromium') out.chromium = val()
    else throw new Error(`unknown argument ${a}`)
  }
  for (const k of ['url', 'node', 'image', 'cmd', 'expectLog', 'screenshot']) {
    if (!out[k]) throw new Error(`--${k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase())} is required`)
  }
  return out
}

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2))
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: String(err.message ?? err) }))
    return 1
  }
  const t0 = Date.now()
  const profile = mkdtempSync(join(tmpdir(), 'labpool-jobs-'))
  const consoleErrors = []
  let context, page
  let stage = 'launch browser'
  const result = { ok: false, url: opts.url }
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: opts.chromium,
      headless: true,
      viewport: { width: 1280, height: 800 },
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
    page = context.pages()[0] ?? (await context.newPage())
    page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()))
    page.on('pageerror', (e) => consoleErrors.push(String(e)))
    page.on('dialog', (d) => d.accept())
    const ms = opts.timeout * 1000

    stage = 'open page'
    await page.goto(opts.url, { waitUntil: 'domcontentloaded', timeout: ms })
    await page.locator(`[data-testid="node-card"][data-node-name="${opts.node}"][data-online="true"]`).waitFor({ timeout: ms })

    stage = 'launch dialog'
    await page.getByTestId('tab-jobs').click()
    await page.getByTestId('launch-button').click()
    const dialog = page.getByTestId('launch-dialog')
    await dialog.waitFor({ timeout: ms })
    await page.getByTestId('launch-node').selectOption(opts.node)
    await page.getByTestId('launch-image').fill(opts.image)
    await page.getByTestId('launch-cmd').fill(opts.cmd)
    await page.getByTestId('launch-plan').filter({ hasText: opts.node }).waitFor({ timeout: ms })
    result.plan = (await page.getByTestId('launch-plan').textContent())?.trim()
    await page.screenshot({ path: opts.screenshot.replace(/\.png$/, '') + '-launch.png' })
    await page.getByTestId('launch-submit').click()
    await dialog.waitFor({ state: 'detached', timeout: ms })

    stage = 'job running'
    const row = page.locator('[data-testid="job-row"][data-state="running"]').first()
    await row.waitFor({ timeout: ms })
    result.job = await row.getAttribute('data-job-id')

    stage = 'logs'
    await row.getByTestId('job-logs-button').click()
    await page.getByTestId('job-logs').filter({ hasText: opts.expectLog }).waitFor({ timeout: ms })
    await page.screenshot({ path: opts.screenshot, fullPage: true })

    stage = 'stop'
    await row.getByTestId('job-stop').click()
    await page.getByTestId('jobs-all').check()
    await page.locator(`[data-testid="job-row"][data-job-id="${result.job}"][data-state="exited"]`).waitFor({ timeout: ms })

    result.ok = true
    result.ms = Date.now() - t0
    result.consoleErrors = consoleErrors
    console.log(JSON.stringify(result))
    return 0
  } catch (err) {
    result.stage = stage
    result.error = String(err.message ?? err).split('\n')[0]
    result.consoleErrors = consoleErrors
    if (page) await page.screenshot({ path: opts.screenshot, fullPage: true }).catch(() => {})
    console.log(JSON.stringify(result))
    return 1
  } finally {
    await context?.close().catch(() => {})
    rmSync(profile, { recursive: true, force: true })
  }
}

process.exit(await main())
