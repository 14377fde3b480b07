// End-to-end check of the jobs UI in a real Chromium (playwright-core):
//
//   node e2e/jobs.mjs --url http://127.0.0.1:PORT/ --node gpu2 \
//        --image labpool-test/busybox:1 --cmd "sh -c 'echo hello; sleep 600'" \
//        --expect-log hello --screenshot /tmp/jobs.png \
//        [--gpus N] [--timeout 30] [--chromium /usr/bin/chromium]
//
// Opens Launch from the header, picks the machine and the image, enters the
// command, waits for the placement plan to name the machine, launches, waits
// on the Jobs tab for the new row to be running, opens its logs and waits for
// the text, clicks Stop and waits for "exited". Saves FILE (the end state),
// FILE-launch.png (the dialog) and FILE-running.png (running, with logs).
// Prints one JSON line; on failure ok is false, with the stage and the
// reason, and the exit status is 1.
import { finish, firstLine, openBrowser, parseArgs, stageClock } from './browser.mjs'

const flags = {
  '--url': 'url',
  '--node': 'node',
  '--image': 'image',
  '--cmd': 'cmd',
  '--expect-log': 'expectLog',
  '--screenshot': 'screenshot',
  '--gpus': ['gpus', 'number'],
}

const shotName = (base, suffix) => base.replace(/(\.png)?$/, `-${suffix}.png`)

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), {
      flags,
      required: ['--url', '--node', '--image', '--cmd', '--expect-log', '--screenshot'],
      defaults: { gpus: 0 },
    })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, stage: 'arguments', error: firstLine(err) }))
    console.error('usage: node e2e/jobs.mjs --url URL --node NAME --image IMAGE --cmd CMD --expect-log TEXT --screenshot FILE')
    return 1
  }
  let consoleErrors = []
  let browser, page
  const stages = stageClock()
  const enter = stages.enter
  const result = { ok: false, url: opts.url, node: opts.node, image: opts.image }
  const ms = opts.timeout * 1000
  try {
    browser = await openBrowser(opts, { name: 'jobs', viewport: { width: 1360, height: 900 } })
    ;({ page, consoleErrors } = browser)

    enter('open page')
    await page.goto(opts.url, { waitUntil: 'domcontentloaded', timeout: ms })
    await page.locator(`[data-testid="node-card"][data-node-name="${opts.node}"][data-online="true"]`).waitFor({ timeout: ms })

    enter('launch dialog')
    await page.getByTestId('launch-button').click()
    const dialog = page.getByTestId('launch-dialog')
    await dialog.waitFor({ timeout: ms })
    const option = page.getByTestId('launch-node').locator(`option[data-name="${opts.node}"]`)
    if ((await option.count()) === 0) throw new Error(`the Machine list has no ${opts.node}`)
    if (await option.isDisabled()) throw new Error(`${opts.node} is listed but cannot run jobs: ${(await option.textContent())?.trim()}`)
    await page.getByTestId('launch-node').selectOption((await option.getAttribute('value')) ?? '')
    await page.getByTestId('launch-image').fill(opts.image)
    await page.getByTestId('launch-cmd').fill(opts.cmd)
    if (opts.gpus > 0) await page.getByTestId('launch-gpus').fill(String(opts.gpus))

    enter('plan')
    const plan = page.getByTestId('launch-plan')
    await plan.filter({ hasText: opts.node }).waitFor({ timeout: ms })
    result.plan = (await plan.innerText()).replace(/\s+/g, ' ').trim()
    await page.screenshot({ path: shotName(opts.screenshot, 'launch') })

    enter('submit')
    await page.getByTestId('launch-submit').click()
    const refused = page.getByTestId('launch-error')
    await Promise.race([dialog.waitFor({ state: 'detached', timeout: ms }), refused.waitFor({ timeout: ms })])
    if (await refused.isVisible().catch(() => false)) throw new Error(`the launch was refused: ${(await refused.innerText()).replace(/\s+/g, ' ').trim()}`)

    enter('job running')
    await page.getByTestId('tab-jobs').click()
    const mine = page.locator('[data-testid="job-row"][data-focus="true"]')
    await mine.waitFor({ timeout: ms })
    result.job = await mine.getAttribute('data-job-id')
    result.name = await mine.getAttribute('data-job-name')
    const row = page.locator(`[data-testid="job-row"][data-job-id="${result.job}"]`)
    await page.locator(`[data-testid="job-row"][data-job-id="${result.job}"][data-state="running"]`).waitFor({ timeout: ms }).catch(async (err) => {
      throw new Error(`the job is ${await row.getAttribute('data-state')}, not running: ${err.message.split('\n')[0]}`)
    })

    enter('logs')
    await row.getByTestId('job-logs-button').click()
    const logs = page.getByTestId('job-logs')
    await logs.filter({ hasText: opts.expectLog }).waitFor({ timeout: ms }).catch(async (err) => {
      const seen = ((await logs.innerText().catch(() => '')) || '').slice(-300)
      throw new Error(`no "${opts.expectLog}" in the logs (last: ${JSON.stringify(seen)}): ${err.message.split('\n')[0]}`)
    })
    result.logTail = (await logs.innerText()).trim().split('\n').slice(-3)
    await page.screenshot({ path: shotName(opts.screenshot, 'running'), fullPage: true })

    enter('stop')
    await row.getByTestId('job-stop').click()
    await page.locator(`[data-testid="job-row"][data-job-id="${result.job}"][data-state="exited"]`).waitFor({ timeout: ms }).catch(async (err) => {
      const st = await row.getAttribute('data-state').catch(() => 'gone')
      const why = await page.getByTestId('jobs-error').innerText({ timeout: 500 }).catch(() => '')
      throw new Error(`the job is ${st}, not exited${why ? `: ${why}` : ''} (${err.message.split('\n')[0]})`)
    })
    enter('done')
    result.ok = true
  } catch (err) {
    result.stage = stages.current
    result.error = firstLine(err)
  }
  if (page) {
    await page.screenshot({ path: opts.screenshot, fullPage: true }).then(
      () => (result.screenshot = opts.screenshot),
      (err) => (result.screenshotError = firstLine(err)),
    )
  }
  stages.done(result)
  result.consoleErrors = consoleErrors
  return finish(result, browser)
}

process.exitCode = await main()
