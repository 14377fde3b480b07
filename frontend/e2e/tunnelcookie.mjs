// A page behind a tunnel (`labpool open JOB PORT`) must never receive the
// secret of `labpool web`, in a real Chromium (playwright-core):
//
//   node e2e/tunnelcookie.mjs --url http://127.0.0.1:PORT/?token=SECRET \
//        --tunnel http://HOST:TPORT/ [--screenshot FILE] [--timeout 30]
//
// Opens the printed URL, and the same with localhost, so that the browser
// holds the UI's cookie for both of the UI's hosts (checked). Then opens the
// tunnel's page and reads, as the container's own page would, document.cookie
// and the Cookie header its server received (the job's CGI at
// /cgi-bin/cookie echoes HTTP_COOKIE), by navigation and by a credentialed
// fetch. One JSON line out: what each saw, and leaked (whether the secret
// appeared anywhere); exit 1 with the failing stage.
import { firstLine, openBrowser, parseArgs } from './browser.mjs'

const flags = { '--url': 'url', '--tunnel': 'tunnel', '--screenshot': 'screenshot' }

async function main() {
  let opts
  try {
    opts = parseArgs(process.argv.slice(2), { flags, required: ['--url', '--tunnel'] })
  } catch (err) {
    console.log(JSON.stringify({ ok: false, error: firstLine(err) }))
    return 1
  }
  const printed = new URL(opts.url)
  const token = printed.searchParams.get('token') ?? ''
  const ms = opts.timeout * 1000
  const tunnel = new URL(opts.tunnel)
  const result = { ok: false, tunnel: tunnel.host }
  let browser
  let stage = 'browser'
  try {
    browser = await openBrowser(opts, { name: 'tunnelcookie' })
    const { context, page } = browser
    page.setDefaultTimeout(ms)
    stage = 'the UI with its token'
    for (const host of ['127.0.0.1', 'localhost']) {
      const u = new URL(opts.url)
      u.hostname = host
      await page.goto(u.href)
      await page.waitForURL((v) => !v.searchParams.has('token'))
    }
    const cookies = await context.cookies()
    result.uiCookies = cookies.filter((c) => c.value === token).map((c) => `${c.name}@${c.domain}`)
    if (result.uiCookies.length < 2) throw new Error(`the UI's cookie is not held for both hosts: ${JSON.stringify(cookies.map((c) => c.domain))}`)

    stage = 'the page behind the tunnel'
    await page.goto(new URL('/index.html', tunnel).href)
    result.documentCookie = await page.evaluate(() => document.cookie)
    result.fetchedHeader = await page.evaluate(async (u) => {
      const r = await fetch(u, { credentials: 'include', cache: 'no-store' })
      return (await r.text()).trim()
    }, new URL('/cgi-bin/cookie', tunnel).href)
    const resp = await page.goto(new URL('/cgi-bin/cookie', tunnel).href)
    result.navigatedHeader = (await resp.text()).trim()
    if (!result.navigatedHeader.startsWith('cookie=[')) throw new Error(`the tunnel's CGI answered ${JSON.stringify(result.navigatedHeader)}`)
    const seen = [result.documentCookie, result.fetchedHeader, result.navigatedHeader].join('\n')
    result.leaked = token !== '' && seen.includes(token)
    if (opts.screenshot) await page.screenshot({ path: opts.screenshot })
    result.ok = true
  } catch (err) {
    result.error = `${stage}: ${firstLine(err)}`
  } finally {
    await browser?.close()
  }
  console.log(JSON.stringify(result))
  return result.ok ? 0 : 1
}

process.exitCode = await main()
