// The Wails window self-test: when the Go side enables it, wait for the
// dashboard to render a node card with its meters, then report what the
// DOM shows, read back from the page itself.
import type { Transport } from './api/index.ts'

export interface SelfTestSummary {
  cards: number
  names: string[]
  gpuMeters: number
  cpuValues: number[]
  title: string
  text: string
}

/** Reads the summary from the rendered page. */
export function summarize(doc: Document): SelfTestSummary {
  const cards = [...doc.querySelectorAll<HTMLElement>('[data-testid="node-card"]')]
  const cpuValues = [...doc.querySelectorAll<HTMLElement>('[data-testid="node-card"] [data-testid="cpu-meter"]')]
    .map((el) => el.dataset.value ?? '')
    .filter((v) => v !== '')
    .map(Number)
  return {
    cards: cards.length,
    names: cards.map((c) => c.dataset.nodeName ?? ''),
    gpuMeters: doc.querySelectorAll('[data-testid="gpu-meter"]').length,
    cpuValues,
    title: doc.title,
    text: (doc.body?.innerText ?? '').slice(0, 500),
  }
}

function rendered(doc: Document): boolean {
  for (const m of doc.querySelectorAll<HTMLElement>('[data-testid="node-card"] [data-testid="cpu-meter"]')) {
    if (m.dataset.value) return true
  }
  return false
}

/** Runs the self-test if the backend asks for it; never throws. */
export async function runSelfTest(api: Transport, timeoutMs = 15000): Promise<void> {
  let enabled = false
  try {
    enabled = await api.selfTestEnabled()
  } catch {
    return
  }
  if (!enabled) return
  const deadline = Date.now() + timeoutMs
  while (!rendered(document) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200))
  }
  // A few more live samples, so the sparklines in the screenshot have a line.
  await new Promise((r) => setTimeout(r, 4000))
  await new Promise((r) => requestAnimationFrame(() => r(null)))
  try {
    await api.selfTestReport(JSON.stringify(summarize(document)))
  } catch (err) {
    console.error('self-test report failed', err)
  }
}
