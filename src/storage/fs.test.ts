// FileStorage under Node: every conformance case, the manifest compare-and-set under a real race,
// fault mapping, and the LOCK protocol against a second process (test/fixtures/hold-lock.ts).

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Field, Int64, Schema, Utf8 } from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { MemWal } from '../engine/memwal.js';
import { MemWalError } from '../util/errors.js';
import type { Manifest } from '../format/manifest/manifest.js';
import { NodeFileStorage } from '../node.js';
import { conformanceCases, testManifest } from '../testing/conformance.js';
import { FileStorage } from './fs.js';
import type { FileSystemShim, ShimFile } from './fs-shim.js';
import { nodeFileSystem } from './fs-node.js';

const roots: string[] = [];
afterAll(async () => {
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

async function tempRoot(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'memwal-fs-'));
  roots.push(root);
  return root;
}

function manifest(writerEpoch: number, version: number, extra: Partial<Manifest> = {}): Manifest {
  return { ...testManifest({ layout: 'node-fs' }, writerEpoch, version), ...extra };
}

/** Resolves the MemWalError code `promise` rejects with ('resolved' if it does not reject). */
async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (e) {
    expect(e).toBeInstanceOf(MemWalError);
    return (e as MemWalError).code;
  }
}

/** The Node shim with some calls replaced. */
function shim(
  overrides: Partial<FileSystemShim>,
  fileOverrides: (path: string, file: ShimFile) => Partial<ShimFile> = () => ({}),
): FileSystemShim {
  return {
    ...nodeFileSystem,
    async open(path, flags) {
      const file = await nodeFileSystem.open(path, flags);
      const o = fileOverrides(path, file);
      return {
        read: o.read ?? ((into, position) => file.read(into, position)),
        write: o.write ?? ((bytes, position) => file.write(bytes, position)),
        datasync: o.datasync ?? (() => file.datasync()),
        sync: o.sync ?? (() => file.sync()),
        truncate: o.truncate ?? ((length) => file.truncate(length)),
        size: o.size ?? (() => file.size()),
        modifiedMs: o.modifiedMs ?? (() => file.modifiedMs()),
        touch: o.touch ?? (() => file.touch()),
        ...(o.tryLock ? { tryLock: o.tryLock } : {}),
        close: o.close ?? (() => file.close()),
      };
    },
    ...overrides,
  };
}

describe('FileStorage conformance (Node)', () => {
  for (const c of conformanceCases(async () => new NodeFileStorage(await tempRoot()))) {
    it(c.name, () => c.run());
  }
});

