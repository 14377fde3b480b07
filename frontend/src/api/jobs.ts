// Types of the jobs API, mirrored from app/jobs_api.go and node/jobs/types.go.
import type { GPU } from './types.ts'

export type JobState = 'queued' | 'starting' | 'running' | 'exited' | 'failed'

export interface Mount {
  folder: string
  target: string
  rw?: boolean
}

export interface Spec {
  name?: string
  image: string
  cmd?: string[]
  env?: string[]
  gpus?: number
  gpu_ids?: number[]
  min_gpu_mem_bytes?: number
  cpus?: number
  memory_bytes?: number
  shm_bytes?: number
  mounts?: Mount[]
  ports?: number[]
  restart?: string
  queue?: boolean
}

export interface Job {
  id: string
  name: string
  node: string
  node_name: string
  owner: string
  owner_name: string
  image: string
  spec: Spec
  state: JobState
  gpus: string[] | null
  gpu_indexes: number[] | null
  ports?: Record<string, number> | null
  created: string
  started?: string | null
  finished?: string | null
  exit_code?: number | null
  error?: string
  gpu_seconds: number
  stale: boolean
}

export interface LaunchRequest {
  node?: string
  spec: Spec
}

export interface Plan {
  node: string
  node_name: string
  free_gpus: GPU[] | null
  busy_gpus: GPU[] | null
  reason: string
  fits: boolean
  /** Image tags on that node. */
  images?: string[] | null
}

export interface Tunnel {
  job: string
  port: number
  url: string
}

export interface JobStats {
  cpu_percent: number
  mem_used_bytes: number
  mem_limit_bytes: number
  gpus: { uuid: string; index: number; util_percent: number; mem_used_bytes: number }[] | null
}

export interface Image {
  id: string
  tags: string[] | null
  size: number
  created: string
}

export interface LogChunk {
  job: string
  text: string
  eof?: boolean
}

/** Jobs operations, implemented by both transports. */
export interface JobsTransport {
  jobs(all: boolean): Promise<Job[]>
  /** One job by ID (or unique prefix, or name). */
  job(id: string): Promise<Job>
  plan(req: LaunchRequest): Promise<Plan>
  launch(req: LaunchRequest): Promise<Job>
  stopJob(id: string): Promise<Job>
  removeJob(id: string): Promise<void>
  jobStats(id: string): Promise<JobStats>
  /** Opens a tunnel to a container port; the window also opens the system browser on it. */
  openJob(id: string, port: number): Promise<Tunnel>
  tunnels(): Promise<Tunnel[]>
  images(node: string): Promise<Image[]>
  /** Streams a job's logs to onText until the returned function is called. */
  followLogs(id: string, tail: number, onText: (text: string, eof: boolean) => void): () => void
}
