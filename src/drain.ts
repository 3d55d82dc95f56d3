// memwal/drain: the drain wire (docs/scale-out.md §4), for whoever writes a drain endpoint in any
// runtime: the request headers and body a drain() sends, parsed and checked, and the encoder for
// tests and other senders. Apps that drain a store import drain() from `memwal`. Re-exports only.

export {
  encodeDrainBatch,
  drainRequestHeaders,
  parseDrainHeaders,
  checkDrainBody,
  DRAIN_WIRE_VERSION,
  DRAIN_CONTENT_TYPE,
  DRAIN_HEADERS,
  POSITION_COLUMN,
  STORE_ID_PATTERN,
  type DrainRequestMeta,
  type EncodedDrainBatch,
} from './drain/wire.js';
