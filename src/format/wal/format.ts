// On-disk constants of the WAL frame, shared by the encoder and the scanner (src/format/wal/codec.ts).
// The format is specified in docs/format.md.
//
// Written to disk: never renumber. A change here makes existing stores unreadable.

/**
 * Frame layout (little-endian):
 *
 * ```
 * offset size field
 * 0      4    magic     FRAME_MAGIC (bytes 'M','W','A','L')
 * 4      4    length    payload bytes, u32, 1..FRAME_MAX_PAYLOAD_BYTES
 * 8      4    crc       CRC-32C of bytes [12, 28 + length): epoch, position, payload
 * 12     8    epoch     u64, a JS safe integer
 * 20     8    position  u64, 1-based WAL position, a JS safe integer
 * 28     len  payload   an Arrow IPC stream
 * ```
 *
 * A zero magic word followed only by zeros is the end of the log.
 */
export const FRAME_MAGIC = 0x4c41574d;

/** Offset of the u32 payload length. */
export const FRAME_LENGTH_OFFSET = 4;
/** Offset of the u32 CRC-32C. */
export const FRAME_CRC_OFFSET = 8;
/** Offset of the u64 writer epoch; the CRC covers the frame from here to its end. */
export const FRAME_EPOCH_OFFSET = 12;
/** Offset of the u64 WAL position. */
export const FRAME_POSITION_OFFSET = 20;
/** Header size in bytes; the payload starts here. */
export const FRAME_HEADER_BYTES = 28;

/** Largest payload a frame may carry, in bytes (1 GiB - 1). A larger length field is corrupt. */
export const FRAME_MAX_PAYLOAD_BYTES = 0x3fffffff;

/**
 * The internal Bool column, last in the internal schema of a store with a primary key, that
 * marks a row as a delete (WAL payloads and table files alike).
 */
export const TOMBSTONE_COLUMN = '_tombstone';
