// End-to-end check of `labpool web`'s door in a real Chromium (playwright-core):
//
//   node e2e/trustweb.mjs --url http://127.0.0.1:PORT/?token=SECRET \
//        [--evil-port 8099] [--create] [--screenshot FILE] [--timeout 30] \
//        [--chromium /usr/bin/chromium]
//
// Opens the printed URL and checks that the UI loads, that the address bar
// lost the token and that the cookie carrying it is HttpOnly and
// SameSite=Strict. Then, from pages of other origins, it attacks the API the
// way any web page the user visits could:
//   - cross-site: http://evil.example:EVIL (a name the browser resolves to
//     127.0.0.1) and http://localhost:EVIL;
//   - same-site: http://127.0.0.1:EVIL (another port of the same host: the
//     browser sends SameSite=Strict cookies there);
//   - DNS rebinding: a page of http://rebind.example:PORT (the attacker's
//     name, at 127.0.0.2) calling the API same-origin once the name leads to
//     labpool: the attacker's server there serves its page, then forwards
//     every other connection to 127.0.0.1:PORT, which is what the browser
//     does after the name is rebound.
// Each tries POST /api/v1/pool/create and POST /api/v1/folders (sharing /)
// with no-cors text/plain fetches, a CORS JSON fetch, a CORS read and a form
// post. It reports every outcome, and the pool as the page itself reads it
// afterwards; the caller checks through the CLI that nothing changed.
// With --create it instead clicks "Create pool" in the UI (the page's own
// mutating call must pass). One JSON line out; exit 1 with the failing stage.
import { createServer } from 'node:http'
import { connect, createServer as createTCPServer } from 'node:net'
import { firstLine, openBrowser, parseArgs } from './browser.mjs'

const flags = {
  '--url': 'url',
  '--evil-port': ['evilPort', 'number'],
  '--create': ['create', 'bool'],
  '--screenshot': 'screenshot',
}

// The attacker's server: a blank page on every path.
function evilServer(port) {
  const srv = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' })
    res.end('<!doctype html><title>not labpool</title><p>nothing to see</p>')
  })
  return new Promise((resolve, reject) => {
    srv.once('error', reject)
    srv.listen(port, '127.0.0.1', () => resolve(srv))
  })
}

// The DNS rebinding attacker at 127.0.0.2:port: its page at /rebound.html,
// every other connection forwarded to labpool at 127.0.0.1:port.
function rebindServer(port) {
  const page = '<!doctype html><title>rebound</title><p>rebound</p>'
  const srv = createTCPServer((sock) => {
    sock.once('data', (first) => {
      if (first.toString('latin1').startsWith('GET /rebound.html ')) {
        sock.end(`HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: ${page.length}\r\nConnection: close\r\n\r\n${page}`)
        return
      }
      const up = connect(Number(port), '127.0.0.1', () => {
        up.write(first)
        sock.pipe(up).pipe(sock)
      })
      up.on('error', () => sock.destroy())
      sock.on('error', () => up.destroy())
    })
  })
  return new Promise((resolve, reject) => {
    srv.once('error', reject)
    srv.listen(Number(port), '127.0.0.2', () => resolve(srv))
  })
}

// Runs in an attacker's page: every call a page can make without asking the
// target. Returns what the page could observe of each.
async function attack(target) {
  const out = {}
  const tryFetch = async (name, url, init) => {
    try {
      const r = await fetch(url, { ...init, signal: AbortSignal.timeout(10000) })
      out[name] = r.type === 'opaque' ? 'opaque' : r.status
    } catch (err) {
      out[name] = 'failed: ' + String(err.message ?? err)
    }
  }
  const create = target + '/api/v1/pool/create'
  const share = target + '/api/v1/folders'
  const root = JSON.stringify({ name: 'root', path: '/', rw: true })
  await tryFetch('no-cors create', create, { method: 'POST', body: '{}', mode: 'no-cors', credentials: 'include' })
  await tryFetch('no-cors create text/plain', create, { method: 'POST', body: '{}', mode: 'no-cors', credentials: 'include', headers: { 'Content-Type': 'text/plain' } })
  await tryFetch('no-cors share /', share, { method: 'POST', body: root, mode: 'no-cors', credentials: 'include' })
  await tryFetch('cors json create', create, { method: 'POST', body: '{}', credentials: 'include', headers: { 'Content-Type': 'application/json' } })
  await tryFetch('cors json share /', share, { method: 'POST', body: root, credentials: 'include', headers: { 'Content-Type': 'application/json' } })
  await tryFetch('cors read pool', target + '/api/v1/pool', { credentials: 'include' })
  await tryFetch('cors read policy', target + '/api/v1/policy', { credentials: 'include' })
  return out
}

// Posts a text/plain form (a navigation, which no CORS rule stops) to url
// from page and returns the status the target answered.
async function formPost(page, url, ms) {
  const resp = page.waitForResponse((r) => r.url() === url, { timeout: ms })
  await page.evaluate((u) => {
    const f = document.createElement('form')
    f.method = 'POST'
    f.action = u
    f.enctype = 'text/plain'
    const i = document.createElement('input')
    i.name = '{"x":"'
    i.value = '"}'
    f.append(i)
    document.body.append(f)
    f.submit()
  }, url)
  const status = (await resp).status()
  await page.waitForURL(url, { timeout: ms }) // the navigation is over before the next one
  return status
}

