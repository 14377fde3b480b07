// The interface of the transport (http.ts); the rest of the UI sees only this.
import type { EventName, EventPayloads } from './events.ts'
import type { FoldersTransport } from './folders.ts'
import type { JobsTransport } from './jobs.ts'
import type { PoolTransport } from './pool.ts'
import type { GPU, History, JoinCode, Node, PoolStatus, Self } from './types.ts'

export type Unsubscribe = () => void

export interface SelfTestConfig {
  /** A job whose log the self-test follows ("" = none). */
  job: string
  /** Whether to wait for an active alert's count on the Alerts tab (the test fires one). */
  alert: boolean
}

export interface Transport extends JobsTransport, FoldersTransport, PoolTransport {
  /** Where the page runs: "wails" inside the desktop window, "http" in a browser. */
  readonly kind: 'wails' | 'http'
  self(): Promise<Self>
  nodes(): Promise<Node[]>
  gpus(): Promise<GPU[]>
  history(nodeID: string, seconds: number): Promise<History>
  pool(): Promise<PoolStatus>
  createPool(): Promise<JoinCode>
  joinPool(code: string, addr: string): Promise<PoolStatus>
  removeMember(id: string): Promise<void>
  /** The desktop window's self-test when it runs one, else null. */
  selfTest(): Promise<SelfTestConfig | null>
  /** Sends the self-test's report (JSON) to the window. */
  selfTestReport(report: string): Promise<void>
  /** Whether the page can start this machine's stopped daemon (the desktop
   * window over the agent it started; never a browser). */
  canStartDaemon(): Promise<boolean>
  /** Starts this machine's daemon again; resolves once it answers. */
  startDaemon(): Promise<void>
  /** Subscribes to one event; the returned function unsubscribes. */
  on<E extends EventName>(name: E, cb: (data: EventPayloads[E]) => void): Unsubscribe
  /** Reports whether the event stream is connected. */
  onConnection(cb: (up: boolean) => void): Unsubscribe
}
