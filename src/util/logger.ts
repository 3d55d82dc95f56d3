// The logger memwal warns through (the `logger` option, `LockOptions.logger`). Any runtime.

/** Where memwal reports what it does not throw: retries, waits, lost locks. `console` is one. */
export interface Logger {
  warn(message: string, ...details: unknown[]): void;
}
