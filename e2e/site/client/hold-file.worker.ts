// Stands for a predecessor's table writer thread still writing a file of a store it
// lost: holds a `readwrite` sync access handle on OPFS file `memwal/{store}/tables/{file}` (made
// if missing) for `ms`, then closes it. Answers 'held' once the handle is open, 'released' once closed.

self.addEventListener('message', async (ev: MessageEvent) => {
  const { store, file, ms } = ev.data as { store: string; file: string; ms: number };
  const root = await (await navigator.storage.getDirectory()).getDirectoryHandle('memwal', { create: true });
  const tables = await (await root.getDirectoryHandle(store, { create: true })).getDirectoryHandle('tables', { create: true });
  const handle = await tables.getFileHandle(file, { create: true });
  const sync = await (
    handle as unknown as { createSyncAccessHandle(): Promise<{ write(b: Uint8Array): number; flush(): void; close(): void }> }
  ).createSyncAccessHandle();
  sync.write(new Uint8Array(1024).fill(7));
  sync.flush();
  postMessage('held');
  setTimeout(() => {
    sync.close();
    postMessage('released');
  }, ms);
});
