// MemWalError, its codes, and the one place where platform errors (DOMException, Node errno)
// become codes. Runs in every runtime.

/**
 * Every failure memwal reports is a `MemWalError` with one of these codes.
 *
 * Not written (safe to retry): `InvalidArgument`, `NotSupported`, `Aborted`,
 * `BackpressureTimeout`, `Locked`.
 * Outcome unknown (the data may or may not be durable): `IOError`, `QuotaExceeded`, `Fenced`,
 * and `Closed` when it ends a put that was already admitted.
 * `LeaderChanged` (`openMemWal({ tabs: 'share' })` only): the tab hosting the store went away
 * while the call was with it. Like `Closed`: not written when the leader had not accepted the
 * call (the message says so), outcome unknown for a put it had accepted.
 * Store state: `Corruption` (open found an invalid WAL entry that is not a torn tail),
 * `Truncated` (`tail` asked for entries already removed by retention).
 */
export type MemWalErrorCode =
  | 'InvalidArgument'
  | 'NotSupported'
  | 'Closed'
  | 'Aborted'
  | 'BackpressureTimeout'
  | 'Fenced'
  | 'Locked'
  | 'IOError'
  | 'QuotaExceeded'
  | 'Corruption'
  | 'Truncated'
  | 'LeaderChanged';

const CODES: ReadonlySet<string> = new Set<MemWalErrorCode>([
  'InvalidArgument',
  'NotSupported',
  'Closed',
  'Aborted',
  'BackpressureTimeout',
  'Fenced',
  'Locked',
  'IOError',
  'QuotaExceeded',
  'Corruption',
  'Truncated',
  'LeaderChanged',
]);

/** The single error class of memwal. `code` survives the worker boundary with `message`. */
export class MemWalError extends Error {
  override readonly name = 'MemWalError';
  readonly code: MemWalErrorCode;

  constructor(code: MemWalErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** True for errors whose put was certainly not written (see the code list above). */
  get notWritten(): boolean {
    return (
      this.code === 'InvalidArgument' ||
      this.code === 'NotSupported' ||
      this.code === 'Aborted' ||
      this.code === 'BackpressureTimeout' ||
      this.code === 'Locked'
    );
  }
}

/** True when `e` is a MemWalError (also one rebuilt from the wire, matched by name and code). */
export function isMemWalError(e: unknown, code?: MemWalErrorCode): e is MemWalError {
  if (!(e instanceof MemWalError)) return false;
  return code === undefined || e.code === code;
}

/** Is `code` one of the codes above? Used when errors come back over a wire. */
export function isMemWalErrorCode(code: unknown): code is MemWalErrorCode {
  return typeof code === 'string' && CODES.has(code);
}

/**
 * Map any thrown value to a MemWalError, in one place: DOMException names (OPFS, IndexedDB,
 * Web Locks) and Node errno codes become codes; a MemWalError passes through unchanged.
 * `context` prefixes the message ("WAL append", "table write", ...).
 */
export function toMemWalError(e: unknown, context: string, fallback: MemWalErrorCode = 'IOError'): MemWalError {
  if (e instanceof MemWalError) return e;
  const name = typeof e === 'object' && e !== null ? String((e as { name?: unknown }).name ?? '') : '';
  const errno = typeof e === 'object' && e !== null ? String((e as { code?: unknown }).code ?? '') : '';
  const detail = e instanceof Error ? e.message : String(e);
  const message = `${context}: ${name && name !== 'Error' ? `${name}: ` : ''}${detail}`;
  let code: MemWalErrorCode = fallback;
  if (name === 'QuotaExceededError' || errno === 'ENOSPC' || errno === 'EDQUOT') code = 'QuotaExceeded';
  else if (name === 'NoModificationAllowedError' || errno === 'EWOULDBLOCK' || errno === 'EAGAIN') code = 'Locked';
  else if (name === 'AbortError') code = 'Aborted';
  else if (name === 'NotSupportedError' || name === 'SecurityError') code = 'NotSupported';
  else if (name === 'VersionError' || name === 'DataCloneError' || (name === 'TypeError' && fallback === 'InvalidArgument'))
    code = fallback;
  return new MemWalError(code, message, { cause: e });
}

/**
 * A MemWalError as it crosses a boundary (a worker's port, the I/O worker, another tab, a
 * Playwright page): plain, structured-clonable data. `errorToWire` and `errorFromWire` are the
 * one encode/decode pair every boundary uses.
 */
export interface WireError {
  code: string;
  message: string;
}

/** `e` as a WireError: any thrown value is mapped by `toMemWalError` first (`context` prefixes its message). */
export function errorToWire(e: unknown, context: string): WireError {
  const err = toMemWalError(e, context);
  return { code: err.code, message: err.message };
}

/** The MemWalError a WireError stands for; a code this build does not know becomes `IOError`. */
export function errorFromWire(w: WireError): MemWalError {
  return new MemWalError(isMemWalErrorCode(w.code) ? w.code : 'IOError', w.message);
}

/** A QuotaExceededError as browsers throw it, for fault injection and tests in any runtime. */
export function quotaExceededError(message = 'No space available for this operation'): Error {
  if (typeof DOMException === 'function') return new DOMException(message, 'QuotaExceededError');
  const e = new Error(message);
  e.name = 'QuotaExceededError';
  return e;
}
