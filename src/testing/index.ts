// memwal/testing: fault injection and the adapter conformance cases, for memwal's own tests and
// for anyone writing a storage backend. Re-exports only.

export { FaultInjectingStorage } from './fault.js';
export type { FaultOp } from './fault-controller.js';
export { conformanceCases, testManifest } from './conformance.js';
export type { ConformanceCase } from './conformance.js';
export { MemoryStorage } from '../storage/memory.js';
export { rng } from './rng.js';
export { quotaExceededError } from '../util/errors.js';
