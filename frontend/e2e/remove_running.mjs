// End-to-end check that the Jobs view removes a running job only after
// saying its work is lost, in a real Chromium (playwright-core), against
// `labpool web`:
//
//   node e2e/remove_running.mjs --url http://127.0.0.1:PORT/?token=SECRET \
//        --job ID --shots DIR [--timeout 30] [--chromium /usr/bin/chromium]
//
// Opens the Jobs tab, waits for the row of --job to be running, clicks
// Remove, checks that the dialog says the job is running and that removing
// stops it (the confirm reads "Stop and remove"), screenshots it
// (remove-running.png), cancels once (the job stays running), then confirms
// and waits for the row to go. One JSON line out; exit 1 names the stage.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { firstLine, openBrowser, parseArgs } from './browser.mjs'

const flags = { '--url': 'url', '--job': 'job', '--shots': 'shots' }

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), { flags, required: ['--url', '--job', '--shots'], defaults: { timeout: 30 } })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: firstLine(err) }))
    return 1
  }
  mkdirSync(opts.shots, { recursive: true })
  const ms = opts.timeout * 1000
  const result = { ok: false }
  let browser, page
  let stage = 'launch browser'
  try {
    browser = await openBrowser(opts, { name: 'remove-running' })
    page = browser.page
    stage = 'open page'
    await page.goto(opts.url, { waitUntil: 'domcontentloaded', timeout: ms })
    await page.getByTestId('tab-jobs').click()
    stage = 'job running'
    const row = page.locator(`[data-testid="job-row"][data-job-id="${opts.job}"]`)
    await page.locator(`[data-testid="job-row"][data-job-id="${opts.job}"][data-state="running"]`).waitFor({ timeout: ms })
    stage = 'dialog'
    await row.getByTestId('job-remove').click()
    const dialog = page.getByTestId('remove-dialog')
    result.warning = ((await dialog.getByTestId('remove-running').textContent({ timeout: ms })) ?? '').trim()
    result.confirm = ((await dialog.getByTestId('job-remove-confirm').textContent()) ?? '').trim()
    if (!/running/.test(result.warning) || !/work is lost/.test(result.warning)) throw new Error(`the dialog says "${result.warning}"`)
    if (result.confirm !== 'Stop and remove') throw new Error(`the confirm reads "${result.confirm}"`)
    await page.screenshot({ path: join(opts.shots, 'remove-running.png'), fullPage: true })
    stage = 'cancel'
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    await dialog.waitFor({ state: 'detached', timeout: ms })
    if ((await row.getAttribute('data-state')) !== 'running') throw new Error('cancel changed the job')
    stage = 'confirm'
    await row.getByTestId('job-remove').click()
    await page.getByTestId('job-remove-confirm').click()
    await row.waitFor({ state: 'detached', timeout: ms })
    await page.screenshot({ path: join(opts.shots, 'remove-done.png'), fullPage: true })
    result.ok = true
    console.log(JSON.stringify(result))
    return 0
  } catch (err) {
    result.stage = stage
    result.error = firstLine(err)
    if (page) await page.screenshot({ path: join(opts.shots, 'remove-failed.png'), fullPage: true }).catch(() => {})
    console.log(JSON.stringify(result))
    return 1
  } finally {
    await browser?.close()
  }
}

process.exit(await main())
