// Event names, mirrored from app (EventNodes, EventSample, EventJobs, EventAlerts).
import type { Job } from './jobs.ts'
import type { Alert } from './types.gen.ts'
import type { Node, Sample } from './types.ts'

/** The whole pool view ([]Node), pushed about once a second. */
export const EventNodes = 'pool:nodes'
/** One new live sample (Sample) of one node. */
export const EventSample = 'node:sample'

/** Every job of the pool ([]Job), whenever one changes. */
export const EventJobs = 'jobs:changed'

/** The alerts of the last week and every active one ([]Alert), when they change. */
export const EventAlerts = 'alerts'

export interface EventPayloads {
  [EventNodes]: Node[] | null
  [EventSample]: Sample
  [EventJobs]: Job[] | null
  [EventAlerts]: Alert[] | null
}

export type EventName = keyof EventPayloads
export const eventNames: EventName[] = [EventNodes, EventSample, EventJobs, EventAlerts]
