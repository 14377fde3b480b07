// A machine's GPU topology and MIG, as the machine view shows them: read
// defensively (an older daemon, or a GPU NVML told nothing about, sends no
// links and no MIG).

/** How one GPU reaches another: "NV18" (NVLink links), "PIX".."SYS" (PCIe), "X" (itself) or "–". */
export interface Cell {
  text: string
  nvlink: boolean
  title: string
}

export interface Matrix {
  /** GPU indexes, in order: the rows and the columns. */
  gpus: number[]
  rows: Cell[][]
}

/** One MIG instance of a GPU, to grant by UUID. */
export interface MigRow {
  gpu: number
  uuid: string
  name: string
  memBytes: number
  gi: number
  ci: number
}

/** A GPU's MIG mode: "on", "off", "off (on after a reset)"…, "" without MIG. */
export interface MigMode {
  gpu: number
  mode: string
}

type Loose = Record<string, unknown>
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0)
const str = (v: unknown) => (typeof v === 'string' ? v : '')
const arr = (v: unknown): Loose[] => (Array.isArray(v) ? v.filter((x): x is Loose => !!x && typeof x === 'object') : [])

const pcieWords: Record<string, string> = {
  PIX: 'one PCIe switch',
  PXB: 'several PCIe switches',
  PHB: 'a PCIe host bridge',
  NODE: 'one NUMA node',
  SYS: 'across NUMA nodes',
}

/** The matrix of gpus (app.GPU of one machine), or null when none knows a link. */
export function topologyMatrix(gpus: readonly object[]): Matrix | null {
  const gs = gpus.map((g) => g as Loose)
  if (gs.length < 2 || !gs.some((g) => arr(g.links).length > 0)) return null
  const idx = gs.map((g) => num(g.index))
  const rows = gs.map((g) =>
    idx.map((peer): Cell => {
      if (peer === num(g.index)) return { text: 'X', nvlink: false, title: `GPU ${peer}` }
      const l = arr(g.links).find((x) => num(x.peer) === peer)
      const nv = num(l?.nvlinks)
      const pcie = str(l?.pcie)
      if (nv > 0) return { text: `NV${nv}`, nvlink: true, title: `GPU ${num(g.index)} ↔ GPU ${peer}: ${nv} NVLink links${pcie ? `, PCIe ${pcie}` : ''}` }
      if (pcie) return { text: pcie, nvlink: false, title: `GPU ${num(g.index)} ↔ GPU ${peer}: no NVLink; PCIe: ${pcieWords[pcie] ?? pcie}` }
      return { text: '–', nvlink: false, title: 'not known' }
    }),
  )
  return { gpus: idx, rows }
}

/** What the matrix means for placement: NVLinked sets where the machine
 * has NVLink; on a PCIe-only machine, no promise of NVLink. */
export function placementNote(m: Matrix): string {
  if (m.rows.some((r) => r.some((c) => c.nvlink))) return 'A multi-GPU job is placed on an NVLinked set of cool GPUs.'
  return 'No NVLink on this machine: the GPUs of a multi-GPU job talk over PCIe.'
}

/** Each GPU's MIG mode (those with MIG only) and the instances of those in MIG mode. */
export function migOf(gpus: readonly object[]): { modes: MigMode[]; instances: MigRow[] } {
  const modes: MigMode[] = []
  const instances: MigRow[] = []
  for (const g of gpus.map((x) => x as Loose)) {
    const m = g.mig as Loose | null | undefined
    if (!m || typeof m !== 'object') continue
    const on = m.enabled === true
    const mode = on ? (m.pending ? 'on (off after a reset)' : 'on') : m.pending ? 'off (on after a reset)' : 'off'
    modes.push({ gpu: num(g.index), mode })
    if (!on) continue
    for (const i of arr(m.instances)) {
      instances.push({ gpu: num(g.index), uuid: str(i.uuid), name: str(i.name), memBytes: num(i.mem_total_bytes), gi: num(i.gpu_instance), ci: num(i.compute_instance) })
    }
  }
  return { modes, instances }
}