describe('FileStorage on disk', () => {
  it('keeps each store in wal/, tables/, manifest/{version}.json and LOCK under the root', async () => {
    const root = await tempRoot();
    const storage = new NodeFileStorage(root);
    expect(storage.layout).toBe('node-fs');
    const h = await storage.openStore('s', { timeoutMs: 0 });
    await h.manifestCommit(0, manifest(1, 1));
    await h.walAppend('1-1', 0, new Uint8Array([1, 2, 3]));
    await h.tableWrite('1-1-0.arrow', [new Uint8Array([4, 5])]);
    expect((await readdir(join(root, 's'))).sort()).toEqual(['LOCK', 'manifest', 'tables', 'wal']);
    expect([...(await readFile(join(root, 's/wal/1-1')))]).toEqual([1, 2, 3]);
    expect([...(await readFile(join(root, 's/tables/1-1-0.arrow')))]).toEqual([4, 5]);
    expect(JSON.parse(await readFile(join(root, 's/manifest/1.json'), 'utf8'))).toEqual(manifest(1, 1));
    expect(JSON.parse(await readFile(join(root, 's/LOCK'), 'utf8'))).toMatchObject({ pid: process.pid });
    await h.release();
    expect(await readdir(join(root, 's'))).not.toContain('LOCK');
  });

  it('keeps only the newest manifest versions and loads the newest', async () => {
    const root = await tempRoot();
    const h = await new NodeFileStorage(root, { manifestVersionsKept: 3 }).openStore('s', { timeoutMs: 0 });
    for (let v = 1; v <= 8; v++) await h.manifestCommit(v - 1, manifest(1, v, { replayCursor: v * 10 }));
    expect((await readdir(join(root, 's/manifest'))).sort()).toEqual(['6.json', '7.json', '8.json']);
    expect((await h.manifestLoad())?.replayCursor).toBe(80);
  });

  it('a newest manifest file that is not JSON fails load with Corruption', async () => {
    const root = await tempRoot();
    const h = await new NodeFileStorage(root).openStore('s', { timeoutMs: 0 });
    await h.manifestCommit(0, manifest(1, 1));
    await writeFile(join(root, 's/manifest/2.json'), '{"formatVersion":1,');
    expect(await codeOf(h.manifestLoad())).toBe('Corruption');
  });

  it('store and file names that are not one path component are rejected InvalidArgument', async () => {
    const storage = new NodeFileStorage(await tempRoot());
    expect(await codeOf(storage.openStore('../escape', { timeoutMs: 0 }))).toBe('InvalidArgument');
    expect(await codeOf(storage.destroyStore('a/b'))).toBe('InvalidArgument');
    const h = await storage.openStore('s', { timeoutMs: 0 });
    expect(await codeOf(h.tableWrite('../x.arrow', [new Uint8Array(1)]))).toBe('InvalidArgument');
    expect(await codeOf(h.walRead('..'))).toBe('InvalidArgument');
  });

  it("estimate reports the store's own bytes, its room on the file system, and persisted", async () => {
    const root = await tempRoot();
    const storage = new NodeFileStorage(root);
    expect(await storage.estimate('s')).toMatchObject({ usageBytes: 0, persisted: true });
    const h = await storage.openStore('s', { timeoutMs: 0 });
    await h.manifestCommit(0, manifest(1, 1));
    await h.walAppend('1-1', 0, new Uint8Array(1000));
    await h.tableWrite('1-1-0.arrow', [new Uint8Array(3000)]);
    const other = await storage.openStore('other', { timeoutMs: 0 });
    await other.walAppend('1-1', 0, new Uint8Array(50_000));
    const files = ['s/LOCK', 's/manifest/1.json', 's/wal/1-1', 's/tables/1-1-0.arrow'];
    const expected = (await Promise.all(files.map((f) => readFile(join(root, f))))).reduce((n, b) => n + b.length, 0);
    const e = await storage.estimate('s');
    expect(e.usageBytes).toBe(expected);
    expect(e.usageBytes).toBeLessThan(5000); // not the other store's 50 kB, nor the disk's usage
    expect(e.quotaBytes).toBeGreaterThan(e.usageBytes!);
    expect(e.persisted).toBe(true);
    expect((await storage.estimate('other')).usageBytes).toBeGreaterThanOrEqual(50_000);
  });
});

describe('MemWal storage figures on files', () => {
  it("storageStats().usageBytes and wal_storage_usage_bytes are the store's bytes on disk", async () => {
    const root = await tempRoot();
    const storage = new NodeFileStorage(root);
    const schema = new Schema([new Field('id', new Int64(), false), new Field('name', new Utf8(), true)]);
    const w = await MemWal.open({ name: 's', schema, primaryKey: ['id'], storage, logger: { warn: () => undefined } });
    await w.put(Array.from({ length: 500 }, (_, id) => ({ id, name: 'x'.repeat(100) })));
    await w.forceSealActive();
    await w.waitForFlushDrain();
    const bytesOnDisk = async (): Promise<number> => {
      let n = 0;
      for (const dir of ['s', 's/wal', 's/tables', 's/manifest']) {
        for (const entry of await readdir(join(root, dir), { withFileTypes: true })) {
          // A file may go between the listing and the read (a manifest's temporary file, renamed
          // by a background commit): it counts as gone, and the loop below compares again.
          if (entry.isFile()) n += (await stat(join(root, dir, entry.name)).catch(() => ({ size: 0 }))).size;
        }
      }
      return n;
    };
    // WAL retention may still be removing segments behind the flush: compare once the files settle.
    let onDisk = await bytesOnDisk();
    let stats = await w.storageStats();
    for (let i = 0; i < 20 && stats.usageBytes !== onDisk; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      onDisk = await bytesOnDisk();
      stats = await w.storageStats();
    }
    expect(stats.usageBytes).toBe(onDisk);
    expect(stats.usageBytes).toBeGreaterThan(50_000); // the rows, in the WAL and a table file
    expect(stats.quotaBytes).toBeGreaterThan(stats.usageBytes!);
    expect(await w.metrics()).toContain(`wal_storage_usage_bytes{store="s"} ${onDisk}\n`);
    await w.close();
  });
});

