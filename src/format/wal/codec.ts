// WAL frame encoder and segment scanner: turns entries into framed bytes and bytes back into
// frames, classifying what follows the last valid frame (clean / torn / corrupt). Runtime-agnostic.

import { MemWalError } from '../../util/errors.js';
import { crc32c, crc32cCombine } from '../../util/crc32c.js';
import {
  FRAME_CRC_OFFSET,
  FRAME_EPOCH_OFFSET,
  FRAME_HEADER_BYTES,
  FRAME_LENGTH_OFFSET,
  FRAME_MAGIC,
  FRAME_MAX_PAYLOAD_BYTES,
  FRAME_POSITION_OFFSET,
} from './format.js';

/** 2^32, to split and join u64 fields. */
const U32 = 0x1_0000_0000;

/**
 * Frame one WAL entry: header (magic, length, CRC-32C, epoch, position) + a copy of `payload`.
 * Returns a new buffer of `FRAME_HEADER_BYTES + payload.length` bytes: {@link encodeFrameHeader}
 * followed by `payload`.
 *
 * Throws as {@link encodeFrameHeader}. Runs in every runtime.
 */
export function encodeFrame(epoch: number, position: number, payload: Uint8Array): Uint8Array {
  return joinFrame(encodeFrameHeader(epoch, position, payload), payload);
}

/** A frame's header and its payload as one new buffer. */
export function joinFrame(header: Uint8Array, payload: Uint8Array): Uint8Array {
  const frame = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  frame.set(header);
  frame.set(payload, FRAME_HEADER_BYTES);
  return frame;
}

/**
 * The `FRAME_HEADER_BYTES` that go before `payload` in its frame (the CRC-32C covers the header's
 * epoch and position and the payload), without copying `payload`: an adapter that can write
 * two parts at their offsets appends header and payload as they are.
 *
 * Throws `MemWalError('InvalidArgument')` when `epoch` is not a non-negative safe integer,
 * `position` not a positive safe integer, or `payload` is empty or longer than
 * `FRAME_MAX_PAYLOAD_BYTES`. Runs in every runtime.
 */
export function encodeFrameHeader(epoch: number, position: number, payload: Uint8Array): Uint8Array {
  const header = headerFields(epoch, position, payload.length);
  new DataView(header.buffer).setUint32(FRAME_CRC_OFFSET, crc32c(payload, crc32c(header.subarray(FRAME_EPOCH_OFFSET))), true);
  return header;
}

/**
 * The same header as {@link encodeFrameHeader} from the payload's length and its CRC-32C
 * (`payloadCrc` = `crc32c(payload)`, computed where the payload was encoded): the frame's CRC is
 * the header fields' CRC combined with `payloadCrc` (`crc32cCombine`), no pass over the payload.
 * The header is only as right as `payloadCrc`: a wrong one makes a frame that replay rejects.
 *
 * Throws as {@link encodeFrameHeader} (`payloadLength` for the payload's length), and
 * `MemWalError('InvalidArgument')` when `payloadCrc` is not an unsigned 32-bit integer.
 * Runs in every runtime.
 */
export function encodeFrameHeaderFromCrc(epoch: number, position: number, payloadLength: number, payloadCrc: number): Uint8Array {
  if (!Number.isInteger(payloadCrc) || payloadCrc < 0 || payloadCrc > 0xffff_ffff) {
    throw new MemWalError('InvalidArgument', `WAL payload CRC-32C must be an unsigned 32-bit integer, got ${payloadCrc}`);
  }
  const header = headerFields(epoch, position, payloadLength);
  const crc = crc32cCombine(crc32c(header.subarray(FRAME_EPOCH_OFFSET)), payloadCrc, payloadLength);
  new DataView(header.buffer).setUint32(FRAME_CRC_OFFSET, crc, true);
  return header;
}

/** A frame header with every field but the CRC set; throws as {@link encodeFrameHeader}. */
function headerFields(epoch: number, position: number, payloadLength: number): Uint8Array {
  if (!Number.isSafeInteger(epoch) || epoch < 0) {
    throw new MemWalError('InvalidArgument', `WAL frame epoch must be a non-negative safe integer, got ${epoch}`);
  }
  if (!Number.isSafeInteger(position) || position < 1) {
    throw new MemWalError('InvalidArgument', `WAL frame position must be a positive safe integer, got ${position}`);
  }
  if (!Number.isSafeInteger(payloadLength) || payloadLength < 1 || payloadLength > FRAME_MAX_PAYLOAD_BYTES) {
    throw new MemWalError('InvalidArgument', `WAL frame payload must be 1..${FRAME_MAX_PAYLOAD_BYTES} bytes, got ${payloadLength}`);
  }
  const header = new Uint8Array(FRAME_HEADER_BYTES);
  const view = new DataView(header.buffer);
  view.setUint32(0, FRAME_MAGIC, true);
  view.setUint32(FRAME_LENGTH_OFFSET, payloadLength, true);
  view.setUint32(FRAME_EPOCH_OFFSET, epoch % U32, true);
  view.setUint32(FRAME_EPOCH_OFFSET + 4, Math.floor(epoch / U32), true);
  view.setUint32(FRAME_POSITION_OFFSET, position % U32, true);
  view.setUint32(FRAME_POSITION_OFFSET + 4, Math.floor(position / U32), true);
  return header;
}

