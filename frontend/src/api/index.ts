// The one module of the UI that talks to the backend: HTTP + Server-Sent
// Events under /api/v1, in a browser (`labpool web`) and in the desktop
// window (served through Wails' AssetServer by app/window) alike.
import { httpTransport, type DesktopWindow } from './http.ts'
import type { Transport } from './transport.ts'

export { ApiError, toApiError } from './errors.ts'
export { EventAlerts, EventJobs, EventNodes, EventSample } from './events.ts'
export { request } from './http.ts'
export type * from './jobs.ts'
export type { PoolTransport } from './pool.ts'
export type { SelfTestConfig, Transport, Unsubscribe } from './transport.ts'
export type * from './types.ts'

/** The part of the Wails runtime (window.runtime, injected by Wails) the page uses. */
interface WailsRuntime {
  BrowserOpenURL(url: string): void
}

declare global {
  interface Window {
    runtime?: WailsRuntime
  }
}

/** The desktop window around the page, or undefined in a browser. */
function desktopWindow(): DesktopWindow | undefined {
  // wails://wails on Linux and macOS, http://wails.localhost on Windows.
  const loc = typeof window === 'undefined' ? undefined : window.location
  if (!loc || (loc.protocol !== 'wails:' && loc.hostname !== 'wails.localhost')) return undefined
  return { openURL: (url) => window.runtime?.BrowserOpenURL(url) }
}

/** Returns the transport: the same HTTP API everywhere, plus what the window adds. */
export async function connect(): Promise<Transport> {
  return httpTransport(desktopWindow())
}
