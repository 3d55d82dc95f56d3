// The demo's settings: defaults, parsing from URL parameters (so a scenario can be linked and
// scripted; the table is in demo/README.md) and writing them back to the address bar.

import type { DemoStorage } from './protocol.js';
import { SHAPES, type ShapeName } from './rows.js';
import { SCENARIOS, type ScenarioName } from './scenarios.js';

const KiB = 1024;
const MiB = 1024 * KiB;

/** Which injected QuotaExceeded the quota button arms: table writes (flushes), WAL appends, or both. */
export type QuotaTarget = 'tableWrite' | 'walAppend' | 'both';

export interface Settings {
  /** Target write rate; 0 = as fast as `inflight` puts allow. */
  rowsPerSec: number;
  /** Rows per put. */
  batchRows: number;
  /** Most puts in flight at once (each may wait on backpressure). */
  inflight: number;
  /** Row shape (schema) of the load. */
  shape: ShapeName;
  /** Ids of the load come from `[0, keySpace)`, so rows overwrite older ones; 0 = fresh ids, never an overwrite. */
  keySpace: number;
  /** `maxMemtableBytes`. */
  memtableBytes: number;
  /** `maxUnflushedMemtableBytes` (the backpressure budget). */
  budgetBytes: number;
  /** `frozenMemtableGraceMs`. */
  graceMs: number;
  /** `maxPendingCompactionBytes`: the compaction debt at which flushes wait for compaction. */
  debtBytes: number;
  /** `durableWrite`. */
  durable: boolean;
  /** Storage layout: the browser default, or one named. */
  storage: DemoStorage;
  /** Store name; empty = `demo-<shape>` (each shape has its own schema, so its own store). */
  store: string;
  /** Start the load as soon as the store is open. */
  autostart: boolean;
  /** N of the fault buttons (fail the next N operations). */
  faultCount: number;
  /** Operations the QuotaExceeded button fails. */
  quota: QuotaTarget;
  /** How long "Slow compactions" makes each compaction output write wait, ms. */
  slowMs: number;
  /** The named scenario (scenarios.ts) these settings start from; '' = none. */
  scenario: ScenarioName | '';
  /** History the charts show. */
  windowSec: number;
  /** Stats poll interval (the charts redraw at this rate). */
  pollMs: number;
}

export const DEFAULTS: Readonly<Settings> = {
  rowsPerSec: 50_000,
  batchRows: 1000,
  inflight: 8,
  shape: 'event',
  keySpace: 0,
  memtableBytes: 4 * MiB,
  budgetBytes: 16 * MiB,
  graceMs: 1000,
  // memwal's own default (src/engine/options.ts): far above what the default load builds up.
  debtBytes: 1024 * MiB,
  durable: true,
  storage: 'auto',
  store: '',
  autostart: true,
  faultCount: 5,
  quota: 'tableWrite',
  slowMs: 2000,
  scenario: '',
  windowSec: 60,
  pollMs: 200,
};

/** The store name the settings select. */
export const storeName = (s: Settings): string => s.store || `demo-${s.shape}`;

/** Settings that belong to a scenario: the load and the store (the rest is how the visitor watches). */
const SCENARIO_KEYS = [
  'rowsPerSec',
  'batchRows',
  'inflight',
  'shape',
  'keySpace',
  'memtableBytes',
  'budgetBytes',
  'graceMs',
  'debtBytes',
  'durable',
  'slowMs',
] as const satisfies (keyof Settings)[];

/** `s` with the load and store settings of scenario `name` (the defaults under what it sets). */
export function withScenario(s: Settings, name: ScenarioName): Settings {
  const defaults = Object.fromEntries(SCENARIO_KEYS.map((key) => [key, DEFAULTS[key]]));
  return { ...s, ...defaults, ...SCENARIOS[name].settings, scenario: name };
}

/** "4MiB", "512KiB", "1.5M", "65536" → bytes; undefined when unreadable. */
export function parseBytes(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?\s*$/i.exec(text);
  if (!m) return undefined;
  const unit = (m[2] ?? 'b').toLowerCase()[0];
  const scale = unit === 'k' ? KiB : unit === 'm' ? MiB : unit === 'g' ? 1024 * MiB : 1;
  const bytes = Math.round(Number(m[1]) * scale);
  return bytes >= 1 ? bytes : undefined;
}

/** Bytes as the URL writes them: the largest unit that keeps it exact. */
function formatBytes(bytes: number): string {
  if (bytes % MiB === 0) return `${bytes / MiB}MiB`;
  if (bytes % KiB === 0) return `${bytes / KiB}KiB`;
  return String(bytes);
}