describe('FileStorage manifest compare-and-set', () => {
  /**
   * A shim whose manifest links wait until `n` are in flight (so every commit has passed its
   * version check), then run one after another, the highest writer epoch first.
   */
  function racingLinks(n: number): FileSystemShim {
    const arrived: { epoch: number; link: () => Promise<void>; done: (p: Promise<void>) => void }[] = [];
    return shim({
      async link(existing, newPath) {
        if (!newPath.includes('/manifest/')) return nodeFileSystem.link(existing, newPath);
        const { writerEpoch } = JSON.parse(await readFile(existing, 'utf8')) as Manifest;
        return new Promise<void>((resolve, reject) => {
          const link = () => nodeFileSystem.link(existing, newPath);
          arrived.push({ epoch: writerEpoch, link, done: (p) => p.then(resolve, reject) });
          if (arrived.length < n) return;
          let turn = Promise.resolve();
          for (const a of arrived.sort((x, y) => y.epoch - x.epoch)) {
            const mine = turn.then(a.link);
            a.done(mine);
            turn = mine.catch(() => undefined);
          }
        });
      },
    });
  }

  it('two commits racing for the same version: exactly one wins, the other fails IOError', async () => {
    const h = await new FileStorage(racingLinks(2), await tempRoot()).openStore('s', { timeoutMs: 0 });
    const a = manifest(1, 1, { replayCursor: 1 });
    const b = manifest(1, 1, { replayCursor: 2 });
    const [ra, rb] = await Promise.allSettled([h.manifestCommit(0, a), h.manifestCommit(0, b)]);
    const won = [ra, rb].filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    const lost = [ra, rb].find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((lost.reason as MemWalError).code).toBe('IOError');
    expect(await h.manifestLoad()).toEqual(ra.status === 'fulfilled' ? a : b);
  });

  it('a commit losing the race to a newer epoch fails Fenced', async () => {
    const h = await new FileStorage(racingLinks(2), await tempRoot()).openStore('s', { timeoutMs: 0 });
    const newer = manifest(2, 1);
    const older = manifest(1, 1);
    const results = await Promise.allSettled([h.manifestCommit(0, newer), h.manifestCommit(0, older)]);
    expect(results[0].status, String((results[0] as PromiseRejectedResult).reason)).toBe('fulfilled');
    expect(((results[1] as PromiseRejectedResult).reason as MemWalError).code).toBe('Fenced');
    expect(await h.manifestLoad()).toEqual(newer);
  });

  it('an append is not acknowledged when a newer epoch is committed while it syncs', async () => {
    const root = await tempRoot();
    let hold: Promise<void> | undefined;
    const storage = new FileStorage(
      shim({}, (path, file) => ({
        datasync: async () => {
          await file.datasync();
          if (path.endsWith('/wal/1-1')) await hold;
        },
      })),
      root,
    );
    const old = await storage.openStore('s', { timeoutMs: 0 });
    await old.manifestCommit(0, manifest(1, 1));
    await old.walAppend('1-1', 0, new Uint8Array([1]));
    let release!: () => void;
    hold = new Promise((resolve) => (release = resolve));
    const append = old.walAppend('1-1', 1, new Uint8Array([2]));
    // A second process claims epoch 2 while the append is between its sync and its ack.
    const next = await new NodeFileStorage(root).openStore('s', { steal: true, timeoutMs: 0 });
    await next.manifestCommit(1, manifest(2, 2));
    release();
    expect(await codeOf(append)).toBe('Fenced');
  });
});

