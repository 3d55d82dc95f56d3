// The CRC-32C WebAssembly module (docs/impl.md, "CRC-32C"), written by scripts/gen-crc32c-wasm.ts:
// do not edit. Runtime-agnostic.

/**
 * The module's bytes, base64: memory `m` (2 pages) and `crc(at, length, register) -> register`,
 * slicing-by-16 over tables the caller writes at `k * 1024` (table `k`, k < 16).
 */
export const CRC32C_WASM_BASE64 =
  'AGFzbQEAAAABCAFgA39/fwF/AwIBAAUDAQACBwsCAW0CAANjcmMAAAriAgHfAgEFfyAAIAFBcHFqIQMCQANAIAAgA08NASACIAAoAgBzIQQgACgCBCEFIAAoAgghBiAAKAIMIQcgBEECdEH8B3EoAoB4IARBBnZB/AdxKAKAcHMgBEEOdkH8B3EoAoBocyAEQRZ2QfwHcSgCgGBzIAVBAnRB/AdxKAKAWCAFQQZ2QfwHcSgCgFBzIAVBDnZB/AdxKAKASHMgBUEWdkH8B3EoAoBAc3MgBkECdEH8B3EoAoA4IAZBBnZB/AdxKAKAMHMgBkEOdkH8B3EoAoAocyAGQRZ2QfwHcSgCgCBzcyAHQQJ0QfwHcSgCgBggB0EGdkH8B3EoAoAQcyAHQQ52QfwHcSgCgAhzIAdBFnZB/AdxKAIAc3MhAiAAQRBqIQAMAAsLIAFBD3EgAGohAwJAA0AgACADTw0BIAJBCHYgAiAALQAAc0H/AXFBAnQoAgBzIQIgAEEBaiEADAALCyACCw==';
