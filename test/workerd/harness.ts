// Starts and stops workerd for tests: bundles a worker next to a copy of its capnp config, runs
// `workerd serve` on 127.0.0.1 with a port the kernel picks (reported on --control-fd), and
// kills it with SIGKILL. Node only.

import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { copyFile, mkdir, mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { bundle } from './build.js';

/** The workerd binary from the `workerd` npm package (its main module exports the path). */
const WORKERD_BIN: string = (createRequire(import.meta.url)('workerd') as { default: string }).default;

/** How long workerd may take to bind its socket. */
const START_TIMEOUT_MS = 15_000;

/** A built worker: a directory with the capnp config and the bundle it embeds. */
export interface BuiltWorker {
  dir: string;
  config: string;
}

/**
 * Bundles `entry` to `{dir}/{bundleName}` and copies `configFile` (which embeds `bundleName`)
 * to `dir`, a new temporary directory. Rejects with esbuild's errors.
 */
export async function buildWorker(entry: string, configFile: string, bundleName: string): Promise<BuiltWorker> {
  const dir = await mkdtemp(join(tmpdir(), 'memwal-workerd-'));
  const config = join(dir, 'config.capnp');
  await Promise.all([bundle(entry, 'workerd', join(dir, bundleName)), copyFile(configFile, config)]);
  return { dir, config };
}

/** A running workerd. `kill()` sends SIGKILL and resolves once it has exited; idempotent. */
export interface Workerd {
  url: string;
  pid: number;
  /** The inspector's WebSocket URL of service `main` (Chrome DevTools Protocol), when started with `inspector`. */
  inspectorUrl?: string;
  /** Everything workerd wrote to stdout and stderr so far. */
  log(): string;
  kill(): Promise<void>;
}

/** Every workerd started and not yet killed, so a crashed test run still stops them. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts `workerd serve` on `worker.config` with socket `http` on 127.0.0.1 (a free port) and
 * the disk service `do-disk` at `diskDir` (created); with `inspector`, also the inspector on a
 * free port; `env` adds environment variables (for `fromEnvironment` bindings). Resolves once they listen; rejects with workerd's output if it exits or does not
 * listen within 15 s.
 */
export async function startWorkerd(
  worker: BuiltWorker,
  diskDir: string,
  options: { inspector?: boolean; env?: Record<string, string> } = {},
): Promise<Workerd> {
  await mkdir(diskDir, { recursive: true });
  const args = ['serve', worker.config, '--socket-addr', 'http=127.0.0.1:0', '--directory-path', `do-disk=${diskDir}`, '--control-fd', '3'];
  if (options.inspector) args.push('--inspector-addr', '127.0.0.1:0');
  const child = spawn(WORKERD_BIN, args, {
    cwd: worker.dir,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => (running.delete(child), resolve())));
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };

  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    let inspectorPort: number | undefined;
    const port = await new Promise<number>((resolve, reject) => {
      let httpPort: number | undefined;
      const ready = (): void => {
        if (httpPort !== undefined && (!options.inspector || inspectorPort !== undefined)) resolve(httpPort);
      };
      let control = '';
      (child.stdio[3] as Readable).on('data', (d: Buffer) => {
        const lines = (control + d.toString()).split('\n');
        control = lines.pop()!; // an incomplete last line waits for the rest
        for (const line of lines) {
          let msg: { event?: string; socket?: string; port?: number };
          try {
            msg = JSON.parse(line) as typeof msg;
          } catch {
            return reject(new Error(`workerd wrote "${line}" on its control descriptor`));
          }
          if (msg.event === 'listen' && msg.socket === 'http' && typeof msg.port === 'number') httpPort = msg.port;
          if (msg.event === 'listen-inspector' && typeof msg.port === 'number') inspectorPort = msg.port;
          ready();
        }
      });
      void exited.then(() => reject(new Error(`workerd exited before listening:\n${output}`)));
      timer = setTimeout(() => reject(new Error(`workerd did not listen within ${START_TIMEOUT_MS} ms:\n${output}`)), START_TIMEOUT_MS);
    });
    const inspectorUrl = inspectorPort === undefined ? undefined : `ws://127.0.0.1:${inspectorPort}/main`;
    return { url: `http://127.0.0.1:${port}`, pid: child.pid!, inspectorUrl, log: () => output, kill };
  } catch (e) {
    await kill();
    throw e;
  } finally {
    clearTimeout(timer);
  }
}
