// End-to-end check of who may use a folder, in the Folders view of a real
// Chromium (playwright-core), against `labpool web`:
//
//   node e2e/folder_members.mjs --url http://127.0.0.1:PORT/?token=SECRET \
//        --folder NAME --member NAME --share-name NAME --share-path /abs/path \
//        --shots DIR [--timeout 30] [--chromium /usr/bin/chromium]
//
// Opens the Folders tab; checks that --folder (a share of the page's
// machine, for every member) says so; opens its Members editor, ticks
// --member, saves, and waits for the card to say it is for that member by
// name. Then shares --share-path as --share-name read-write for --member
// from the form (the read-write note must show) and waits for its card to
// name the member. Screenshots into --shots: members-before.png,
// members-editing.png, members-after.png, members-share.png. One JSON line
// out; exit 1 names the failing stage.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { firstLine, openBrowser, parseArgs } from './browser.mjs'

const flags = {
  '--url': 'url',
  '--folder': 'folder',
  '--member': 'member',
  '--share-name': 'shareName',
  '--share-path': 'sharePath',
  '--shots': 'shots',
}

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), { flags, required: ['--url', '--folder', '--member', '--share-name', '--share-path', '--shots'], defaults: { timeout: 30 } })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: firstLine(err) }))
    return 1
  }
  mkdirSync(opts.shots, { recursive: true })
  const ms = opts.timeout * 1000
  const result = { ok: false }
  let browser, page
  let stage = 'launch browser'
  const shot = (name) => page.screenshot({ path: join(opts.shots, name), fullPage: true })
  const card = (name) => page.locator('li').filter({ has: page.locator(`[data-testid="unshare"][data-name="${name}"]`) })
  const who = (name) => card(name).getByTestId('folder-members')
  const waitText = async (loc, want) => {
    const deadline = Date.now() + ms
    for (;;) {
      const text = ((await loc.textContent({ timeout: ms })) ?? '').trim()
      if (text === want) return text
      if (Date.now() > deadline) throw new Error(`"${text}", want "${want}"`)
      await page.waitForTimeout(100)
    }
  }
  try {
    browser = await openBrowser(opts, { name: 'folder-members' })
    page = browser.page
    stage = 'open page'
    await page.goto(opts.url, { waitUntil: 'domcontentloaded', timeout: ms })
    await page.getByTestId('tab-folders').click()
    stage = 'folder for every member'
    result.before = await waitText(who(opts.folder), 'for every member')
    await shot('members-before.png')
    stage = 'edit members'
    await card(opts.folder).getByTestId('edit-members').click()
    const form = card(opts.folder).getByTestId('members-form')
    await form.locator(`[data-testid="member-tick"][data-member="${opts.member}"]`).check({ timeout: ms })
    await shot('members-editing.png')
    await form.getByTestId('members-save').click()
    stage = 'folder for the member'
    result.after = await waitText(who(opts.folder), `for ${opts.member}`)
    if (await page.getByTestId('members-form').count()) throw new Error('the editor stayed open after saving')
    await shot('members-after.png')
    stage = 'share for the member'
    const share = page.getByTestId('share-form')
    await share.locator('input[name="share-name"]').fill(opts.shareName)
    await share.locator('input[name="share-path"]').fill(opts.sharePath)
    await share.getByTestId('share-members').fill(opts.member)
    await share.getByTestId('share-rw').check()
    result.rwNote = ((await share.getByTestId('share-rw-note').textContent({ timeout: ms })) ?? '').trim()
    await shot('members-share.png')
    await share.getByTestId('share-submit').click()
    const failed = page.getByTestId('folders-error')
    await card(opts.shareName).or(failed).first().waitFor({ timeout: ms })
    if (await failed.count()) throw new Error(`share: ${await failed.first().textContent()}`)
    result.shared = await waitText(who(opts.shareName), `for ${opts.member}`)
    await shot('members-shared.png')
    result.ok = true
    console.log(JSON.stringify(result))
    return 0
  } catch (err) {
    result.stage = stage
    result.error = firstLine(err)
    if (page) await shot('members-failed.png').catch(() => {})
    console.log(JSON.stringify(result))
    return 1
  } finally {
    await browser?.close()
  }
}

process.exit(await main())