describe('FileStorage failures', () => {
  const enospc = (): Error => Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });

  it('ENOSPC on a WAL append rejects QuotaExceeded, and the append can be retried after a truncate', async () => {
    let full = true;
    const storage = new FileStorage(
      shim({}, (path, file) => ({
        write: async (bytes, position) => {
          if (full && path.endsWith('/wal/1-1')) {
            await file.write(bytes.subarray(0, 1), position); // a torn prefix lands
            throw enospc();
          }
          return file.write(bytes, position);
        },
      })),
      await tempRoot(),
    );
    const h = await storage.openStore('s', { timeoutMs: 0 });
    expect(await codeOf(h.walAppend('1-1', 0, new Uint8Array([7, 8, 9])))).toBe('QuotaExceeded');
    full = false;
    await h.walTruncate('1-1', 0);
    await h.walAppend('1-1', 0, new Uint8Array([7, 8, 9]));
    expect([...(await h.walRead('1-1'))]).toEqual([7, 8, 9]);
  });

  it('a failed table write leaves no partial file', async () => {
    let writes = 0;
    const storage = new FileStorage(
      shim({}, (path, file) => ({
        write: async (bytes, position) => {
          if (path.includes('/tables/') && ++writes === 2) throw enospc();
          return file.write(bytes, position);
        },
      })),
      await tempRoot(),
    );
    const h = await storage.openStore('s', { timeoutMs: 0 });
    expect(await codeOf(h.tableWrite('1-1-0.arrow', [new Uint8Array(4), new Uint8Array(4)]))).toBe('QuotaExceeded');
    expect(await h.tableList()).toEqual([]);
  });
});

/** How test/fixtures run in each runtime: Node through tsx, Deno from npm (the `deno` dev dependency). */
/** The deno executable itself: node_modules/.bin/deno may be a Node wrapper, and killing that would leave deno running. */
const DENO = (createRequire(import.meta.url)('deno/install_api.cjs') as { runInstall(): string }).runInstall();
/** For running this repository's TypeScript sources as they are (not permissions). */
const DENO_SOURCE_FLAGS = ['--no-check', '--unstable-sloppy-imports'];
const DENO_FLAGS = ['-A', ...DENO_SOURCE_FLAGS];
/** The permissions the README asks for, and nothing more. */
const DENO_DOCUMENTED_FLAGS = ['--allow-read', '--allow-write'];
const RUNTIMES = {
  node: [process.execPath, '--import', 'tsx'],
  deno: [DENO, 'run', ...DENO_DOCUMENTED_FLAGS, ...DENO_SOURCE_FLAGS],
};
const DENO_ENV = { ...process.env, NO_COLOR: '1', DENO_NO_UPDATE_CHECK: '1' };

/** Runs fixture `args` in `runtime` and calls `onLine` with each stdout line; resolves once it is gone. */
function runFixture(runtime: keyof typeof RUNTIMES, args: string[], onLine: (line: string, child: ChildProcess) => void): Promise<void> {
  const [command, ...flags] = RUNTIMES[runtime];
  const child = spawn(command!, [...flags, ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: DENO_ENV });
  const reader = createInterface({ input: child.stdout! });
  reader.on('line', (line) => onLine(line, child));
  return Promise.all([new Promise((resolve) => child.on('exit', resolve)), new Promise((resolve) => reader.on('close', resolve))]).then(
    () => undefined,
  );
}

