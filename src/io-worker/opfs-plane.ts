// The OPFS adapter's I/O plane (lsm/io-plane.ts), used where its files are written: in the I/O
// worker, or on the engine's thread of a context without one. A WAL entry is appended as two
// parts (its header, then the payload itself: no joined copy); a table handed over whole goes to
// the table writer thread where the adapter has one that serves (table-writer.ts), and a table
// that thread built and keeps is written there. Jobs run on this thread. Browser workers.

import { frameHeader, type PlacedStore } from '../lsm/io-plane.js';
import { InlineJobs } from '../lsm/jobs.js';
import { FRAME_HEADER_BYTES } from '../format/wal/format.js';
import type { LockOptions } from '../storage/adapter.js';
import type { OpfsStorage, OpfsStoreHandle } from '../storage/opfs.js';
import type { KeptPlane } from './io-host.js';

/** The plane of store handle `handle` of the OPFS adapter. */
export function opfsPlane(handle: OpfsStoreHandle): KeptPlane {
  const writeTable = (name: string, bytes: Uint8Array): Promise<void> => handle.tableWriteBytes(name, bytes);
  return {
    async appendEntry(name, offset, epoch, position, payload, payloadCrc) {
      await handle.walAppendParts(name, offset, [frameHeader(epoch, position, payload, payloadCrc), payload]);
      return FRAME_HEADER_BYTES + payload.length;
    },
    writeTable,
    writeKept: (name, table) => handle.tableWriteKept(name, table),
    jobs: (store) => new InlineJobs(store.schema, store.keyEncoder, store.open, writeTable),
  };
}

/** The placement of `adapter`'s stores: each on its `opfsPlane`. */
export function opfsPlacement(adapter: OpfsStorage): {
  openStore(name: string, options: LockOptions): Promise<PlacedStore & { plane: KeptPlane }>;
} {
  return {
    async openStore(name, options) {
      const handle = await adapter.openStore(name, options);
      return { handle, plane: opfsPlane(handle) };
    },
  };
}
