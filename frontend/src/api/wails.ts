// Transport for the Wails window: Go bindings on window.go.window.Bindings
// (app/window; the e2e shims inject window.go.app.Bindings) and
// runtime events. Declared here by hand (mirroring app/api.go) rather than
// from generated wailsjs files.
import { toApiError } from './errors.ts'
import { EventLogs, type EventName, type EventPayloads } from './events.ts'
import type { Entry, Folder, Transfer } from './folders.ts'
import type { Image, Job, JobStats, LaunchRequest, LogChunk, Plan, Tunnel as JobTunnel } from './jobs.ts'
import type { Transport, Unsubscribe } from './transport.ts'
import type { GPU, History, Invite, JoinCode, NewInvite, Node, PoolStatus, Role, Self } from './types.ts'

export interface WailsBindings {
  Self(): Promise<Self>
  Nodes(): Promise<Node[] | null>
  GPUs(): Promise<GPU[] | null>
  History(nodeID: string, seconds: number): Promise<History>
  Pool(): Promise<PoolStatus>
  CreatePool(): Promise<JoinCode>
  JoinPool(code: string, addr: string): Promise<PoolStatus>
  RemoveMember(id: string): Promise<void>
  Invites(): Promise<Invite[] | null>
  CreateInvite(role: string, uses: number, expiresSeconds: number): Promise<NewInvite>
  RevokeInvite(id: string): Promise<void>
  SetRole(id: string, role: string): Promise<void>
  Jobs(all: boolean): Promise<Job[] | null>
  Job(id: string): Promise<Job>
  PlanLaunch(req: LaunchRequest): Promise<Plan>
  Launch(req: LaunchRequest): Promise<Job>
  StopJob(id: string): Promise<Job>
  RemoveJob(id: string): Promise<void>
  JobStats(id: string): Promise<JobStats>
  OpenJob(id: string, port: number): Promise<JobTunnel>
  Tunnels(): Promise<JobTunnel[] | null>
  Images(node: string): Promise<Image[] | null>
  FollowLogs(id: string, tail: number): Promise<void>
  StopLogs(id: string): Promise<void>
  Folders(): Promise<Folder[] | null>
  Share(name: string, path: string, readWrite: boolean): Promise<Folder>
  Unshare(name: string): Promise<void>
  Ls(node: string, folder: string, path: string): Promise<Entry[] | null>
  Copy(src: string, dst: string): Promise<Transfer>
  Transfers(): Promise<Transfer[] | null>
  SelfTestEnabled(): Promise<boolean>
  SelfTestReport(report: string): Promise<void>
}

export interface WailsRuntime {
  EventsOn(name: string, cb: (...data: unknown[]) => void): () => void
}

declare global {
  interface Window {
    go?: { window?: { Bindings?: WailsBindings }; app?: { Bindings?: WailsBindings } }
    runtime?: WailsRuntime
  }
}

/** Returns the bindings when running inside the Wails window. */
export function wailsBindings(): WailsBindings | undefined {
  return typeof window === 'undefined' ? undefined : (window.go?.window?.Bindings ?? window.go?.app?.Bindings)
}

async function call<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f()
  } catch (err) {
    throw toApiError(err)
  }
}

export function wailsTransport(b: WailsBindings): Transport {
  return {
    kind: 'wails',
    self: () => call(() => b.Self()),
    nodes: async () => (await call(() => b.Nodes())) ?? [],
    gpus: async () => (await call(() => b.GPUs())) ?? [],
    history: (id, seconds) => call(() => b.History(id, seconds)),
    pool: () => call(() => b.Pool()),
    createPool: () => call(() => b.CreatePool()),
    joinPool: (code, addr) => call(() => b.JoinPool(code, addr)),
    removeMember: (id) => call(() => b.RemoveMember(id)),
    invites: async () => (await call(() => b.Invites())) ?? [],
    createInvite: (req) => call(() => b.CreateInvite(req.role, req.uses, req.expires_seconds)),
    revokeInvite: (id) => call(() => b.RevokeInvite(id)),
    setRole: (id, role: Role) => call(() => b.SetRole(id, role)),
    jobs: async (all) => (await call(() => b.Jobs(all))) ?? [],
    job: (id) => call(() => b.Job(id)),
    plan: (req) => call(() => b.PlanLaunch(req)),
    launch: (req) => call(() => b.Launch(req)),
    stopJob: (id) => call(() => b.StopJob(id)),
    removeJob: (id) => call(() => b.RemoveJob(id)),
    jobStats: (id) => call(() => b.JobStats(id)),
    openJob: (id, port) => call(() => b.OpenJob(id, port)),
    tunnels: async () => (await call(() => b.Tunnels())) ?? [],
    images: async (node) => (await call(() => b.Images(node))) ?? [],
    followLogs(id, tail, onText) {
      const off = window.runtime?.EventsOn(EventLogs, (data: unknown) => {
        const c = data as LogChunk
        if (c?.job === id) onText(c.text ?? '', c.eof === true)
      })
      b.FollowLogs(id, tail).catch((err) => onText(`\n[${toApiError(err).message}]\n`, true))
      return () => {
        off?.()
        void b.StopLogs(id).catch(() => {})
      }
    },
    folders: async () => (await call(() => b.Folders())) ?? [],
    share: (name, path, readWrite) => call(() => b.Share(name, path, readWrite)),
    unshare: (name) => call(() => b.Unshare(name)),
    ls: async (node, folder, path) => (await call(() => b.Ls(node, folder, path))) ?? [],
    copy: (src, dst) => call(() => b.Copy(src, dst)),
    transfers: async () => (await call(() => b.Transfers())) ?? [],
    selfTestEnabled: async () => (await call(() => b.SelfTestEnabled())) === true,
    selfTestReport: (report) => call(() => b.SelfTestReport(report)),
    on<E extends EventName>(name: E, cb: (data: EventPayloads[E]) => void): Unsubscribe {
      const rt = window.runtime
      if (!rt) return () => {}
      const off = rt.EventsOn(name, (data: unknown) => cb(data as EventPayloads[E]))
      return typeof off === 'function' ? off : () => {}
    },
    onConnection(cb: (up: boolean) => void): Unsubscribe {
      cb(true)
      return () => {}
    },
  }
}
