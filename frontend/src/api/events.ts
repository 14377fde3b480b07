// Event names, mirrored from app/api.go (EventNodes, EventSample).
import type { Node, Sample } from './types.ts'

/** The whole pool view ([]Node), pushed about once a second. */
export const EventNodes = 'pool:nodes'
/** One new live sample (Sample) of one node. */
export const EventSample = 'node:sample'

export interface EventPayloads {
  [EventNodes]: Node[] | null
  [EventSample]: Sample
}

export type EventName = keyof EventPayloads
export const eventNames: EventName[] = [EventNodes, EventSample]
