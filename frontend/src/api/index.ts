// The one module of the UI that talks to the backend: Wails bindings in the
// desktop window, HTTP + Server-Sent Events in a browser.
import { httpTransport } from './http.ts'
import type { Transport } from './transport.ts'
import { wailsBindings, wailsTransport } from './wails.ts'

export { ApiError, toApiError } from './errors.ts'
export { EventJobs, EventLogs, EventNodes, EventSample } from './events.ts'
export type * from './jobs.ts'
export type { PoolTransport } from './pool.ts'
export type { Transport, Unsubscribe } from './transport.ts'
export type * from './types.ts'

/**
 * Picks the transport. Inside the Wails window the bindings are injected
 * before the app's scripts run; a short wait covers a late injection when
 * the Wails runtime is present but its bindings are not (yet).
 */
export async function connect(): Promise<Transport> {
  let b = wailsBindings()
  const inWails = () => typeof window !== 'undefined' && ('runtime' in window || 'wails' in window)
  for (let i = 0; !b && inWails() && i < 20; i++) {
    await new Promise((r) => setTimeout(r, 100))
    b = wailsBindings()
  }
  return b ? wailsTransport(b) : httpTransport()
}
