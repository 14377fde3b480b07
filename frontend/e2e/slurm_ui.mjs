// A real Slurm cluster through labpool's UI, in a real Chromium
// (playwright-core), against `labpool web` on a laptop that follows the
// cluster's agent (app/e2e's TestSlurmUI):
//
//   node e2e/slurm_ui.mjs --url http://127.0.0.1:PORT/?token=SECRET \
//        --node cluster --cmd "sh -c 'echo \$CUDA_VISIBLE_DEVICES; sleep 300'" \
//        --gpus 2 --shots DIR [--timeout 60] [--chromium /usr/bin/chromium]
//
// Reads the cluster's card while it is idle, launches --cmd with --gpus GPUs
// through the Launch dialog on the cluster, waits for the job to run in
// Jobs (its hosts, its log's GPU indices), reads the card again (GPUs
// allocated, the queue), then stops the job from its row and waits for it to
// end. Saves a screenshot of each step into --shots (slurm-card-idle.png,
// slurm-launch.png, slurm-jobs-running.png, slurm-card-running.png,
// slurm-machine.png, slurm-jobs-stopped.png) and prints one JSON line; exit
// 1 names the failing stage.
import { join } from 'node:path'
import { finish, firstLine, openBrowser, parseArgs, stageClock } from './browser.mjs'
import { readCluster } from './cluster_read.mjs'

const flat = (s) => (s ?? '').replace(/\s+/g, ' ').trim()

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), {
      flags: { '--url': 'url', '--node': 'node', '--cmd': 'cmd', '--gpus': ['gpus', 'number'], '--shots': 'shots' },
      required: ['--url', '--node', '--cmd', '--gpus', '--shots'],
      defaults: { timeout: 60 },
    })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: firstLine(err) }))
    return 1
  }
  const stages = stageClock()
  const result = { ok: false, shots: [] }
  let browser
  let shot = join(opts.shots, 'slurm-card-idle.png')
  const keep = async (page, name, target = page, full = false) => {
    shot = join(opts.shots, name)
    await target.screenshot(full ? { path: shot, fullPage: true } : { path: shot })
    result.shots.push(shot)
  }
  try {
    browser = await openBrowser(opts, { name: 'slurm-ui', viewport: { width: 1280, height: 1000 }, args: ['--lang=en-US'] })
    const { page } = browser
    page.setDefaultTimeout(opts.timeout * 1000)

    stages.enter('dashboard')
    await page.goto(opts.url, { waitUntil: 'domcontentloaded' })
    const card = page.locator(`[data-testid="node-card"][data-node-name="${opts.node}"][data-online="true"]`)
    await card.locator('[data-testid="cluster"] [data-testid="cluster-node"]').first().waitFor()
    result.idle = await card.locator('[data-testid="cluster"]').evaluate(readCluster)
    await keep(page, 'slurm-card-idle.png', card)

    stages.enter('launch dialog')
    shot = join(opts.shots, 'slurm-launch.png')
    await card.locator('[data-testid="node-launch"]').click()
    const dialog = page.locator('[data-testid="launch-dialog"]')
    await dialog.locator('[data-testid="launch-cluster"]').waitFor()
    result.partitions = await dialog.locator('[data-testid="launch-partition"] option').allTextContents()
    await dialog.locator('[data-testid="launch-cmd"]').fill(opts.cmd)
    await dialog.locator('[data-testid="launch-gpus"]').fill(String(opts.gpus))
    const gres = `--gres=gpu:${opts.gpus}`
    await page.waitForFunction((g) => (document.querySelector('[data-testid="launch-sbatch"]')?.textContent ?? '').includes(g), gres)
    result.sbatch = flat(await dialog.locator('[data-testid="launch-sbatch"]').textContent())
    result.plan = flat(await dialog.locator('[data-testid="launch-plan"]').textContent())
    result.timeHint = await dialog.locator('[data-testid="launch-time"]').getAttribute('placeholder')
    await keep(page, 'slurm-launch.png')
    await dialog.locator('[data-testid="launch-submit"]').click()
    const refused = page.locator('[data-testid="launch-error"]')
    await Promise.race([dialog.waitFor({ state: 'detached' }), refused.waitFor()])
    if (await refused.isVisible().catch(() => false)) throw new Error(`the launch was refused: ${flat(await refused.innerText())}`)

    stages.enter('job running')
    shot = join(opts.shots, 'slurm-jobs-running.png')
    await page.locator('[data-testid="tab-jobs"]').click()
    const mine = page.locator('[data-testid="job-row"][data-focus="true"]')
    await mine.waitFor()
    result.job = await mine.getAttribute('data-job-id')
    const row = page.locator(`[data-testid="job-row"][data-job-id="${result.job}"]`)
    await page.locator(`[data-testid="job-row"][data-job-id="${result.job}"][data-state="running"]`).waitFor().catch(async (err) => {
      throw new Error(`the job is ${await row.getAttribute('data-state')}, not running: ${firstLine(err)}`)
    })
    // The hosts come with the state that Slurm reports for the running job.
    await row.locator('[data-testid="job-hosts"]').filter({ hasText: /node\d/ }).waitFor()
    result.hosts = flat(await row.locator('[data-testid="job-hosts"]').textContent())
    result.runningState = flat(await row.locator('[data-testid="job-state"]').textContent())
    await row.locator('[data-testid="job-logs-button"]').click()
    const logs = page.locator('[data-testid="job-logs"]')
    await logs.filter({ hasText: /\d,\d/ }).waitFor()
    result.log = flat(await logs.innerText()).slice(-200)
    result.stats = flat(await page.locator('[data-testid="job-stats"]').textContent({ timeout: 1000 }).catch(() => ''))
    await keep(page, 'slurm-jobs-running.png')

    stages.enter('card running')
    shot = join(opts.shots, 'slurm-card-running.png')
    await page.locator('[data-testid="tab-dashboard"]').click()
    await card.locator('[data-testid="cluster-queue-job"][data-state="RUNNING"]').waitFor()
    await page.waitForFunction(
      ([name, n]) => [...document.querySelectorAll(`[data-testid="node-card"][data-node-name="${name}"] [data-testid="cluster-gpu-meter"]`)].some((m) => m.textContent.includes(`${n} / `)),
      [opts.node, opts.gpus],
    )
    result.busy = await card.locator('[data-testid="cluster"]').evaluate(readCluster)
    await keep(page, 'slurm-card-running.png', card)

    stages.enter('machine view')
    shot = join(opts.shots, 'slurm-machine.png')
    await card.locator('[data-testid="node-open"]').click()
    const view = page.locator('[data-testid="machine-view"] [data-testid="cluster"]')
    await view.waitFor()
    result.machine = await view.evaluate(readCluster)
    await keep(page, 'slurm-machine.png', page, true)
    await page.locator('[data-testid="machine-back"]').click()

    stages.enter('stop')
    shot = join(opts.shots, 'slurm-jobs-stopped.png')
    await page.locator('[data-testid="tab-jobs"]').click()
    await row.locator('[data-testid="job-stop"]').click()
    await page.waitForFunction(
      (id) => {
        const s = document.querySelector(`[data-testid="job-row"][data-job-id="${id}"]`)?.getAttribute('data-state')
        return s && !['running', 'starting', 'stopping', 'queued'].includes(s)
      },
      result.job,
    )
    result.stoppedState = await row.getAttribute('data-state')
    result.stoppedText = flat(await row.locator('[data-testid="job-state"]').textContent())
    result.stoppedExit = flat(await row.locator('[data-testid="job-exit"]').textContent())
    await keep(page, 'slurm-jobs-stopped.png')
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
