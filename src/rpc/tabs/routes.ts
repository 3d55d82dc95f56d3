// How a call of each host method travels under `tabs: 'share'`: one entry per method of the host's
// API (rpc/host.ts makeHostApi), so a method added to the host or renamed there fails the type
// check here until it is routed. Used by the tabs (tabs.ts) and the leader's server (server.ts).

import type { HostApi } from '../protocol.js';

/**
 * - `call`: forwarded to the leader's worker (or run by this tab's own while it leads);
 * - `open`: the first open, as leader or by joining the leader;
 * - `iterator`: starts a worker-side iterator, whose later calls go to the same term;
 * - `page`: a call on such an iterator (its first argument is the iterator's id);
 * - `leave`: closes (aborts) the store as leader, lets go of this tab's iterators as follower;
 * - `host`: the host's own (handshake, serving tabs, standby, destroy, detach): a tab never calls it.
 */
export type TabRoute = 'call' | 'open' | 'iterator' | 'page' | 'leave' | 'host';

export const TAB_ROUTES = {
  hello: 'host',
  open: 'open',
  serveTabs: 'host',
  prepare: 'host',
  destroy: 'host',
  put: 'call',
  delete: 'call',
  get: 'call',
  getMany: 'call',
  query: 'call',
  count: 'call',
  nearest: 'call',
  search: 'call',
  indexStats: 'call',
  scan: 'call',
  watch: 'call',
  unwatch: 'call',
  scanBatches: 'iterator',
  tail: 'iterator',
  nextBatches: 'page',
  nextEntries: 'page',
  release: 'page',
  abortSignal: 'call',
  sync: 'call',
  forceSealActive: 'call',
  waitForFlushDrain: 'call',
  stats: 'call',
  memtableStats: 'call',
  backpressureStats: 'call',
  compactionStats: 'call',
  readStats: 'call',
  compact: 'call',
  walStats: 'call',
  writeStats: 'call',
  storageStats: 'call',
  metrics: 'call',
  markConsumed: 'call',
  schemaInfo: 'call',
  close: 'leave',
  abort: 'leave',
  detach: 'host',
} as const satisfies Record<keyof HostApi, TabRoute>;

export type HostMethod = keyof HostApi;
/** The host methods a tab may call (every one but the host's own). */
export type TabMethod = { [M in HostMethod]: (typeof TAB_ROUTES)[M] extends 'host' ? never : M }[HostMethod];

/** Whether `method`, as another tab sent it (untyped), is one a tab may call. */
export function isTabMethod(method: unknown): method is TabMethod {
  return typeof method === 'string' && Object.hasOwn(TAB_ROUTES, method) && TAB_ROUTES[method as HostMethod] !== 'host';
}
