// End-to-end check of the Members view and of roles in the UI, in a real
// Chromium (playwright-core), against `labpool web` or e2e/devserver.mjs:
//
//   node e2e/members.mjs --url http://127.0.0.1:PORT/ --as owner \
//        --member NAME [--remove NAME] [--shots DIR] [--timeout 30] \
//        [--chromium /usr/bin/chromium]
//   node e2e/members.mjs --url http://127.0.0.1:PORT/ --as viewer [--shots DIR]
//
// --as owner|admin: opens the Members view from the header, makes an invite
//   (role member, 2 uses, 1 h) and reads its code from the code dialog,
//   changes --member's role (member <-> viewer), revokes the new invite, and
//   removes --remove (default: --member) after the confirmation, and adds
//   a device to this machine's person (the code and the join command).
// --as member|viewer: checks that a viewer sees no Launch button (header,
//   cards, Jobs view) but the line saying why, and no Share or Copy, that a
//   member does see Launch, and that the Members view offers neither of them
//   Invite, Revoke, a role change or Remove.
// --expect-refusal TEXT with --refuse NAME: (owner/admin) tries to remove
//   NAME and expects the refusal shown in the view to contain TEXT.
//
// Selectors are roles and visible labels, so the script works against the
// real daemon as well as the fixture. Screenshots go to --shots (default: a
// new temp dir). Prints one JSON line; on failure ok is false with the stage
// and the reason, and the exit status is 1.
import { mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { finish, firstLine, openBrowser, parseArgs, stageClock } from './browser.mjs'

const flags = {
  '--url': 'url',
  '--as': 'as',
  '--member': 'member',
  '--remove': 'remove',
  '--refuse': 'refuse',
  '--expect-refusal': 'expectRefusal',
  '--shots': 'shots',
}

function readArgs(argv) {
  const out = parseArgs(argv, { flags, required: ['--url'] })
  if (!['owner', 'admin', 'member', 'viewer'].includes(out.as)) throw new Error('--as wants owner, admin, member or viewer')
  out.manager = out.as === 'owner' || out.as === 'admin'
  if (out.manager && !out.member) throw new Error('--member NAME is required with --as owner|admin')
  out.remove ??= out.member
  if (!!out.refuse !== !!out.expectRefusal) throw new Error('--refuse and --expect-refusal go together')
  return out
}

const oneLine = (s) => String(s ?? '').replace(/\s+/g, ' ').trim()

async function main() {
  let opts
  try {
    opts = readArgs(process.argv.slice(2))
  } catch (err) {
    console.log(JSON.stringify({ ok: false, stage: 'arguments', error: firstLine(err) }))
    console.error('usage: node e2e/members.mjs --url URL --as owner|admin|member|viewer [--member NAME] [--shots DIR]')
    return 1
  }
  const shots = opts.shots ?? mkdtempSync(join(tmpdir(), 'labpool-members-shots-'))
  mkdirSync(shots, { recursive: true })
  let consoleErrors = []
  const result = { ok: false, url: opts.url, as: opts.as, shots: [] }
  const ms = opts.timeout * 1000
  const stages = stageClock()
  const enter = stages.enter
  let browser, page
  const shot = async (name, fullPage = false) => {
    const path = join(shots, `${name}.png`)
    const t = Date.now()
    await page.screenshot({ path, fullPage })
    result.shots.push(path)
    stages.ms[`shot ${name}`] = Date.now() - t
  }
  try {
    browser = await openBrowser(opts, { name: 'members', viewport: { width: 1360, height: 900 } })
    ;({ page, consoleErrors } = browser)

    enter('open page')
    await page.goto(opts.url, { waitUntil: 'domcontentloaded', timeout: ms })
    const chip = page.getByTitle(/^Members of pool /)
    await chip.waitFor({ timeout: ms })
    await page.getByTestId('node-card').first().waitFor({ timeout: ms })
    const members = page.getByRole('dialog', { name: 'Members' })
    const openMembers = async () => {
      await chip.click()
      await members.waitFor({ timeout: ms })
    }
    const row = (name) => members.getByRole('listitem').filter({ has: page.getByText(name, { exact: true }) })
    const failed = members.getByRole('alert')
    // Waits for cond, failing at once with the view's error when one shows.
    const until = async (what, locator) => {
      await Promise.race([locator.waitFor({ timeout: ms }), failed.waitFor({ timeout: ms }).then(async () => {
        throw new Error(`${what}: the view says ${JSON.stringify(oneLine(await failed.innerText()))}`)
      })])
    }

    if (opts.manager) {
      enter('members view')
      await openMembers()
      await row(opts.member).waitFor({ timeout: ms })
      result.membersShown = await members.getByRole('listitem').count()
      await shot(`${opts.as}-members`)

      enter('invite')
      const form = members.getByRole('form', { name: 'New invite' })
      await form.getByLabel('Role').selectOption('member')
      await form.getByLabel('Uses').fill('2')
      await form.getByLabel('Expires in').selectOption({ label: '1 h' })
      await form.getByRole('button', { name: 'Invite' }).click()
      const codeDialog = page.getByRole('dialog', { name: 'Pool join code' })
      await until('the invite', codeDialog)
      result.inviteCode = (await codeDialog.getByRole('textbox').inputValue()).trim()
      if (!result.inviteCode) throw new Error('the code dialog shows no code')
      if (!(await codeDialog.getByRole('button', { name: /Copy/ }).isVisible())) throw new Error('the code dialog has no copy button')
      await shot(`${opts.as}-invite-code`)
      await codeDialog.getByRole('button', { name: 'Done' }).click()
      await members.waitFor({ timeout: ms })
      const newRow = members.getByRole('row').filter({ has: page.getByText('new', { exact: true }) })
      await newRow.waitFor({ timeout: ms })
      result.newInvite = oneLine(await newRow.innerText())
      if (!/2 of 2 left/.test(result.newInvite)) throw new Error(`the new invite reads ${JSON.stringify(result.newInvite)}, not "2 of 2 left"`)

      enter('change role')
      const target = row(opts.member)
      const select = target.getByLabel(`Role of ${opts.member}`)
      const from = await select.inputValue()
      const to = from === 'viewer' ? 'member' : 'viewer'
      await select.selectOption(to)
      await until(`${opts.member} ${from} -> ${to}`, target.getByTestId('role-badge').filter({ hasText: new RegExp(`^${to}$`, 'i') }))
      result.roleChange = `${opts.member}: ${from} -> ${to}`

      enter('revoke')
      await newRow.getByRole('button', { name: 'Revoke' }).click()
      await until('the revocation', newRow.filter({ hasText: 'revoked' }))
      if (await newRow.getByRole('button', { name: 'Revoke' }).count()) throw new Error('a revoked invite still offers Revoke')

      enter('remove')
      const gone = row(opts.remove)
      await gone.getByRole('button', { name: 'Remove' }).first().click()
      const confirm = members.getByRole('alertdialog', { name: `Remove ${opts.remove}` })
      await confirm.waitFor({ timeout: ms })
      result.confirm = oneLine(await confirm.innerText())
      if (!result.confirm.includes('Its jobs are stopped and it is disconnected at once.')) throw new Error(`the confirmation reads ${JSON.stringify(result.confirm)}`)
      await shot(`${opts.as}-confirm-remove`)
      await confirm.getByRole('button', { name: 'Remove' }).click()
      await until(`the removal of ${opts.remove}`, gone.filter({ hasText: 'removed' }))
      if (await gone.getByRole('button', { name: 'Remove', disabled: false }).count()) throw new Error('a removed member still offers Remove')
      await shot(`${opts.as}-after`)

      enter('add a device')
      // The people view: this machine's person ("you") adds a device of theirs.
      const mine = members.getByTestId('person').filter({ has: page.getByText('you', { exact: true }) })
      await mine.getByRole('button', { name: 'Add a device' }).click()
      const devCode = mine.getByTestId('device-code')
      await until('the device code', devCode)
      result.joinCommand = oneLine(await devCode.locator('code').innerText())
      if (!/^labpool pool join \S+ \S+:\d+$/.test(result.joinCommand)) throw new Error(`the device code reads ${JSON.stringify(result.joinCommand)}, not "labpool pool join CODE HOST:PORT"`)
      await shot(`${opts.as}-add-device`)
      await devCode.getByRole('button', { name: 'Done' }).click()

      if (opts.refuse) {
        enter('refusal')
        const r = row(opts.refuse)
        await r.getByRole('button', { name: 'Remove' }).first().click()
        await members.getByRole('alertdialog').getByRole('button', { name: 'Remove' }).click()
        await failed.waitFor({ timeout: ms })
        result.refusal = oneLine(await failed.innerText())
        if (!result.refusal.includes(opts.expectRefusal)) throw new Error(`the refusal reads ${JSON.stringify(result.refusal)}, not ${JSON.stringify(opts.expectRefusal)}`)
        await shot(`${opts.as}-refusal`)
      }
    } else {
      enter('no launch')
      // Give the pool status time to arrive before judging what is hidden.
      await page.getByTestId('role-badge').first().waitFor({ timeout: ms })
      const launches = page.getByRole('button', { name: /launch/i })
      if (opts.as === 'viewer') {
        const why = page.getByRole('note')
        await why.waitFor({ timeout: ms })
        result.why = oneLine(await why.innerText())
        if (!result.why) throw new Error('the line saying why is empty')
        if (await launches.count()) throw new Error(`a viewer sees ${await launches.count()} Launch button(s) on the dashboard`)
      }
      if (opts.as === 'member' && !(await launches.count())) throw new Error('a member sees no Launch button')
      await shot(`${opts.as}-dashboard`)
      await page.getByRole('button', { name: /^Jobs/ }).click()
      await page.getByRole('heading').or(page.getByRole('table')).first().waitFor({ timeout: ms })
      if (opts.as === 'viewer' && (await launches.count())) throw new Error('a viewer sees a Launch button in the Jobs view')
      await shot(`${opts.as}-jobs`)
      if (opts.as === 'viewer') {
        await page.getByRole('button', { name: 'Folders', exact: true }).click()
        await page.getByRole('heading', { name: 'Shared folders' }).waitFor({ timeout: ms })
        const acts = page.getByRole('button', { name: /^(Share|Copy)/ })
        if (await acts.count()) throw new Error(`a viewer sees ${await acts.count()} Share/Copy button(s) in the Folders view`)
      }

      enter('members view')
      await openMembers()
      await members.getByRole('listitem').first().waitFor({ timeout: ms })
      result.membersShown = await members.getByRole('listitem').count()
      const offered = {
        invite: await page.getByRole('button', { name: 'Invite' }).count(),
        revoke: await members.getByRole('button', { name: 'Revoke' }).count(),
        remove: await members.getByRole('button', { name: 'Remove' }).count(),
        roleSelects: await members.getByRole('combobox').count(),
      }
      const shown = Object.entries(offered).filter(([, n]) => n > 0)
      if (shown.length) throw new Error(`a ${opts.as} is offered ${shown.map(([k, n]) => `${n} ${k}`).join(', ')}`)
      await shot(`${opts.as}-members`)
    }
    enter('done')
    result.ok = true
  } catch (err) {
    result.stage = stages.current
    result.error = firstLine(err)
    if (page) await shot('failure', true).catch(() => {})
  }
  stages.done(result)
  result.consoleErrors = consoleErrors
  return finish(result, browser)
}

process.exitCode = await main()
