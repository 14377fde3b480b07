// What the e2e scripts share: reading their arguments and the Chromium
// they drive (playwright-core, a throwaway profile, the flags that keep it
// quiet and offline). A new script imports these instead of writing them
// again:
//
//   import { parseArgs, openBrowser, firstLine } from './browser.mjs'
//   (and startDevServer, for a script that runs against e2e/devserver.mjs)
//   const opts = parseArgs(process.argv.slice(2), {
//     flags: { '--url': 'url', '--gpus': ['gpus', 'number'], '--offline': ['offline', 'bool'] },
//     required: ['--url'],
//   })
//   const browser = await openBrowser(opts, { name: 'mine' })
//   try { await browser.page.goto(opts.url) } finally { await browser.close() }
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'

/**
 * Reads argv by a table of flags: '--flag': 'key' (a string value) or
 * '--flag': ['key', kind] with kind 'string', 'number', 'list' (comma
 * separated, blanks dropped) or 'bool' (takes no value). --timeout (seconds,
 * default 30, must be > 0) and --chromium ($CHROMIUM, else /usr/bin/chromium)
 * are always known. required names flags that must be given; defaults seeds
 * the result. Throws on an unknown flag, a missing value or a missing
 * required flag, naming it.
 */
export function parseArgs(argv, { flags = {}, required = [], defaults = {} } = {}) {
  const table = { '--timeout': ['timeout', 'number'], '--chromium': 'chromium', ...flags }
  const spec = (flag) => {
    const f = table[flag]
    return typeof f === 'string' ? [f, 'string'] : f
  }
  const out = { timeout: 30, chromium: process.env.CHROMIUM || '/usr/bin/chromium', ...defaults }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (!table[a]) throw new Error(`unknown argument ${a}`)
    const [key, kind] = spec(a)
    if (kind === 'bool') {
      out[key] = true
      continue
    }
    if (i + 1 >= argv.length) throw new Error(`${a} needs a value`)
    const v = argv[++i]
    if (kind === 'number') out[key] = Number(v)
    else if (kind === 'list') out[key] = v.split(',').map((s) => s.trim()).filter(Boolean)
    else out[key] = v
  }
  for (const flag of required) {
    const v = out[spec(flag)[0]]
    if (v === undefined || v === '' || (Array.isArray(v) && v.length === 0)) throw new Error(`${flag} is required`)
  }
  if (!(out.timeout > 0)) throw new Error('--timeout wants seconds > 0')
  return out
}

/** The first line of an error's message (Playwright's carry a call log below). */
export const firstLine = (err) => String(err?.message ?? err).split('\n')[0]

/**
 * Starts headless Chromium (opts.chromium) on a new temporary profile and
 * returns its context, its first page, the page's console errors (console
 * errors and uncaught exceptions, as they come) and close(), which closes
 * the browser and removes the profile; close never throws. args are added
 * to the usual flags (no sandbox, GPU, QUIC, first-run or background
 * traffic).
 */
export async function openBrowser(opts, { name = 'e2e', viewport = { width: 1280, height: 800 }, args = [] } = {}) {
  const profile = mkdtempSync(join(tmpdir(), `labpool-${name}-`))
  let context
  const close = async () => {
    await context?.close().catch(() => {})
    rmSync(profile, { recursive: true, force: true })
  }
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: opts.chromium,
      headless: true,
      viewport,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync', ...args],
    })
  } catch (err) {
    await close()
    throw err
  }
  const page = context.pages()[0] ?? (await context.newPage())
  const consoleErrors = []
  page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()))
  page.on('pageerror', (e) => consoleErrors.push(String(e)))
  return { context, page, consoleErrors, close }
}

/**
 * Times a run's stages: stages.enter(name) ends the current stage and
 * starts the next; stages.current names it (for the failure report), ms
 * holds each ended stage's milliseconds (and whatever else the script
 * times), and done(result) adds ms and the run's total to result.
 */
export function stageClock(first = 'launch browser') {
  const t0 = Date.now()
  let start = t0
  const clock = {
    current: first,
    ms: {},
    enter(next) {
      clock.ms[clock.current] = Date.now() - start
      clock.current = next
      start = Date.now()
    },
    done(result) {
      result.stagesMs = clock.ms
      result.ms = Date.now() - t0
    },
  }
  return clock
}

/**
 * Ends a run: closes the browser, prints result as the one JSON line and
 * returns the exit status (0 when result.ok).
 */
export async function finish(result, browser) {
  await browser?.close()
  console.log(JSON.stringify(result))
  return result.ok ? 0 : 1
}

/** A free TCP port on 127.0.0.1. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.on('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

/**
 * Starts the dev server (e2e/devserver.mjs) with args on a free port and
 * resolves, once it listens, with its URL and stop(), which ends it.
 */
export async function startDevServer(args = [], timeoutMs = 30000) {
  const port = await freePort()
  const script = fileURLToPath(new URL('./devserver.mjs', import.meta.url))
  const child = spawn(process.execPath, [script, '--port', String(port), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the dev server did not start in ${timeoutMs} ms: ${out}`)), timeoutMs)
    const seen = (b) => {
      out += b
      const m = out.match(/dev fixture on (http:\/\/\S+)/)
      if (m) {
        clearTimeout(timer)
        resolve(m[1])
      }
    }
    child.stdout.on('data', seen)
    child.stderr.on('data', (b) => (out += b))
    child.on('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`the dev server exited (${code}): ${out}`))
    })
  })
  return { url, stop: () => child.kill() }
}
