// destroyMemWal outside a page: its NotSupported names destroyMemWal and its in-process counterpart.

import { describe, expect, it } from 'vitest';
import { destroyMemWal } from './destroy.js';

describe('destroyMemWal', () => {
  it('without module workers rejects NotSupported naming destroyMemWal and MemWal.destroy, not openMemWal', async () => {
    expect(typeof (globalThis as { Worker?: unknown }).Worker).toBe('undefined'); // Node: no Worker global
    const e = await destroyMemWal('some-store').then(
      () => undefined,
      (err: unknown) => err as { code?: string; message: string },
    );
    expect(e?.code).toBe('NotSupported');
    expect(e?.message).toContain('destroyMemWal needs a context with module workers');
    expect(e?.message).toContain('MemWal.destroy');
    expect(e?.message).not.toContain('openMemWal');
  });
});
