// Types of the shared-folders API, mirrored from app/folders.go and
// node/folders.
export interface Folder {
  node: string
  node_name: string
  name: string
  mode: 'ro' | 'rw'
  size_bytes: number
  files: number
  stale: boolean
}

export interface Entry {
  name: string
  size: number
  mode: number
  mtime: string
  dir: boolean
  link?: boolean
}

export interface Transfer {
  id: string
  node: string
  src: string
  dst: string
  state: 'running' | 'done' | 'failed' | 'unknown'
  error?: string
  progress: { files: number; files_done: number; bytes: number; done: number; sent: number }
  started: string
  finished?: string | null
}

/** Shared-folder operations, implemented by both transports. */
export interface FoldersTransport {
  folders(): Promise<Folder[]>
  /** Shares a directory (an absolute path) of this machine as name. */
  share(name: string, path: string, readWrite: boolean): Promise<Folder>
  /** Stops sharing a folder of this machine. */
  unshare(name: string): Promise<void>
  ls(node: string, folder: string, path: string): Promise<Entry[]>
  copy(src: string, dst: string): Promise<Transfer>
  transfers(): Promise<Transfer[]>
}
