// DEV CHECK: exercises the Wails code path of the UI in a plain Chromium.
// It injects a fake window.go.app.Bindings + window.runtime (backed by the
// page's own HTTP API, e.g. e2e/devserver.mjs or `labpool web`) before the
// app loads, enables the self-test, and prints the report the app sends to
// SelfTestReport. Exit 0 when the report shows at least one card.
//
//   node e2e/wails-shim.mjs --url http://127.0.0.1:8787/ [--screenshot FILE]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { shim } from './wails-fake.mjs'

const args = process.argv.slice(2)
const opt = (n) => (args.indexOf(n) >= 0 ? args[args.indexOf(n) + 1] : undefined)
const url = opt('--url')
const shot = opt('--screenshot')
if (!url) {
  console.log(JSON.stringify({ ok: false, error: '--url is required' }))
  process.exit(1)
}

const profile = mkdtempSync(join(tmpdir(), 'labpool-shim-'))
let code = 1
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1280, height: 800 },
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
})
try {
  const page = ctx.pages()[0] ?? (await ctx.newPage())
  await page.addInitScript(shim)
  await page.goto(url)
  await page.waitForFunction(() => window.__report, null, { timeout: 20000 })
  const report = JSON.parse(await page.evaluate(() => window.__report))
  const calls = await page.evaluate(() => [...new Set(window.__calls)])
  if (shot) await page.screenshot({ path: shot, fullPage: true })
  const ok = report.cards > 0 && report.cpuValues.length > 0 && calls.includes('Nodes')
  console.log(JSON.stringify({ ok, report, calls }))
  code = ok ? 0 : 1
} catch (err) {
  console.log(JSON.stringify({ ok: false, error: String(err?.message ?? err).split('\n')[0] }))
} finally {
  await ctx.close()
  rmSync(profile, { recursive: true, force: true })
}
process.exit(code)
