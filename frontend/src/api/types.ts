// Types mirroring app/api.go (the backend contract). Times are RFC 3339
// strings; Go nil slices arrive as null, hence the `| null` on slices.

export interface Self {
  id: string
  short_id: string
  name: string
  version: string
  api_version: number
  data_dir: string
  listen: string
}

export interface NodeInfo {
  hostname: string
  os: string
  kernel: string
  cpu_model: string
  cores: number
  mem_total_bytes: number
  version: string
  started_at: string
}

export interface Disk {
  mount: string
  used_bytes: number
  total_bytes: number
}

export interface HostStats {
  cpu_percent: number
  load1: number
  mem_used_bytes: number
  mem_total_bytes: number
  disks: Disk[] | null
  net_rx_bps: number
  net_tx_bps: number
}

export interface GPU {
  node: string
  node_name: string
  index: number
  uuid: string
  name: string
  util_percent: number
  mem_util_percent: number
  mem_used_bytes: number
  mem_total_bytes: number
  temp_c: number
  power_w: number
  power_limit_w: number
  sm_clock_mhz: number
  mem_clock_mhz: number
  fan_percent: number // -1 when the GPU has no fan
  processes: number
}

export interface Node {
  id: string
  short_id: string
  name: string
  self: boolean
  online: boolean
  stale: boolean
  addresses: string[] | null
  last_seen: string
  info: NodeInfo
  host?: HostStats | null
  gpus: GPU[] | null
  gpu_error?: string
  containers?: boolean
  containers_error?: string
}

export interface Sample {
  node: string
  time: string
  cpu_percent: number
  mem_percent: number
  gpu_util: number[] | null
  gpu_mem_pct: number[] | null
}

export interface History {
  node: string
  samples: Sample[] | null
}

/** A role in the pool, from the most to the least trusted. */
export type Role = 'owner' | 'admin' | 'member' | 'viewer'

/** What this machine may do in the pool, as the daemon decides it. */
export interface Can {
  /** Launch jobs (member and above). */
  launch: boolean
  /** Invites, roles and removal of members and viewers (admin and above). */
  manage_members: boolean
  /** Making and removing admins and owners (owners). */
  manage_admins: boolean
  /** Why an action is not allowed, e.g. why a viewer cannot launch. */
  why?: string
}

export interface Member {
  id: string
  name: string
  role?: Role | ''
  added_at: string
  added_by?: string
  removed: boolean
  online?: boolean
  /** This machine. */
  self?: boolean
  /** The device that created the pool: nobody demotes or removes it. */
  creator?: boolean
}

export interface Invite {
  id: string
  role: Role
  /** How many joins the code allows, 0 = unlimited. */
  uses: number
  used: number
  /** -1 = unlimited. */
  uses_left: number
  expires: string
  created_by: string
  created_at: string
  state: 'active' | 'expired' | 'used up' | 'revoked'
}

export interface InviteRequest {
  role: Role
  /** 0 = unlimited within the expiry. */
  uses: number
  expires_seconds: number
}

export interface NewInvite {
  invite: Invite
  code: string
}

export interface PoolStatus {
  pool_id: string
  members: Member[] | null
  /** Empty for members and viewers. */
  invites?: Invite[] | null
  self_id?: string
  /** "" when not in a pool. */
  self_role?: Role | ''
  can?: Can
}

export interface JoinCode {
  pool_id: string
  code: string
}

export interface JoinRequest {
  code: string
  addr?: string
}

/** The JSON body of every failed local API call. */
export interface ErrorBody {
  code: string
  message: string
}
