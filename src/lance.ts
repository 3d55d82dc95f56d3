// memwal/lance: the Node entry point for draining memwal stores into a Lance dataset (docs/scale-out.md,
// docs/scale-out.md). Needs @lancedb/lancedb 0.31.0 installed; nothing here is reachable from
// `memwal`, whose `drain()` runs in every runtime.

export {
  LanceSink,
  STORE_COLUMN,
  POSITIONS_TABLE_SUFFIX,
  DEFAULT_OPTIMIZE_EVERY,
  lanceArrow,
  type LanceSinkOptions,
  type LanceApplyResult,
  type LanceSinkStats,
} from './lance/sink.js';
export {
  createDrainRequestHandler,
  tokenAuthorizer,
  DEFAULT_MAX_DRAIN_BODY_BYTES,
  type DrainAuthorization,
  type DrainAuthorizer,
  type DrainRequestHandlerOptions,
} from './lance/http.js';
