// What a machine says about its lending, in words (node/lend's Status.Text
// says the same in the CLI). The UI decides nothing here: it shows what
// the machine's lender published.
import type { Job, LendStatus } from '../api/types.gen.ts'
import { formatClock } from './format.ts'

/** Whether the machine does more than lend always, at any time (as before lending). */
export function lendManaged(s: LendStatus | null | undefined): s is LendStatus {
  return !!s && (s.mode !== 'always' || !!s.hours || s.phase !== 'lent')
}

const clock = (iso: string | undefined) => formatClock(iso)

function minutes(ms: number): string {
  const m = Math.floor(ms / 60000)
  if (m < 1) return 'under a minute'
  if (m < 60) return `${m} min`
  return m % 60 === 0 ? `${Math.floor(m / 60)} h` : `${Math.floor(m / 60)} h ${m % 60} min`
}

const presentPrefix = 'owner present: '

/** Why's head and, for an owner present, the sign that saw them. */
function cause(why: string | undefined): [string, string] {
  const w = why ?? ''
  return w.startsWith(presentPrefix) ? ['owner present', ` (${w.slice(presentPrefix.length)})`] : [w, '']
}

/** "lent (owner away 23 min)", "owner present: guests pause at 14:32 (I'm using it)". */
export function lendText(s: LendStatus, now: number): string {
  switch (s.phase) {
    case 'lent':
      if (s.mode === 'idle' && s.owner_seen) return `lent (owner away ${minutes(now - Date.parse(s.owner_seen))})`
      return s.hours ? `lent (${s.hours})` : 'lent'
    case 'warned': {
      const [head, sign] = cause(s.why)
      return `${head}: guests ${s.yield === 'stop' ? 'stop' : 'pause'} at ${clock(s.deadline)}${sign}`
    }
    case 'yielded': {
      const [head, sign] = cause(s.why)
      return `${head}: guests ${s.yield === 'stop' ? 'stopped' : 'paused'} since ${clock(s.since)}${sign}`
    }
  }
  return s.why?.startsWith(presentPrefix) ? s.why : `owner's: ${s.why ?? ''}`
}

/** Why a guest job is paused, or when it will be: "paused since 14:32: the machine's owner took it back (owner present: I'm using it)"; '' for none. */
export function jobLendNote(j: Pick<Job, 'state' | 'lend'>): string {
  const n = j.lend
  if (!n || j.state !== 'running') return ''
  if (n.paused) return `paused since ${clock(n.at)}: the machine's owner took it back (${n.why})`
  return `${n.yield === 'stop' ? 'stops' : 'pauses'} at ${clock(n.at)}: the machine's owner takes it back (${n.why})`
}
