// How the demo writes numbers: bytes, MiB, counts, seconds. Page only.

const KiB = 1024;
export const MiB = 1024 * KiB;

/** `n` bytes in B, KiB or MiB. */
export function fmtBytes(n: number): string {
  if (n >= MiB) return `${(n / MiB).toFixed(n >= 100 * MiB ? 0 : 1)} MiB`;
  if (n >= KiB) return `${(n / KiB).toFixed(0)} KiB`;
  return `${Math.round(n)} B`;
}

/** A MiB figure with two significant decimals at most (no unit). */
export const fmtMiB = (v: number): string => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

/** A count, short: 950, 1.2k, 48k, 3.1M. */
export function fmtCount(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e7 ? 0 : 1)}M`;
  if (n >= 1e4) return `${(n / 1e3).toFixed(0)}k`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

/** A whole number with thousands separators. */
export const fmtInt = (n: number): string => Math.round(n).toLocaleString('en-US');

/** Seconds with one decimal below 100. */
export const fmtSec = (s: number): string => `${s >= 100 ? s.toFixed(0) : s.toFixed(1)} s`;