describe('FileStorage writer lock', () => {
  it('a LOCK left by an earlier process with our pid is taken over', async () => {
    const root = await tempRoot();
    const storage = new NodeFileStorage(root);
    await (await storage.openStore('s', { timeoutMs: 0 })).manifestCommit(0, manifest(1, 1));
    await writeFile(join(root, 's/LOCK'), JSON.stringify({ pid: process.pid, token: 'from-an-earlier-life' }));
    const h = await storage.openStore('s', { timeoutMs: 0 });
    expect((await h.manifestLoad())?.writerEpoch).toBe(1);
  });

  it("release after a steal leaves the stealer's LOCK in place", async () => {
    const storage = new NodeFileStorage(await tempRoot());
    const first = await storage.openStore('s', { timeoutMs: 0 });
    await storage.openStore('s', { steal: true, timeoutMs: 0 });
    await first.release();
    expect(await codeOf(first.walList())).toBe('Fenced');
    expect(await codeOf(storage.openStore('s', { timeoutMs: 0 }))).toBe('Locked');
    expect(await codeOf(storage.destroyStore('s'))).toBe('Locked');
  });

  /** Starts test/fixtures/hold-lock.ts on `root`/`store`; resolves once it holds the lock. */
  async function holder(
    root: string,
    store: string,
    runtime: keyof typeof RUNTIMES = 'node',
  ): Promise<{ child: ChildProcess; lines: string[]; exited: Promise<void> }> {
    // `node --import tsx` runs the TypeScript in this very process (the tsx CLI would add a parent).
    const [command, ...flags] = RUNTIMES[runtime];
    const child = spawn(command!, [...flags, 'test/fixtures/hold-lock.ts', root, store], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: DENO_ENV,
    });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    const lines: string[] = [];
    const reader = createInterface({ input: child.stdout! });
    await new Promise<void>((resolve, reject) => {
      reader.on('line', (line) => {
        lines.push(line);
        if (line === 'locked') resolve();
      });
      child.on('exit', (code) => reject(new Error(`hold-lock exited with ${code} before locking`)));
    });
    return { child, lines, exited };
  }

  it('another process holding the store: Locked, destroy Locked, and a waiter gets it once that process is killed', async () => {
    const root = await tempRoot();
    const { child, exited } = await holder(root, 's');
    try {
      const storage = new NodeFileStorage(root);
      expect(await codeOf(storage.openStore('s', { timeoutMs: 0 }))).toBe('Locked');
      expect(await codeOf(storage.destroyStore('s'))).toBe('Locked');
      let waited = 0;
      const open = storage.openStore('s', { timeoutMs: 5000, onWaiting: () => waited++ });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(waited).toBe(1);
      child.kill('SIGKILL');
      await exited;
      const h = await open;
      expect(JSON.parse(await readFile(join(root, 's/LOCK'), 'utf8'))).toMatchObject({ pid: process.pid });
      await h.release();
      await storage.destroyStore('s');
      expect(await readdir(root)).toEqual([]);
    } finally {
      child.kill('SIGKILL');
    }
  });

  /** Opens `root`/`store` with test/fixtures/file-store.ts in `runtime`: its `opened {ms}` or `error {code}` line. */
  async function openIn(runtime: keyof typeof RUNTIMES, root: string, store: string, lockTimeoutMs: number, lockLeaseMs?: number) {
    const args = ['test/fixtures/file-store.ts', 'read', root, store, String(lockTimeoutMs), ...(lockLeaseMs ? [String(lockLeaseMs)] : [])];
    let result = 'no result';
    await runFixture(runtime, args, (line) => {
      if (/^(opened|error) /.test(line)) result = line;
    });
    return result;
  }

  it('deno with --allow-read --allow-write: a live Deno holder keeps the lock, and once it is SIGKILLed a waiter takes it at once', async () => {
    const root = await tempRoot();
    const { child, exited } = await holder(root, 's', 'deno');
    try {
      expect(await openIn('deno', root, 's', 1000)).toBe('error Locked');
      child.kill('SIGKILL');
      await exited;
      // The holder's flock went with it: no pid check (denied) and no lease wait (10 s) needed.
      const opened = await openIn('deno', root, 's', 5000);
      expect(opened).toMatch(/^opened \d+$/);
      expect(Number(opened.split(' ')[1])).toBeLessThan(2000);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('deno with --allow-read --allow-write waiting on a Node holder: kept while its heartbeat is fresh, taken over once it is lockLeaseMs old', async () => {
    const root = await tempRoot();
    const { child, exited } = await holder(root, 's', 'node');
    try {
      // Deno may not check the Node holder's pid; its heartbeat (every 20 ms) keeps the lease.
      expect(await openIn('deno', root, 's', 3000, 2000)).toBe('error Locked');
      child.kill('SIGKILL');
      await exited;
      const killedAt = Date.now();
      expect(await openIn('deno', root, 's', 10_000, 2000)).toMatch(/^opened \d+$/);
      expect(Date.now() - killedAt).toBeGreaterThanOrEqual(1900);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('stealing from another process makes it report onLost', async () => {
    const root = await tempRoot();
    const { child, lines, exited } = await holder(root, 's');
    try {
      const h = await new NodeFileStorage(root).openStore('s', { steal: true, timeoutMs: 0 });
      await exited;
      expect(lines).toEqual(['locked', 'lost stolen']);
      await h.manifestCommit(0, manifest(1, 1));
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('MemWal on the file adapter, killed mid-write', () => {
  for (const runtime of ['node', 'deno'] as const) {
    const how = runtime === 'deno' ? 'deno with --allow-read --allow-write' : runtime;
    it(`${how}: every put acknowledged before the writer process is killed is there after a prompt reopen`, async () => {
      const root = await tempRoot();
      let maxAcked = -1;
      await runFixture(runtime, ['test/fixtures/file-store.ts', 'write', root, 's'], (line, child) => {
        const m = /^acked (\d+)$/.exec(line);
        if (!m) return;
        maxAcked = Number(m[1]);
        // Kill mid-write (the next put is in flight) once a flush has written a table file, so
        // acknowledged rows are both in table files and only in the WAL.
        if (maxAcked >= 50 && readdirSync(join(root, 's/tables')).length > 0) child.kill('SIGKILL');
      });
      expect(maxAcked).toBeGreaterThanOrEqual(50);
      let ids: number[] | undefined;
      let openMs = Number.NaN;
      await runFixture(runtime, ['test/fixtures/file-store.ts', 'read', root, 's'], (line) => {
        if (line.startsWith('ids ')) ids = JSON.parse(line.slice(4)) as number[];
        if (line.startsWith('opened ')) openMs = Number(line.slice(7));
      });
      // The dead writer's lock was seen stale at once, not after the 10 s lease.
      expect(openMs).toBeLessThan(5000);
      // A prefix of the puts: every acknowledged one, plus at most the one in flight.
      expect(ids!.length === maxAcked + 1 || ids!.length === maxAcked + 2).toBe(true);
      expect(ids).toEqual(Array.from({ length: ids!.length }, (_, i) => i));
      // The files are the same in both runtimes: this (Node) process reads them too.
      const schema = new Schema([new Field('id', new Int64(), false), new Field('name', new Utf8(), true)]);
      const w = await MemWal.open({
        name: 's',
        schema,
        primaryKey: ['id'],
        storage: new NodeFileStorage(root),
        logger: { warn: () => undefined },
      });
      expect((await w.scan()).numRows).toBe(ids!.length);
      await w.close();
    });
  }
});

describe('FileStorage under Deno', () => {
  it('passes every conformance case in Deno, and ordered queries over a MemWal on it', async () => {
    const lines: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const child = spawn(DENO, ['test', ...DENO_FLAGS, 'test/fixtures/deno-conformance.ts'], {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: DENO_ENV,
      });
      createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
      child.on('error', reject);
      child.on('close', () => resolve());
    });
    // + 1: ordered queries over a MemWal on it (test/fixtures/query-conformance.ts).
    const cases = conformanceCases(() => new NodeFileStorage('unused')).length + 1;
    expect(lines.join('\n')).toMatch(new RegExp(`^ok \\| ${cases} passed \\| 0 failed`, 'm'));
  });
});

describe('runtime independence', () => {
  const source = (file: string): Promise<string> => readFile(new URL(file, import.meta.url), 'utf8');

  it('fs.ts imports no runtime module and touches neither process nor Deno', async () => {
    const fs = await source('./fs.ts');
    expect(fs).not.toMatch(/from '(node:|fs|path|os)/);
    expect(fs).not.toMatch(/^[^*/]*\b(process|Deno)\.\w/m);
  });

  it('the Deno shim and entry point import no node: module', async () => {
    for (const file of ['./fs-deno.ts', '../deno.ts']) expect(await source(file)).not.toMatch(/from 'node:/);
  });
});
