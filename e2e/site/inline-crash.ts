// The inline-crash page: starts engine workers (inline-crash.worker.ts) that write OPFS on their own
// thread (each WAL entry appended as header and payload, two parts), hears which puts they
// acknowledged on a BroadcastChannel (heard even after the worker is killed), and kills them.

type Reply = { rows: [string, string][] } | { error: string };

let acked = -1;
new BroadcastChannel('inline-crash').onmessage = (ev: MessageEvent) => {
  acked = Math.max(acked, (ev.data as { acked: number }).acked);
};

const probe = {
  worker: undefined as Worker | undefined,
  /** A new worker writes put after put to store `name`, from put `from` on; resolves when it has opened. */
  storm(name: string, from: number): Promise<void> {
    acked = from - 1;
    const w = new Worker(new URL('./inline-crash.worker.ts', import.meta.url), { type: 'module' });
    probe.worker = w;
    return new Promise((resolve, reject) => {
      w.onmessage = (ev: MessageEvent) =>
        (ev.data as { opened?: boolean }).opened ? resolve() : reject(new Error(JSON.stringify(ev.data)));
      w.postMessage({ cmd: 'storm', name, from });
    });
  },
  acked: (): number => acked,
  kill(): void {
    probe.worker!.terminate();
  },
  /** Reopen store `name` in a new worker: every row as [id, payload]. */
  rows(name: string): Promise<Reply> {
    const w = new Worker(new URL('./inline-crash.worker.ts', import.meta.url), { type: 'module' });
    return new Promise((resolve) => {
      w.onmessage = (ev: MessageEvent) => {
        resolve(ev.data as Reply);
        w.terminate();
      };
      w.postMessage({ cmd: 'rows', name });
    });
  },
};

(window as unknown as { inlineCrash: typeof probe }).inlineCrash = probe;
