// Types of the shared-folders API (app/folders.go, node/folders), generated
// into types.gen.ts; modes and states are narrowed to their values.
import type * as G from './types.gen.ts'
import type { Entry } from './types.gen.ts'

export type { Entry } from './types.gen.ts'

export interface Folder extends Omit<G.Folder, 'mode'> {
  mode: 'ro' | 'rw'
}

export interface Transfer extends Omit<G.Transfer, 'state'> {
  state: 'running' | 'done' | 'failed' | 'unknown'
}

/** Shared-folder operations, implemented by both transports. */
export interface FoldersTransport {
  folders(): Promise<Folder[]>
  /** Shares a directory (an absolute path) of this machine as name, with
   * members (names, short IDs or device IDs) only, or every member. */
  share(name: string, path: string, readWrite: boolean, members?: string[]): Promise<Folder>
  /** Sets who may use a folder of this machine; [] for every member. */
  setFolderMembers(name: string, members: string[]): Promise<Folder>
  /** Stops sharing a folder of this machine. */
  unshare(name: string): Promise<void>
  ls(node: string, folder: string, path: string): Promise<Entry[]>
  copy(src: string, dst: string): Promise<Transfer>
  transfers(): Promise<Transfer[]>
}
