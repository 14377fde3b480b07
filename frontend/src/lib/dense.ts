// The dashboard's dense view: a row per GPU (as nvitop shows them), so
// that a lab's 40 GPUs fit one screen, with the facts the cards show; and
// the window's memory of which view was chosen.
import type { GPU, Node } from '../api/types.ts'
import { isCluster } from './cluster.ts'
import { plural } from './format.ts'

/** One row of the dense view: a GPU, and its machine on the machine's first row. */
export interface DenseRow {
  node: Node
  gpu: GPU
  /** The machine's first row, which names it (rowSpan rows tall). */
  first: boolean
  rowSpan: number
}

/** The rows of the dense view: every GPU of the machines with GPUs (not
 * clusters, which keep their card), machine by machine, in the order given. */
export function denseRows(nodes: readonly Node[]): DenseRow[] {
  const out: DenseRow[] = []
  for (const n of nodes) {
    if (isCluster(n)) continue
    const gpus = [...(n.gpus ?? [])].sort((a, b) => a.index - b.index)
    gpus.forEach((g, i) => out.push({ node: n, gpu: g, first: i === 0, rowSpan: gpus.length }))
  }
  return out
}

/** A GPU in MIG mode (or switching to it): its memory is split into
 * instances, so a GPU that looks idle is not free for a whole-GPU job. */
export function migText(g: Pick<GPU, 'mig'>): string {
  const m = g.mig
  if (!m) return ''
  if (m.pending) return m.enabled ? 'MIG off pending' : 'MIG on pending'
  if (!m.enabled) return ''
  const n = (m.instances ?? []).length
  return n ? `MIG · ${plural(n, 'instance')}` : 'MIG'
}

export type DashboardView = 'cards' | 'dense'

const viewKey = 'labpool:dashboard-view'

/** The view the window last showed ("cards" when none was chosen). */
export function loadView(store: Pick<Storage, 'getItem'> | null): DashboardView {
  try {
    return store?.getItem(viewKey) === 'dense' ? 'dense' : 'cards'
  } catch {
    return 'cards' // storage refused (a private window)
  }
}

/** Remembers the view chosen. */
export function saveView(store: Pick<Storage, 'setItem'> | null, v: DashboardView): void {
  try {
    store?.setItem(viewKey, v)
  } catch {
    // storage refused: the choice lasts this page
  }
}
