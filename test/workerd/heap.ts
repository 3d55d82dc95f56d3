// Samples the memory of a workerd isolate from a test: runs test/examples/heap-sampler.ts (the
// inspector's Runtime.getHeapUsage every few ms) as a child process and collects its samples,
// and reads a process's peak RSS. Node only.

import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { HeapSample } from '../examples/heap-sampler.js';

export type { HeapSample };

const SAMPLER = fileURLToPath(new URL('../examples/heap-sampler.ts', import.meta.url));
const TSX = import.meta.resolve('tsx');

/** What V8 has allocated for the isolate: its heap, the embedder's heap and ArrayBuffer backing stores (bytes). */
export const allocatedBytes = (s: HeapSample): number => s.totalSize + s.embedderHeapUsedSize + s.backingStorageSize;

/** A running sampler: `samples` grows until `stop()`. */
export interface IsolateSampler {
  samples: HeapSample[];
  stop(): void;
}

/**
 * Starts sampling the isolate behind `inspectorUrl` every `intervalMs`; resolves once the first
 * sample arrived, rejects if none arrives within 15 s.
 */
export async function sampleIsolateMemory(inspectorUrl: string, intervalMs = 25): Promise<IsolateSampler> {
  const child = spawn(
    process.execPath,
    ['--experimental-websocket', '--no-warnings', '--import', TSX, SAMPLER, inspectorUrl, String(intervalMs)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const stop = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', stop);
  const samples: HeapSample[] = [];
  const first = new Promise<void>((resolve) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      samples.push(JSON.parse(line) as HeapSample);
      resolve();
    });
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      first,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no heap sample from ${inspectorUrl} within 15 s`)), 15_000);
      }),
    ]);
  } catch (e) {
    stop();
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return { samples, stop };
}

/** Peak resident set size of process `pid` so far (VmHWM), in bytes; NaN where /proc does not tell. */
export async function peakRssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN) * 1024;
}