/** One valid frame found by `scanSegment`. */
export interface DecodedFrame {
  epoch: number;
  /** 1-based WAL position. */
  position: number;
  /** Where the frame starts, in bytes from the segment start (includes `baseOffset`). */
  offset: number;
  /** Header + payload bytes. */
  frameBytes: number;
  /** The Arrow IPC stream: a view into the scanned bytes, not a copy. */
  payload: Uint8Array;
}

/**
 * What follows the last valid frame: `clean` (nothing, or only zeros), `torn` (an unfinished
 * append: safe to truncate when the segment may have one), `corrupt` (anything else).
 */
export type TailStatus = 'clean' | 'torn' | 'corrupt';

/** The result of `scanSegment`. */
export interface SegmentScan {
  /** The valid frames from the start, in file order. */
  frames: DecodedFrame[];
  status: TailStatus;
  /** Offset just past the last valid frame (includes `baseOffset`): where a repair truncates to. */
  validEnd: number;
  /** Why the tail is torn or corrupt, with its offset. */
  reason?: string;
}

/**
 * Decode the frames of a segment (or of its part from `baseOffset` on, given as `bytes`) and
 * classify what follows the last valid one; the rules are in docs/format.md, "Reading a
 * segment". In short, at the first offset that is not a valid frame: only zeros (or nothing)
 * → `clean`; an incomplete header, a frame running past the end, or a bad header or checksum
 * with only zeros after that frame's extent → `torn`; anything else → `corrupt`. Frames
 * are checked one by one (magic, length, CRC-32C, safe-integer epoch and position); the
 * position sequence is the caller's to check. Never throws, for any input. Runs in every runtime.
 */
export function scanSegment(bytes: Uint8Array, baseOffset = 0): SegmentScan {
  const frames: DecodedFrame[] = [];
  const len = bytes.length;
  let o = 0;
  const end = (status: TailStatus, reason?: string): SegmentScan => {
    const scan: SegmentScan = { frames, status, validEnd: baseOffset + o };
    if (reason !== undefined) scan.reason = `${reason} at offset ${baseOffset + o}`;
    return scan;
  };
  // An invalid frame with nothing but zeros after its extent is an interrupted append, possibly
  // into a zero-filled extension of the file (a crash after the size grew, before the data landed).
  const tornIfOnlyZerosFrom = (from: number, why: string): SegmentScan =>
    isZero(bytes, from, len) ? end('torn', `${why}, only zeros follow`) : end('corrupt', why);
  for (;;) {
    if (isZero(bytes, o, len)) return end('clean');
    if (len - o < FRAME_HEADER_BYTES) return end('torn', `incomplete frame header (${len - o} bytes)`);
    const headerEnd = o + FRAME_HEADER_BYTES;
    const magic = readU32(bytes, o);
    if (magic !== FRAME_MAGIC) return tornIfOnlyZerosFrom(headerEnd, `bad frame magic 0x${magic.toString(16).padStart(8, '0')}`);
    const length = readU32(bytes, o + FRAME_LENGTH_OFFSET);
    if (length === 0 || length > FRAME_MAX_PAYLOAD_BYTES) return tornIfOnlyZerosFrom(headerEnd, `bad frame length ${length}`);
    const frameEnd = headerEnd + length;
    if (frameEnd > len) return end('torn', `frame of ${length} payload bytes runs past the end`);
    if (crc32c(bytes.subarray(o + FRAME_EPOCH_OFFSET, frameEnd)) !== readU32(bytes, o + FRAME_CRC_OFFSET)) {
      return tornIfOnlyZerosFrom(frameEnd, 'checksum mismatch');
    }
    const epoch = readU64(bytes, o + FRAME_EPOCH_OFFSET);
    const position = readU64(bytes, o + FRAME_POSITION_OFFSET);
    if (epoch === undefined) return end('corrupt', 'frame epoch is not a safe integer');
    if (position === undefined || position < 1) return end('corrupt', 'frame position is not a positive safe integer');
    frames.push({
      epoch,
      position,
      offset: baseOffset + o,
      frameBytes: frameEnd - o,
      payload: bytes.subarray(headerEnd, frameEnd),
    });
    o = frameEnd;
  }
}

/** Are bytes [from, to) all zero? (True for an empty range.) */
function isZero(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] !== 0) return false;
  return true;
}

function readU32(bytes: Uint8Array, at: number): number {
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>> 0;
}

/** A little-endian u64 as a number, or `undefined` when it exceeds `Number.MAX_SAFE_INTEGER`. */
function readU64(bytes: Uint8Array, at: number): number | undefined {
  const hi = readU32(bytes, at + 4);
  return hi > 0x1fffff ? undefined : hi * U32 + readU32(bytes, at);
}
