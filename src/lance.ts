// memwal/lance: the Node entry point for draining memwal stores into a Lance dataset
// (docs/scale-out.md). Needs @lancedb/lancedb 0.31.0 installed; nothing here is reachable from
// `memwal`, whose `drain()` runs in every runtime.

export {
  LanceSink,
  STORE_COLUMN,
  DEFAULT_OPTIMIZE_EVERY,
  DEFAULT_MAX_COLUMNS,
  DEFAULT_MAX_ROWS_PER_COMMIT,
  DEFAULT_MAX_COMMIT_BYTES,
  DEFAULT_MAX_PENDING_PER_STORE,
  lanceArrow,
  type LanceSinkOptions,
  type LanceApplyResult,
  type LanceSinkStats,
} from './lance/sink.js';
export { POSITIONS_TABLE_SUFFIX } from './lance/positions.js';
export {
  createDrainRequestHandler,
  tokenAuthorizer,
  bearerToken,
  sameToken,
  closeUnread,
  LINGER_MS,
  DEFAULT_MAX_DRAIN_BODY_BYTES,
  DEFAULT_MAX_REQUESTS_PER_TOKEN,
  DEFAULT_MAX_REQUESTS_IN_FLIGHT,
  DEFAULT_MAX_BYTES_IN_FLIGHT,
  DEFAULT_MAX_BYTES_PER_TOKEN,
  DEFAULT_BODY_TIMEOUT_MS,
  DEFAULT_REFUSAL_COOLDOWN_MS,
  type DrainAuthorization,
  type DrainAuthorizer,
  type DrainRequestHandlerOptions,
} from './lance/http.js';
export { MAX_NESTING_DEPTH } from './lance/arrow-check.js';
