// The conformance page's OPFS table writer thread (what memwal's engine starts next to the I/O
// worker): serves writes on the port of its first message. Dedicated module worker.

import { serveTableWriter } from '../../src/io-worker/table-writer.js';

self.addEventListener('message', (ev: MessageEvent) => serveTableWriter((ev.data as { port: MessagePort }).port), { once: true });
