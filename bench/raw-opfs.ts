// Case 1, the raw limit: sequential 1 MiB writes through a FileSystemSyncAccessHandle with
// flush() after every chunk, into a fresh file. Dedicated worker only.

import { randomBytes } from './data.js';
import { MiB, now } from './measure.js';

interface SyncHandle {
  read(buffer: Uint8Array, options?: { at?: number }): number;
  write(buffer: Uint8Array, options?: { at?: number }): number;
  truncate(size: number): void;
  flush(): void;
  close(): void;
}

/** MiB/s of one repetition: `totalMiB` chunks of 1 MiB, each written and flushed. */
export async function rawOpfsWrite(totalMiB: number, fileName: string): Promise<number> {
  const root = await navigator.storage.getDirectory();
  const file = await root.getFileHandle(fileName, { create: true });
  const sync = await (file as unknown as { createSyncAccessHandle(): Promise<SyncHandle> }).createSyncAccessHandle();
  // Distinct random chunks, so nothing below the file system can deduplicate or compress them.
  const chunks = Array.from({ length: 8 }, (_, i) => randomBytes(MiB, 11 + i));
  try {
    sync.truncate(0);
    sync.flush();
    const t0 = now();
    for (let i = 0; i < totalMiB; i++) {
      const chunk = chunks[i % chunks.length]!;
      const n = sync.write(chunk, { at: i * MiB });
      if (n !== MiB) throw new Error(`raw OPFS: wrote ${n} of ${MiB} bytes`);
      sync.flush();
    }
    const ms = now() - t0;
    return totalMiB / (ms / 1000);
  } finally {
    sync.close();
    await root.removeEntry(fileName);
  }
}

/**
 * Case 1b, the cost of one ranged read from a table-sized OPFS file (`fileMiB`), three ways,
 * `reads` random 64 KiB ranges each: the whole file read and sliced (what OpfsStorage's
 * tableReadRange does today), `File.slice(range).arrayBuffer()` (only the range), and a
 * `read-only` sync access handle's `read(buf, { at })`. Resolves ms per read.
 */
export async function rawOpfsRangeReads(
  fileMiB: number,
  reads: number,
  fileName: string,
): Promise<Record<'whole' | 'fileSlice' | 'syncHandle', number>> {
  const root = await navigator.storage.getDirectory();
  const handle = await root.getFileHandle(fileName, { create: true });
  const w = await (handle as unknown as { createSyncAccessHandle(): Promise<SyncHandle> }).createSyncAccessHandle();
  const size = fileMiB * MiB;
  const range = 64 * 1024;
  try {
    for (let i = 0; i < fileMiB; i++) w.write(randomBytes(MiB, 31 + i), { at: i * MiB });
    w.flush();
  } finally {
    w.close();
  }
  const offsets = Array.from({ length: reads }, (_, i) => Math.floor((((i * 7919) % 1000) / 1000) * (size - range)));
  let sink = 0;
  const time = async (read: (offset: number) => Promise<Uint8Array> | Uint8Array): Promise<number> => {
    const t0 = now();
    for (const o of offsets) sink += (await read(o))[0]!;
    return (now() - t0) / reads;
  };
  try {
    const whole = await time(async (o) => new Uint8Array(await (await handle.getFile()).arrayBuffer()).slice(o, o + range));
    const fileSlice = await time(async (o) => new Uint8Array(await (await handle.getFile()).slice(o, o + range).arrayBuffer()));
    const ro = await (handle as unknown as { createSyncAccessHandle(o: { mode: string }): Promise<SyncHandle> }).createSyncAccessHandle({
      mode: 'read-only',
    });
    let syncHandle: number;
    try {
      syncHandle = await time((o) => {
        const buf = new Uint8Array(range);
        ro.read(buf, { at: o });
        return buf;
      });
    } finally {
      ro.close();
    }
    if (Number.isNaN(sink)) throw new Error('unreachable');
    return { whole, fileSlice, syncHandle };
  } finally {
    await root.removeEntry(fileName);
  }
}
