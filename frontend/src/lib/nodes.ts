// Pure helpers over the pool view: normalizing what Go sends, ordering the
// cards and deciding when the page shows last known state.
import type { Node, NodeInfo } from '../api/types.ts'

/** Replaces the nulls Go sends for empty slices with empty arrays. */
export function normalizeNode(n: Node): Node {
  const host = n.host ? { ...n.host, disks: n.host.disks ?? [] } : null
  return { ...n, addresses: n.addresses ?? [], gpus: n.gpus ?? [], host }
}

/** Whether a node has (or last had) GPUs: a GPU machine, or a Slurm cluster with GPUs. */
export const hasGPUs = (n: Pick<Node, 'gpus' | 'cluster'>) => (n.gpus ?? []).length > 0 || (n.cluster?.gpus ?? []).some((g) => g.total > 0)

/**
 * Orders nodes: GPU machines first (what a pool is for), then this machine,
 * then by name, then by ID.
 */
export function sortNodes(nodes: readonly Node[]): Node[] {
  return [...nodes].sort((a, b) => {
    if (hasGPUs(a) !== hasGPUs(b)) return hasGPUs(a) ? -1 : 1
    if (a.self !== b.self) return a.self ? -1 : 1
    const byName = a.name.localeCompare(b.name, undefined, { sensitivity: 'base', numeric: true })
    return byName !== 0 ? byName : a.id.localeCompare(b.id)
  })
}

/** True when there are peers and none of them is online. */
export function allPeersOffline(nodes: readonly Node[]): boolean {
  const peers = nodes.filter((n) => !n.self)
  return peers.length > 0 && peers.every((n) => !n.online)
}

/** A short device ID for display when the backend sent none. */
export function shortID(n: Pick<Node, 'id' | 'short_id'>): string {
  if (n.short_id) return n.short_id
  return n.id.length > 9 ? n.id.slice(0, 9) : n.id
}

/** The machine's OS and architecture as `labpool nodes` shows them
 * ("macOS/arm64"); '' where its agent does not say. */
export function osArch(info: Pick<NodeInfo, 'goos' | 'arch'>): string {
  if (!info.goos) return ''
  const name = ({ darwin: 'macOS', windows: 'Windows' } as Record<string, string>)[info.goos] ?? info.goos
  return info.arch ? `${name}/${info.arch}` : name
}

/** The header's count of machines. While the daemon is unreachable the
 * cards are last known, so no machine is counted online: the count says
 * how many machines were last known instead of "5/5 online". */
export function poolSummary(
  nodes: readonly Node[],
  daemonStale: boolean,
  gpus: number,
): { online: number; total: number; gpus: number; lastKnown: boolean } {
  return {
    online: daemonStale ? 0 : nodes.filter((n) => n.online).length,
    total: nodes.length,
    gpus,
    lastKnown: daemonStale,
  }
}

/** What the page says while this machine's daemon is stopped (the proxy's
 * words, web.DaemonStopped). */
export const daemonStoppedMessage = 'The labpool daemon on this machine is not running.'

/** Whether a node list is the replica's last known pool, which the window
 * and `labpool web` serve while the daemon is stopped (web.LastKnown): this
 * machine itself is offline there, which a running daemon never says. */
export function fromStoppedDaemon(nodes: readonly Node[]): boolean {
  return nodes.some((n) => n.self && !n.online)
}
