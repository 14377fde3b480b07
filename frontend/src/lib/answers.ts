// The last answers of the history queries, kept so a view opens at once and,
// when the daemon cannot answer, still shows what it showed last, marked
// stale: the newest few in memory, the newest small ones also in a store
// that outlives the page (localStorage).

/** An answer, fresh from the daemon or the last one kept (stale, with why). */
export interface Answer<T> {
  value: T
  stale: boolean
  /** Why the daemon gave no fresh answer ("" when it did). */
  error: string
  /** When the value was fetched (ms since the epoch). */
  fetchedAt: number
}

/** The part of Storage the keeper uses. */
export interface KeyValueStore {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
}

export interface AnswersConfig {
  /** Answers kept in memory (the oldest used goes first). */
  memory: number
  /** Answers kept in the store, each at most storedChars of JSON. */
  stored: number
  storedChars: number
  /** The store's key. */
  key: string
}

export const defaultAnswersConfig: AnswersConfig = { memory: 48, stored: 4, storedChars: 1_000_000, key: 'labpool:history-cache' }

type Entry = [string, Answer<unknown>]

export class Answers {
  private mem = new Map<string, Answer<unknown>>()
  private cfg: AnswersConfig
  private store: KeyValueStore | null

  constructor(store: KeyValueStore | null, cfg: AnswersConfig = defaultAnswersConfig) {
    this.store = store
    this.cfg = cfg
  }

  /** The answer kept for path, marked stale, or null. */
  get<T>(path: string): Answer<T> | null {
    const a = this.mem.get(path) ?? this.stored().find(([p]) => p === path)?.[1]
    return a ? ({ ...a, stale: true } as Answer<T>) : null
  }

  /** Keeps value as path's fresh answer and returns it. */
  put<T>(path: string, value: T, now: number): Answer<T> {
    const a: Answer<T> = { value, stale: false, error: '', fetchedAt: now }
    this.mem.delete(path)
    this.mem.set(path, a)
    while (this.mem.size > this.cfg.memory) this.mem.delete(this.mem.keys().next().value as string)
    this.save(path, a)
    return a
  }

  /**
   * Asks get for path's answer and keeps it; when that fails, answers the
   * kept one marked stale with why, or throws when none is kept.
   */
  async fetch<T>(path: string, get: () => Promise<T>, why: (err: unknown) => string, now: () => number = Date.now): Promise<Answer<T>> {
    try {
      return this.put(path, await get(), now())
    } catch (err) {
      const old = this.get<T>(path)
      if (!old) throw err
      return { ...old, error: why(err) }
    }
  }

  private stored(): Entry[] {
    try {
      const all: unknown = JSON.parse(this.store?.getItem(this.cfg.key) ?? '[]')
      return Array.isArray(all) ? all.filter((e): e is Entry => Array.isArray(e) && typeof e[0] === 'string' && !!e[1]) : []
    } catch {
      return [] // garbage in the store: as if empty
    }
  }

  private save(path: string, a: Answer<unknown>) {
    if (!this.store) return
    try {
      if (JSON.stringify(a).length > this.cfg.storedChars) return
      const all = [[path, a] as Entry, ...this.stored().filter(([p]) => p !== path)].slice(0, this.cfg.stored)
      this.store.setItem(this.cfg.key, JSON.stringify(all))
    } catch {
      // the store is full or refuses: it is only a cache
    }
  }
}
