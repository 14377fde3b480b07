// End-to-end check of the Folders view in a real Chromium (playwright-core):
//
//   node e2e/folders.mjs --url http://127.0.0.1:PORT/ --folder gpu1:data \
//        --expect-entry readme.txt --src gpu1:data --dst gpu2:scratch/from-ui \
//        --screenshot /tmp/folders.png [--chromium /usr/bin/chromium] \
//        [--share-name NAME --share-path /abs/path]
//
// Opens the Folders tab; with --share-name and --share-path, first shares
// that directory of the page's machine from the form and waits for its card
// (and its Unshare button). Then browses the folder and waits for the entry,
// starts a copy from the form and waits for its transfer to be done. One
// JSON line out ({"ok":true}, plus "shared":NAME when it shared); exit 1
// with the failing stage (and a screenshot) otherwise.
import { firstLine, openBrowser, parseArgs } from './browser.mjs'

const flags = {
  '--url': 'url',
  '--folder': 'folder',
  '--expect-entry': 'entry',
  '--src': 'src',
  '--dst': 'dst',
  '--screenshot': 'screenshot',
  '--share-name': 'shareName',
  '--share-path': 'sharePath',
}

function readArgs(argv) {
  const out = parseArgs(argv, { flags, required: ['--url', '--folder', '--expect-entry', '--src', '--dst', '--screenshot'] })
  if (!out.shareName !== !out.sharePath) throw new Error('--share-name and --share-path go together')
  return out
}

// Shares path as name from the form; waits for the folder's card, or throws
// with the error the view shows.
async function share(page, name, path, ms) {
  const form = page.getByTestId('share-form')
  await form.locator('input[name="share-name"]').fill(name, { timeout: ms })
  await form.locator('input[name="share-path"]').fill(path)
  await form.getByTestId('share-submit').click()
  const unshare = page.locator(`[data-testid="unshare"][data-name="${name}"]`)
  const failed = page.getByTestId('folders-error')
  await unshare.or(failed).first().waitFor({ timeout: ms })
  if (!(await unshare.count())) throw new Error(`share ${name}: ${await failed.first().textContent()}`)
  const card = await unshare.getAttribute('data-folder')
  await page.locator(`[data-testid="folder"][data-folder="${card}"]`).waitFor({ timeout: ms })
}

async function main() {
  let opts
  try {
    opts = readArgs(process.argv.slice(2))
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: firstLine(err) }))
    return 1
  }
  const result = { ok: false }
  let browser, page
  let stage = 'launch browser'
  try {
    browser = await openBrowser(opts, { name: 'folders' })
    page = browser.page
    const ms = opts.timeout * 1000
    stage = 'open page'
    await page.goto(opts.url, { waitUntil: 'domcontentloaded', timeout: ms })
    stage = 'browse'
    await page.getByTestId('tab-folders').click()
    if (opts.shareName) {
      stage = 'share'
      await share(page, opts.shareName, opts.sharePath, ms)
      result.shared = opts.shareName
    }
    stage = 'browse'
    await page.locator(`[data-testid="folder"][data-folder="${opts.folder}"]`).click({ timeout: ms })
    await page.locator(`[data-testid="entry"][data-name="${opts.entry}"]`).waitFor({ timeout: ms })
    stage = 'copy'
    await page.getByTestId('copy-src').fill(opts.src)
    await page.getByTestId('copy-dst').fill(opts.dst)
    await page.getByTestId('copy-start').click()
    await page.locator('[data-testid="transfer"][data-state="done"]').filter({ hasText: `${opts.src} → ${opts.dst}` }).first().waitFor({ timeout: ms })
    await page.screenshot({ path: opts.screenshot, fullPage: true })
    result.ok = true
    console.log(JSON.stringify(result))
    return 0
  } catch (err) {
    result.stage = stage
    result.error = firstLine(err)
    if (page) await page.screenshot({ path: opts.screenshot, fullPage: true }).catch(() => {})
    console.log(JSON.stringify(result))
    return 1
  } finally {
    await browser?.close()
  }
}

process.exit(await main())
