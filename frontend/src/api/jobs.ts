// Types of the jobs API (app/jobs_api.go, node/jobs/types.go), generated
// into types.gen.ts; a job's state is narrowed to its values.
import type * as G from './types.gen.ts'
import type { Loose } from './types.ts'
import type { Image, JobStats, LaunchRequest, Plan, Tunnel } from './types.gen.ts'

export type { Image, JobStats, LaunchRequest, Mount, Plan, Spec, Tunnel } from './types.gen.ts'

export type JobState = 'queued' | 'starting' | 'running' | 'exited' | 'failed' | 'moved'

export interface Job extends Omit<Loose<G.Job, 'spec_hash'>, 'state'> {
  state: JobState
}

/** Jobs operations, implemented by both transports. */
export interface JobsTransport {
  jobs(all: boolean): Promise<Job[]>
  /** One job by ID (or unique prefix, or name). */
  job(id: string): Promise<Job>
  plan(req: LaunchRequest): Promise<Plan>
  launch(req: LaunchRequest): Promise<Job>
  stopJob(id: string): Promise<Job>
  /** Removes a job's container; a running job only with force (it is stopped and its work lost). */
  removeJob(id: string, force?: boolean): Promise<void>
  jobStats(id: string): Promise<JobStats>
  /** Opens a tunnel to a container port; the window also opens the system browser on it. */
  openJob(id: string, port: number): Promise<Tunnel>
  tunnels(): Promise<Tunnel[]>
  images(node: string): Promise<Image[]>
  /** Streams a job's logs to onText until the returned function is called. */
  followLogs(id: string, tail: number, onText: (text: string, eof: boolean) => void): () => void
}
