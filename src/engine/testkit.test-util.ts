// Shared fixtures for the engine's tests (not part of the package): schemas, stores, waits.

import { Field, Float64, Int64, Schema, Utf8 } from 'apache-arrow';
import type { MemWalOptions } from './options.js';
import { MemWal } from './memwal.js';
import type { StorageAdapter } from '../storage/adapter.js';
import { MemoryStorage } from '../storage/memory.js';

export const schema = new Schema([
  new Field('id', new Int64(), false),
  new Field('value', new Float64(), true),
  new Field('name', new Utf8(), true),
]);

let counter = 0;
/** A unique store name per test. */
export function storeName(prefix = 's'): string {
  counter += 1;
  return `${prefix}-${counter}-${Math.floor(Math.random() * 1e9)}`;
}

export function rows(from: number, n: number, tag = 'v'): { id: number; value: number; name: string }[] {
  const out = [];
  for (let i = from; i < from + n; i++) out.push({ id: i, value: i * 1.5, name: `${tag}${i}` });
  return out;
}

/** Open a keyed store on `storage` (default: a fresh MemoryStorage) with quiet logging. */
export function open(
  storage: StorageAdapter = new MemoryStorage(),
  extra: Partial<MemWalOptions> = {},
  name = storeName(),
): Promise<MemWal> {
  return MemWal.open({
    name,
    schema,
    primaryKey: ['id'],
    storage,
    logger: { warn: () => undefined },
    ...extra,
  });
}

/** Poll `cond` every few ms until it holds (or fail after `ms`). */
export async function until(cond: () => boolean | Promise<boolean>, ms = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

export const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The error a promise rejects with (fails the test if it resolves). */
export async function rejection(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p;
  } catch (e) {
    return e as { code?: string; message: string };
  }
  throw new Error('expected a rejection');
}

/** ids in a scan result, sorted. */
export function idsOf(t: { getChild(name: string): { toArray(): ArrayLike<bigint> } | null }): number[] {
  return Array.from(t.getChild('id')!.toArray(), Number).sort((a, b) => a - b);
}