const intIn =
  (min: number, max: number) =>
  (text: string): number | undefined => {
    if (!/^\s*\d+\s*$/.test(text)) return undefined;
    const n = Number(text);
    return n >= min && n <= max ? n : undefined;
  };

function parseBool(text: string): boolean | undefined {
  if (/^(1|true|yes|on)$/i.test(text)) return true;
  if (/^(0|false|no|off)$/i.test(text)) return false;
  return undefined;
}

const oneOf =
  <T extends string>(...values: T[]) =>
  (text: string): T | undefined =>
    (values as string[]).includes(text) ? (text as T) : undefined;

/** One URL parameter: its name, the setting it fills, how it is read and written. */
interface Param {
  name: string;
  key: keyof Settings;
  parse(text: string): unknown;
  format?(value: never): string;
}

/** The URL parameters, in the order the README's table lists them. */
const PARAMS: Param[] = [
  { name: 'scenario', key: 'scenario', parse: oneOf(...(Object.keys(SCENARIOS) as ScenarioName[])) },
  { name: 'rate', key: 'rowsPerSec', parse: intIn(0, 10_000_000) },
  { name: 'batch', key: 'batchRows', parse: intIn(1, 65_536) },
  { name: 'inflight', key: 'inflight', parse: intIn(1, 256) },
  { name: 'shape', key: 'shape', parse: oneOf(...(Object.keys(SHAPES) as ShapeName[])) },
  { name: 'keys', key: 'keySpace', parse: intIn(0, 1_000_000_000) },
  { name: 'memtable', key: 'memtableBytes', parse: parseBytes, format: formatBytes },
  { name: 'budget', key: 'budgetBytes', parse: parseBytes, format: formatBytes },
  { name: 'grace', key: 'graceMs', parse: intIn(0, 600_000) },
  { name: 'debt', key: 'debtBytes', parse: parseBytes, format: formatBytes },
  { name: 'durable', key: 'durable', parse: parseBool, format: (v: boolean) => (v ? '1' : '0') },
  { name: 'storage', key: 'storage', parse: oneOf<DemoStorage>('auto', 'opfs', 'indexeddb') },
  { name: 'store', key: 'store', parse: (t) => (/^[A-Za-z0-9._-]{1,200}$/.test(t) ? t : undefined) },
  { name: 'autostart', key: 'autostart', parse: parseBool, format: (v: boolean) => (v ? '1' : '0') },
  { name: 'faults', key: 'faultCount', parse: intIn(1, 1_000_000) },
  { name: 'quota', key: 'quota', parse: oneOf<QuotaTarget>('tableWrite', 'walAppend', 'both') },
  { name: 'slow', key: 'slowMs', parse: intIn(1, 600_000) },
  { name: 'window', key: 'windowSec', parse: intIn(5, 3600) },
  { name: 'poll', key: 'pollMs', parse: intIn(50, 5000) },
];

/**
 * Settings from `search` (location.search) and the parameters that were ignored: the defaults,
 * then the named `scenario`'s settings if there is one, then every other parameter.
 */
export function settingsFromQuery(search: string): { settings: Settings; ignored: string[] } {
  const query = new URLSearchParams(search);
  const scenario = oneOf(...(Object.keys(SCENARIOS) as ScenarioName[]))(query.get('scenario') ?? '');
  const settings: Settings = scenario ? withScenario(DEFAULTS, scenario) : { ...DEFAULTS };
  const ignored: string[] = [];
  for (const [name, text] of query) {
    const param = PARAMS.find((p) => p.name === name);
    const value = param?.parse(text);
    if (!param) ignored.push(`${name} (unknown parameter)`);
    else if (value === undefined) ignored.push(`${name}=${text}`);
    else (settings as unknown as Record<string, unknown>)[param.key] = value;
  }
  return { settings, ignored };
}

/** The query string of the settings that differ from the defaults, or from their scenario's (`?` included, or ''). */
export function settingsToQuery(s: Settings): string {
  const base = s.scenario ? withScenario(DEFAULTS, s.scenario) : DEFAULTS;
  const params = new URLSearchParams();
  for (const p of PARAMS) {
    const value = s[p.key];
    const differs = p.key === 'scenario' ? value !== '' : value !== base[p.key];
    if (differs) params.set(p.name, p.format ? p.format(value as never) : String(value));
  }
  const q = params.toString();
  return q ? `?${q}` : '';
}
