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

/** A change of a folder's members (app.FolderMembersRequest). */
export interface MembersChange {
  members?: string[]
  add?: string[]
  remove?: string[]
}

/** The change from the list before to the ticked one: a list edited by
 * adding and removing (so that a change made meanwhile elsewhere is kept),
 * a new list where the folder was for every member, every member where
 * none is ticked. */
export function membersChange(before: string[], ticked: string[]): MembersChange {
  if (ticked.length === 0) return { members: [] }
  if (before.length === 0) return { members: [...ticked] }
  return { add: ticked.filter((id) => !before.includes(id)), remove: before.filter((id) => !ticked.includes(id)) }
}

/** Shared-folder operations, implemented by both transports. */
export interface FoldersTransport {
  folders(): Promise<Folder[]>
  /** Shares a directory (an absolute path) of this machine as name, with
   * members (names, short IDs or device IDs) only, or every member. */
  share(name: string, path: string, readWrite: boolean, members?: string[]): Promise<Folder>
  /** Changes who may use the folder name on the machine node (its device
   * ID; '' for this machine), which checks that this device may (an owner,
   * an admin or the folder's sharer): members replaces the list, add and
   * remove edit it (names, short IDs or device IDs); none of them, or
   * members [], for every member. */
  setFolderMembers(node: string, name: string, change: MembersChange): Promise<Folder>
  /** Stops sharing a folder of this machine. */
  unshare(name: string): Promise<void>
  ls(node: string, folder: string, path: string): Promise<Entry[]>
  copy(src: string, dst: string): Promise<Transfer>
  transfers(): Promise<Transfer[]>
}
