// ApiError turns every failure of either transport into one readable
// message; the UI never shows raw JSON or stack traces.

export class ApiError extends Error {
  /** Machine-readable code from the daemon ("invalid", "not_found", ...) or a local one. */
  readonly code: string
  /** HTTP status, or 0 when there was no HTTP response. */
  readonly status: number

  constructor(message: string, code = 'error', status = 0) {
    super(message)
    this.name = 'ApiError'
    this.code = code
    this.status = status
  }

  /** True when the daemon itself could not be reached. */
  get unreachable(): boolean {
    return this.code === 'unreachable'
  }
}

/** Extracts {code, message} from a JSON error body, if that is what text holds. */
export function parseErrorBody(text: string): { code: string; message: string } | null {
  const t = text.trim()
  if (!t.startsWith('{')) return null
  try {
    const v: unknown = JSON.parse(t)
    if (v && typeof v === 'object' && typeof (v as { message?: unknown }).message === 'string') {
      const o = v as { code?: unknown; message: string }
      return { code: typeof o.code === 'string' ? o.code : 'error', message: o.message }
    }
  } catch {
    // not JSON: fall through
  }
  return null
}

/** Converts anything thrown or rejected into an ApiError with a readable message. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err
  if (typeof err === 'string') {
    const body = parseErrorBody(err)
    return body ? new ApiError(body.message, body.code) : new ApiError(err || 'unknown error')
  }
  if (err && typeof err === 'object' && !(err instanceof Error)) {
    // A {code, message} object: an error body already decoded.
    const body = parseErrorBody(JSON.stringify(err))
    if (body) return new ApiError(body.message, body.code)
  }
  if (err instanceof Error) {
    const body = parseErrorBody(err.message)
    return body ? new ApiError(body.message, body.code) : new ApiError(err.message || 'unknown error')
  }
  return new ApiError('unknown error')
}
