// Event names, mirrored from app/api.go (EventNodes, EventSample).
import type { Job } from './jobs.ts'
import type { Node, Sample } from './types.ts'

/** The whole pool view ([]Node), pushed about once a second. */
export const EventNodes = 'pool:nodes'
/** One new live sample (Sample) of one node. */
export const EventSample = 'node:sample'

/** Every job of the pool ([]Job), whenever one changes. */
export const EventJobs = 'jobs:changed'

export interface EventPayloads {
  [EventNodes]: Node[] | null
  [EventSample]: Sample
  [EventJobs]: Job[] | null
}

export type EventName = keyof EventPayloads
export const eventNames: EventName[] = [EventNodes, EventSample, EventJobs]