// A response the attacker's page could read as a success.
const succeeded = (v) => typeof v === 'number' && v >= 200 && v < 300

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), { flags, required: ['--url'], defaults: { evilPort: 8099 } })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: firstLine(err) }))
    return 1
  }
  const printed = new URL(opts.url)
  const token = printed.searchParams.get('token') ?? ''
  const port = printed.port
  const target = `http://127.0.0.1:${port}`
  const result = { ok: false, port }
  let consoleErrors = []
  const ms = opts.timeout * 1000
  let browser, context, page, evil, rebind
  let stage = 'evil server'
  // A step that hangs (a tab that never opens) still ends with a report.
  setTimeout(() => {
    console.log(JSON.stringify({ ...result, stage, error: `stuck for ${opts.timeout * 6}s` }).replaceAll(token || '\0', '<token>'))
    process.exit(1)
  }, opts.timeout * 6000).unref()
  try {
    evil = await evilServer(opts.evilPort)
    rebind = await rebindServer(port)

    stage = 'launch browser'
    browser = await openBrowser(opts, {
      name: 'trustweb',
      args: ['--no-proxy-server', '--host-resolver-rules=MAP evil.example 127.0.0.1, MAP rebind.example 127.0.0.2'],
    })
    context = browser.context
    page = browser.page
    consoleErrors = browser.consoleErrors

    stage = 'open the printed URL'
    await page.goto(opts.url, { waitUntil: 'domcontentloaded', timeout: ms })
    result.addressBar = page.url()
    if (page.url().includes('token')) throw new Error(`the address bar still shows the token: ${page.url()}`)
    await page.getByTestId('self').waitFor({ timeout: ms })
    const cookies = await context.cookies(target)
    const c = cookies.find((x) => x.value === token)
    if (!c) throw new Error(`no cookie carries the token (cookies: ${cookies.map((x) => x.name).join(', ')})`)
    if (!c.httpOnly || c.sameSite !== 'Strict' || c.path !== '/') throw new Error(`cookie ${c.name}: httpOnly=${c.httpOnly} sameSite=${c.sameSite} path=${c.path}`)
    if ((await page.evaluate(() => document.cookie)).includes(token)) throw new Error('the page script can read the token')
    result.selfStatus = await page.evaluate(() => fetch('/api/v1/self').then((r) => r.status))
    if (result.selfStatus !== 200) throw new Error(`the page's own API call answered ${result.selfStatus}`)

    if (opts.create) {
      stage = 'create a pool from the UI'
      await page.getByTestId('create-pool').click()
      await page.getByTestId('pool-id').waitFor({ timeout: ms })
      result.poolID = (await page.getByTestId('pool-id').textContent())?.trim()
      result.ok = true
      return finish()
    }
    await page.getByTestId('no-pool').waitFor({ timeout: ms })

    // One tab for every attacker page, beside the UI's tab (which holds
    // the cookie in the same browser).
    result.attacks = {}
    stage = 'open a tab for the attacker'
    const p = await context.newPage()
    for (const origin of [`http://evil.example:${opts.evilPort}`, `http://localhost:${opts.evilPort}`, `http://127.0.0.1:${opts.evilPort}`]) {
      stage = `attack from ${origin}`
      await p.goto(origin + '/', { waitUntil: 'domcontentloaded', timeout: ms })
      const got = await p.evaluate(attack, target)
      got['form post create'] = await formPost(p, target + '/api/v1/pool/create', ms)
      result.attacks[origin] = got
    }

    stage = 'DNS rebinding'
    const rebound = `http://rebind.example:${port}`
    await p.goto(rebound + '/rebound.html', { waitUntil: 'domcontentloaded', timeout: ms })
    result.attacks[rebound] = await p.evaluate(async () => {
      const st = (u, init) => fetch(u, { ...init, signal: AbortSignal.timeout(10000) }).then((r) => r.status, (e) => 'failed: ' + e.message)
      return {
        'read pool': await st('/api/v1/pool'),
        'read ui': await st('/'),
        'create text/plain': await st('/api/v1/pool/create', { method: 'POST', body: '{}' }),
        'create json': await st('/api/v1/pool/create', { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json' } }),
      }
    })

    stage = 'judge'
    const leaks = []
    for (const [origin, got] of Object.entries(result.attacks)) {
      for (const [name, v] of Object.entries(got)) if (succeeded(v)) leaks.push(`${origin} ${name}: ${v}`)
    }
    const poolAfter = await page.evaluate(() => fetch('/api/v1/pool').then((r) => r.json()))
    result.poolAfter = poolAfter.pool_id ?? null
    if (poolAfter.pool_id) leaks.push(`a pool exists after the attacks: ${poolAfter.pool_id}`)
    if (leaks.length) throw new Error('attacks got through: ' + leaks.join('; '))

    stage = 'the cookie is the key'
    await context.clearCookies()
    result.withoutCookie = await page.evaluate(() => fetch('/api/v1/self').then((r) => r.status))
    if (result.withoutCookie !== 401) throw new Error(`without the cookie the API answered ${result.withoutCookie}, not 401`)
    result.ok = true
  } catch (err) {
    result.stage = stage
    result.error = firstLine(err)
  }
  return finish()

  async function finish() {
    if (page && opts.screenshot) await page.screenshot({ path: opts.screenshot, fullPage: true }).catch(() => {})
    result.consoleErrors = consoleErrors.slice(0, 10)
    await browser?.close()
    evil?.close()
    rebind?.close()
    const line = JSON.stringify(result)
    console.log(token ? line.replaceAll(token, '<token>') : line)
    return result.ok ? 0 : 1
  }
}

process.exitCode = await main()
