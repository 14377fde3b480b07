// The alert rule editor on a machine without GPUs, in a real Chromium
// (playwright-core), against the dev server (e2e/devserver.mjs, started
// here; lab1, this machine, has 2 GPUs, lab2 none):
//
//   node e2e/alert_rules.mjs [--shots DIR] [--timeout 30] [--chromium PATH]
//   npm run e2e:rules
//
// The editor opens on lab1 with no note. Switched to lab2, it says that
// lab2 has no GPU, dims the GPU rules (data-idle) and not the others
// (folder-disk-full, machine-offline), and leaves them editable: a change
// is set on every machine of the pool. Saves DIR/rules-nogpu.png. Prints
// one JSON line; on failure ok is false, with the stage and the reason,
// and the exit status is 1.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { finish, firstLine, openBrowser, parseArgs, stageClock, startDevServer } from './browser.mjs'

const gpuRules = ['gpu-temp', 'gpu-idle-allocation', 'gpu-health', 'gpu-throttle']
const hostRules = ['folder-disk-full', 'machine-offline']

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), { flags: { '--shots': 'shots' } })
    opts.shots ??= mkdtempSync(join(tmpdir(), 'labpool-rules-'))
  } catch (err) {
    console.log(JSON.stringify({ ok: false, stage: 'arguments', error: firstLine(err) }))
    return 1
  }
  const stages = stageClock('dev server')
  const ms = opts.timeout * 1000
  const result = { ok: false, shots: [] }
  let server, browser, page
  try {
    server = await startDevServer(['--offline-after', '0'], ms)
    stages.enter('open alerts')
    browser = await openBrowser(opts, { name: 'rules' })
    page = browser.page
    await page.goto(server.url, { waitUntil: 'domcontentloaded', timeout: ms })
    await page.getByTestId('tab-alerts').click()
    await page.locator('[data-testid="rule"][data-rule="gpu-temp"]').waitFor({ timeout: ms })
    const node = page.getByTestId('rules-node')
    result.opensOn = await node.locator('option:checked').innerText()
    if (!result.opensOn.startsWith('lab1')) throw new Error(`the editor opens on ${result.opensOn}; want lab1, this machine, which has GPUs`)
    if (await page.getByTestId('rules-no-gpu').count()) throw new Error('lab1 has GPUs, yet the editor says its GPU rules watch nothing')

    stages.enter('machine without GPUs')
    await node.selectOption({ label: 'lab2' })
    const note = page.getByTestId('rules-no-gpu')
    await note.waitFor({ timeout: ms })
    result.note = (await note.innerText()).trim()
    if (!result.note.startsWith('lab2 has no GPU')) throw new Error(`the note says ${JSON.stringify(result.note)}; want that lab2 has no GPU`)
    for (const id of [...gpuRules, ...hostRules]) {
      const row = page.locator(`[data-testid="rule"][data-rule="${id}"]`)
      const idle = (await row.getAttribute('data-idle')) === 'true'
      if (idle !== gpuRules.includes(id)) throw new Error(`rule ${id} is ${idle ? '' : 'not '}dimmed on lab2`)
      if (await row.getByTestId('rule-threshold').isDisabled()) throw new Error(`rule ${id} cannot be edited on lab2; a change is set on every machine`)
    }
    const path = join(opts.shots, 'rules-nogpu.png')
    await page.screenshot({ path, fullPage: true })
    result.shots.push(path)
    stages.enter('done')
    result.ok = browser.consoleErrors.length === 0
    if (!result.ok) result.error = `console errors: ${browser.consoleErrors.join(' | ')}`
  } catch (err) {
    result.stage = stages.current
    result.error = firstLine(err)
  }
  stages.done(result)
  result.consoleErrors = [...(browser?.consoleErrors ?? [])]
  await browser?.close()
  server?.stop()
  return finish(result, browser)
}

process.exitCode = await main()
