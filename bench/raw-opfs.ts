// Case 1, the raw limit: sequential 1 MiB writes through a FileSystemSyncAccessHandle with
// flush() after every chunk, into a fresh file. Dedicated worker only.

import { randomBytes } from './data.js';
import { MiB, now } from './measure.js';

interface SyncHandle {
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
