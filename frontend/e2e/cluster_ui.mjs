// A Slurm cluster's card, its machine view and the Launch dialog on it, in a
// real Chromium (playwright-core), against the local API of a Service whose
// replica holds the cluster machine's node record (app/web's
// TestClusterUI):
//
//   node e2e/cluster_ui.mjs --url http://127.0.0.1:PORT/ --node hpc --job ID \
//        --shots DIR [--timeout 60] [--chromium /usr/bin/chromium]
//
// Reads the card (partitions, nodes, GPUs by type, the queue with its
// reasons and owners), opens the machine view, then the Launch dialog on the
// cluster (asks 2 GPUs for 2h and reads the plan's sbatch line), then the
// row of the cluster's job --job in the Jobs view, saving a
// screenshot of each into --shots (cluster-card.png, cluster-dashboard.png,
// cluster-machine.png, cluster-launch.png, cluster-jobs.png) and printing one JSON line; exit 1 names the failing
// stage.
import { join } from 'node:path'
import { finish, firstLine, openBrowser, parseArgs, stageClock } from './browser.mjs'
import { readCluster } from './cluster_read.mjs'

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), { flags: { '--url': 'url', '--node': 'node', '--job': 'job', '--shots': 'shots' }, required: ['--url', '--node', '--job', '--shots'], defaults: { timeout: 60 } })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: firstLine(err) }))
    return 1
  }
  const stages = stageClock()
  const result = { ok: false }
  let browser
  let shot = join(opts.shots, 'cluster-card.png')
  try {
    browser = await openBrowser(opts, { name: 'cluster-ui', viewport: { width: 1280, height: 1000 }, args: ['--lang=en-US'] })
    const { page } = browser
    page.setDefaultTimeout(opts.timeout * 1000)
    stages.enter('dashboard')
    await page.goto(opts.url, { waitUntil: 'domcontentloaded' })
    const card = page.locator(`[data-testid="node-card"][data-node-name="${opts.node}"]`)
    await card.locator('[data-testid="cluster"]').waitFor({ state: 'visible' })
    result.cardOnline = (await card.getAttribute('data-online')) === 'true'
    result.card = await card.evaluate(readCluster)
    result.cardLaunch = (await card.locator('[data-testid="node-launch"]').count()) === 1
    await card.screenshot({ path: shot })
    result.shots = [shot]
    shot = join(opts.shots, 'cluster-dashboard.png')
    await page.screenshot({ path: shot, fullPage: true })
    result.shots.push(shot)
    result.summary = (await page.locator('[data-testid="summary"]').textContent()).replace(/\s+/g, ' ').trim()

    stages.enter('machine view')
    shot = join(opts.shots, 'cluster-machine.png')
    await card.locator('[data-testid="node-open"]').click()
    const view = page.locator('[data-testid="machine-view"] [data-testid="cluster"]')
    await view.waitFor()
    result.machine = await view.evaluate(readCluster)
    await page.screenshot({ path: shot, fullPage: true })
    result.shots.push(shot)
    await page.locator('[data-testid="machine-back"]').click()

    stages.enter('launch dialog')
    shot = join(opts.shots, 'cluster-launch.png')
    await card.locator('[data-testid="node-launch"]').click()
    const dialog = page.locator('[data-testid="launch-dialog"]')
    await dialog.locator('[data-testid="launch-cluster"]').waitFor()
    result.partitions = await dialog.locator('[data-testid="launch-partition"] option').allTextContents()
    result.runtime = (await dialog.locator('[data-testid="launch-runtime"]').textContent()).trim()
    await dialog.locator('[data-testid="launch-cmd"]').fill('python train.py')
    await dialog.locator('[data-testid="launch-gpus"]').fill('2')
    await dialog.locator('[data-testid="launch-time"]').fill('2h')
    const sbatch = dialog.locator('[data-testid="launch-sbatch"]')
    await page.waitForFunction(() => /--time=120/.test(document.querySelector('[data-testid="launch-sbatch"]')?.textContent ?? ''))
    result.sbatch = (await sbatch.textContent()).trim()
    result.plan = (await dialog.locator('[data-testid="launch-plan"]').textContent()).replace(/\s+/g, ' ').trim()
    result.user = (await dialog.locator('[data-testid="launch-cluster-user"]').textContent()).trim()
    await dialog.locator('[data-testid="launch-nodes"]').fill('2')
    await page.waitForFunction(() => /--nodes=2/.test(document.querySelector('[data-testid="launch-sbatch"]')?.textContent ?? ''))
    result.sbatchTwoNodes = (await sbatch.textContent()).trim()
    await dialog.locator('[data-testid="launch-nodes"]').fill('1')
    await page.waitForFunction(() => /--nodes=1/.test(document.querySelector('[data-testid="launch-sbatch"]')?.textContent ?? ''))
    await page.screenshot({ path: shot })
    result.shots.push(shot)
    await dialog.locator('button', { hasText: 'Cancel' }).click()

    stages.enter('jobs')
    await page.locator('[data-testid="tab-jobs"]').click()
    const row = page.locator(`[data-testid="job-row"][data-job-id="${opts.job}"]`)
    await row.waitFor()
    result.jobState = (await row.locator('[data-testid="job-state"]').textContent()).trim()
    result.jobHosts = (await row.locator('[data-testid="job-hosts"]').textContent()).trim()
    shot = join(opts.shots, 'cluster-jobs.png')
    await page.screenshot({ path: shot })
    result.shots.push(shot)
    result.pwned = await page.evaluate(() => window.__pwned === 1 || document.querySelector('img[src="x"]') !== null)
    result.consoleErrors = browser.consoleErrors
    result.ok = true
  } catch (err) {
    result.stage = stages.current
    result.error = firstLine(err)
    if (browser) await browser.page.screenshot({ path: shot, fullPage: true }).catch(() => {})
  }
  stages.done(result)
  return finish(result, browser)
}

process.exitCode = await main()
