// Samples a V8 isolate's memory through the Chrome DevTools Protocol (workerd's inspector):
// `Runtime.getHeapUsage` every <intervalMs>, one JSON line per sample on stdout, until killed.
// Run with `node --experimental-websocket --import tsx test/examples/heap-sampler.ts <wsUrl> <intervalMs>`
// (Node 20 has WebSocket only behind that flag). Used by test/examples.test.ts.

/** One sample, bytes: V8's used and allocated heap, the embedder (cppgc) heap, ArrayBuffer backing stores. */
export interface HeapSample {
  usedSize: number;
  totalSize: number;
  embedderHeapUsedSize: number;
  backingStorageSize: number;
}

const [url, interval = '25'] = process.argv.slice(2);
if (!url) throw new Error('usage: heap-sampler.ts <wsUrl> <intervalMs>');

const ws = new WebSocket(url);
let nextId = 0;
const waiting = new Map<number, (result: HeapSample) => void>();
ws.onmessage = (event) => {
  const msg = JSON.parse(String(event.data)) as { id?: number; result?: HeapSample };
  if (msg.id !== undefined && msg.result) waiting.get(msg.id)?.(msg.result);
  if (msg.id !== undefined) waiting.delete(msg.id);
};
ws.onerror = () => process.exit(1);
ws.onclose = () => process.exit(0);
ws.onopen = async () => {
  for (;;) {
    const id = ++nextId;
    const sample = await new Promise<HeapSample>((resolve) => {
      waiting.set(id, resolve);
      ws.send(JSON.stringify({ id, method: 'Runtime.getHeapUsage' }));
    });
    process.stdout.write(`${JSON.stringify(sample)}\n`);
    await new Promise((resolve) => setTimeout(resolve, Number(interval)));
  }
};
