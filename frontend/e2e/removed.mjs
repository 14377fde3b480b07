// End-to-end check of what the window shows on a machine removed from its
// pool, in a real Chromium (playwright-core), against `labpool web`:
//
//   node e2e/removed.mjs --url http://127.0.0.1:PORT/ --by NAME [--shot FILE] [--timeout 30]
//
// Waits for the header's notice (role alert) saying who removed this machine
// (--by) and when, and for its offer to join another pool; saves a
// screenshot. Prints one JSON line; on failure ok is false with the stage
// and the reason, and the exit status is 1.
import { finish, firstLine, openBrowser, parseArgs, stageClock } from './browser.mjs'

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), { flags: { '--url': 'url', '--by': 'by', '--shot': 'shot' }, required: ['--url', '--by'] })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, stage: 'arguments', error: firstLine(err) }))
    return 1
  }
  const result = { ok: false, url: opts.url }
  const ms = opts.timeout * 1000
  const stages = stageClock()
  let browser, page
  let consoleErrors = []
  try {
    browser = await openBrowser(opts, { name: 'removed' })
    ;({ page, consoleErrors } = browser)
    stages.enter('open page')
    await page.goto(opts.url, { waitUntil: 'domcontentloaded', timeout: ms })
    stages.enter('notice')
    const notice = page.getByTestId('removed-notice')
    await notice.waitFor({ timeout: ms })
    result.notice = (await notice.innerText()).replace(/\s+/g, ' ').trim()
    if (!result.notice.includes(`by ${opts.by} on `)) throw new Error(`the notice reads ${JSON.stringify(result.notice)}, not "by ${opts.by} on ..."`)
    if ((await notice.getAttribute('role')) !== 'alert') throw new Error('the notice is not an alert')
    await page.getByRole('button', { name: 'Join another pool' }).waitFor({ timeout: ms })
    if (opts.shot) await page.screenshot({ path: opts.shot })
    result.shot = opts.shot
    stages.enter('done')
    result.ok = true
  } catch (err) {
    result.stage = stages.current
    result.error = firstLine(err)
  }
  stages.done(result)
  result.consoleErrors = consoleErrors
  return finish(result, browser)
}

process.exitCode = await main()
