// Starts examples/lance-server/server.ts (in this repository, where tsconfig.json maps
// `memwal/lance` to src/, or in a copy with memwal installed) as a child process for tests
// (vitest, Playwright) and the drain benches, and kills it with SIGKILL. Node only.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SERVER = fileURLToPath(new URL('../examples/lance-server/server.ts', import.meta.url));
const KILL_HOOK = fileURLToPath(new URL('./lance-kill-hook.ts', import.meta.url));
const REPO = fileURLToPath(new URL('..', import.meta.url));

/**
 * Ports for servers these tests start: `MEMWAL_TEST_PORT_BASE` (default 5290) plus a per-file
 * offset, so test files running in parallel never share one.
 */
export function testPort(offset: number): number {
  const port = Number(process.env.MEMWAL_TEST_PORT_BASE ?? 5290) + offset;
  // fetch() refuses these ("bad port"), so a test on one would fail for no reason of its own.
  if (FETCH_BLOCKED_PORTS.has(port)) {
    throw new Error(`test port ${port} (MEMWAL_TEST_PORT_BASE + ${offset}) is one fetch() refuses; choose another MEMWAL_TEST_PORT_BASE`);
  }
  return port;
}

/** The ports fetch() blocks above 1024 (the Fetch standard's "bad port" list). */
const FETCH_BLOCKED_PORTS = new Set([
  1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** Settings of one server process (see examples/lance-server/README.md). */
export interface LanceServerOptions {
  uri: string;
  port: number;
  tokens: Record<string, string | string[]>;
  table?: string;
  /** Key columns; `[]` for append-only. Default `['id']`. */
  primaryKey?: string[];
  maxBodyBytes?: number;
  allowOrigin?: string;
  /** The credential of `GET /stats` (`ADMIN_TOKEN`). */
  adminToken?: string;
  /** `LANCE_ALLOW_COLUMNS`. */
  allowColumns?: string[];
  /** `LANCE_MAX_COLUMNS`. */
  maxColumns?: number;
  /** `LANCE_MAX_ROWS_PER_COMMIT`. */
  maxRowsPerCommit?: number;
  /** `LANCE_OPTIMIZE_EVERY`. */
  optimizeEvery?: number;
  /** More environment variables (the server's budgets: examples/lance-server/README.md). */
  env?: Record<string, string>;
  /** A copy of examples/lance-server with its dependencies installed, to run instead of this repository's. */
  dir?: string;
  /**
   * The server kills itself with SIGKILL `afterMs` after it starts creating the dataset `table`
   * (test/lance-kill-hook.ts): a kill during the creation, wherever the delay lands in it.
   */
  killDuringCreate?: { table: string; afterMs: number };
}

/** A running server: `kill()` sends SIGKILL and resolves once it exited (idempotent). */
export interface LanceServer {
  url: string;
  child: ChildProcess;
  /** Resolves once the process exited (killed or by itself). */
  exited: Promise<void>;
  log(): string;
  kill(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

/** Start the example server and resolve once it listens (rejects with its output if it exits first or takes over 20 s). */
export async function startLanceServer(o: LanceServerOptions): Promise<LanceServer> {
  const hook = o.killDuringCreate ? ['--import', KILL_HOOK] : [];
  const child = spawn(process.execPath, ['--import', 'tsx', ...hook, o.dir ? 'server.ts' : SERVER], {
    cwd: o.dir ?? REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      LANCE_URI: o.uri,
      LANCE_TABLE: o.table ?? 'events',
      LANCE_PRIMARY_KEY: (o.primaryKey ?? ['id']).join(','),
      PORT: String(o.port),
      DRAIN_TOKENS: JSON.stringify(o.tokens),
      ...(o.maxBodyBytes ? { MAX_BODY_BYTES: String(o.maxBodyBytes) } : {}),
      ...(o.allowOrigin ? { ALLOW_ORIGIN: o.allowOrigin } : {}),
      ...(o.adminToken ? { ADMIN_TOKEN: o.adminToken } : {}),
      ...(o.allowColumns ? { LANCE_ALLOW_COLUMNS: o.allowColumns.join(',') } : {}),
      ...(o.maxColumns ? { LANCE_MAX_COLUMNS: String(o.maxColumns) } : {}),
      ...(o.maxRowsPerCommit ? { LANCE_MAX_ROWS_PER_COMMIT: String(o.maxRowsPerCommit) } : {}),
      ...(o.optimizeEvery !== undefined ? { LANCE_OPTIMIZE_EVERY: String(o.optimizeEvery) } : {}),
      ...(o.killDuringCreate
        ? { MEMWAL_TEST_KILL_DURING_CREATE: `${o.killDuringCreate.table}:${o.killDuringCreate.afterMs.toFixed(3)}` }
        : {}),
      RUST_LOG: 'error',
      ...o.env,
    },
  });
  running.add(child);
  let output = '';
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      running.delete(child);
      resolve();
    }),
  );
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`lance-server did not listen within 20 s:\n${output}`)), 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      output += d.toString();
      if (output.includes('lance-server listening on')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`lance-server exited before listening:\n${output}`));
    });
  }).catch(async (e) => {
    await kill();
    throw e;
  });
  return { url: `http://127.0.0.1:${o.port}`, child, exited, log: () => output, kill };
}

/** The server process's peak resident memory in bytes (Linux: VmHWM), or undefined elsewhere. */
export function peakRss(server: LanceServer): number | undefined {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}
