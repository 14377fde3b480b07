// The calendar strip of a machine's reservations: where each block sits on
// a strip of the next days. Pure, so that it is tested without a DOM.
import { formatDay, formatSpan } from './format.ts'

/** What the strip needs of a reservation. */
export interface Reserved {
  id: string
  node: string
  from: string
  until: string
  gpus: number[] | null
  state: string
  member: string
  member_name?: string
  reason?: string
  problem?: string
}

export interface Block {
  id: string
  /** Offset and width on the strip, in percent: the reservation's span. */
  left: number
  width: number
  /**
   * The room the block takes on its row, in percent: its span, or more
   * where its label needs it (a 3-hour reservation is 2% of a week).
   */
  space: number
  /** The block's row: reservations whose room overlaps go on separate rows. */
  row: number
  label: string
  title: string
  refused: boolean
}

export interface Strip {
  days: { left: number; label: string }[]
  blocks: Block[]
  rows: number
}

const dayMs = 24 * 3600 * 1000

/** The room a block's label takes, in percent of the strip ("alice · GPU 0,1"). */
export const labelPct = 10

/** The local midnight at or before t (ms). */
export function startOfDay(t: number): number {
  const d = new Date(t)
  d.setHours(0, 0, 0, 0)
  return d.getTime()
}

/**
 * Lays out node's reservations over `days` days from the start of now's
 * day: the accepted and refused ones (a cancelled one, or one not
 * believed, holds nothing and is left out), each clipped to the strip.
 */
export function strip(rs: Reserved[], node: string, now: number, days = 7): Strip {
  const start = startOfDay(now)
  const end = startOfDay(start + days * dayMs + dayMs / 2) // local days, DST included
  const span = end - start
  const pct = (t: number) => (100 * (Math.min(Math.max(t, start), end) - start)) / span
  const dayTicks: Strip['days'] = []
  for (let d = start; d < end; d = startOfDay(d + dayMs + dayMs / 2)) {
    dayTicks.push({ left: pct(d), label: formatDay(d) })
  }
  const mine = rs
    .filter((r) => r.node === node && !r.problem && (r.state === 'accepted' || r.state === 'refused'))
    .map((r) => ({ r, from: Date.parse(r.from), until: Date.parse(r.until) }))
    .filter((x) => Number.isFinite(x.from) && Number.isFinite(x.until) && x.until > start && x.from < end)
    .sort((a, b) => a.from - b.from)
  const rowEnds: number[] = [] // in percent of the strip: the room taken
  const blocks = mine.map(({ r, from, until }) => {
    const left = pct(from)
    const width = Math.max(pct(until) - left, 0.5)
    const space = Math.min(Math.max(width, labelPct), 100 - left)
    let row = rowEnds.findIndex((e) => e <= left)
    if (row < 0) row = rowEnds.push(0) - 1
    rowEnds[row] = left + Math.max(width, labelPct)
    const who = r.member_name || r.member.slice(0, 9)
    const gpus = (r.gpus ?? []).join(',')
    const when = formatSpan(from, until)
    const refused = r.state === 'refused'
    return {
      id: r.id,
      left,
      width,
      space: Math.max(space, width),
      row,
      label: `${who} · GPU ${gpus}`,
      title: `${r.id}: GPU ${gpus} for ${who}, ${when}${refused ? ` (refused: ${r.reason ?? ''})` : ''}`,
      refused,
    }
  })
  return { days: dayTicks, blocks, rows: Math.max(rowEnds.length, 1) }
}
