// Index sections of a table file (format 3, docs/format.md §8 "Index sections"): the framework,
// whatever the kind. A section is bytes of some kind (`ordered` today: ordered-section.ts) for one
// named index, with the index's definition (`spec`, the kind's own string) it was built for. The
// table build feeds every builder the blocks it writes, in file order, so a file and its sections
// can never disagree; the bytes sit between the end-of-stream marker and the footer, listed by a
// directory in the footer's metadata. A reader uses a section only when its kind, name and spec
// are the index's now. Pure; any runtime.

import type { RecordBatch } from 'apache-arrow';
import type { Key } from '../../data/keys.js';
import { MemWalError } from '../../util/errors.js';

/** Which index a section is for: its kind, its name, and its definition as the kind writes it. */
export interface SectionId {
  kind: string;
  name: string;
  /** The index's definition when built (a reader compares it with the definition now). */
  spec: string;
}

/**
 * Builds one section during a table build. `addBlock` is called for each block of the file in
 * order (`firstRow`: the block's first row's position in the file; `keys`: its rows' primary
 * keys, keyed stores), then `finish` once for the section's bytes.
 */
export interface SectionBuilder extends SectionId {
  addBlock(block: RecordBatch, firstRow: number, keys: ArrayLike<Key> | undefined): void;
  finish(): Uint8Array;
}

/** A section as the directory lists it: offset from the start of the section area, length, CRC-32C. */
export interface SectionInfo extends SectionId {
  offset: number;
  length: number;
  crc: number;
}

/** The section directory: the area's length and CRC-32C (padding included) and its sections. */
export interface SectionDirectory {
  areaLength: number;
  areaCrc: number;
  sections: SectionInfo[];
}

/** The section area is padded to a multiple of this, so the footer after it stays 8-byte aligned. */
export const SECTION_AREA_ALIGN = 8;

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * The directory as stored (little-endian): areaLength:u32 areaCrc:u32 count:u32, then per section
 * kindLen:u16 kind nameLen:u16 name specLen:u32 spec (UTF-8) offset:u32 length:u32 crc:u32.
 */
export function encodeSectionDirectory(dir: SectionDirectory): Uint8Array {
  const parts = dir.sections.map((s) => ({ s, kind: utf8.encode(s.kind), name: utf8.encode(s.name), spec: utf8.encode(s.spec) }));
  let size = 12;
  for (const p of parts) size += 2 + p.kind.length + 2 + p.name.length + 4 + p.spec.length + 12;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  const u16 = (v: number): void => {
    view.setUint16(at, v, true);
    at += 2;
  };
  const u32 = (v: number): void => {
    view.setUint32(at, v >>> 0, true);
    at += 4;
  };
  const bytes = (b: Uint8Array): void => {
    out.set(b, at);
    at += b.length;
  };
  u32(dir.areaLength);
  u32(dir.areaCrc);
  u32(parts.length);
  for (const p of parts) {
    u16(p.kind.length);
    bytes(p.kind);
    u16(p.name.length);
    bytes(p.name);
    u32(p.spec.length);
    bytes(p.spec);
    u32(p.s.offset);
    u32(p.s.length);
    u32(p.s.crc);
  }
  return out;
}

/** Inverse of {@link encodeSectionDirectory}; `Corruption` naming `file` when it is cut short or a section lies outside the area. */
export function decodeSectionDirectory(bytes: Uint8Array, file: string): SectionDirectory {
  const corrupt = (why: string): MemWalError => new MemWalError('Corruption', `table file ${file}: section directory ${why}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const need = (n: number): void => {
    if (at + n > bytes.length) throw corrupt('is cut short');
  };
  const u16 = (): number => {
    need(2);
    at += 2;
    return view.getUint16(at - 2, true);
  };
  const u32 = (): number => {
    need(4);
    at += 4;
    return view.getUint32(at - 4, true);
  };
  const text = (n: number): string => {
    need(n);
    at += n;
    try {
      return utf8Decoder.decode(bytes.subarray(at - n, at));
    } catch {
      throw corrupt('holds a name that is not UTF-8');
    }
  };
  const areaLength = u32();
  const areaCrc = u32();
  const count = u32();
  const sections: SectionInfo[] = [];
  for (let i = 0; i < count; i++) {
    const kind = text(u16());
    const name = text(u16());
    const spec = text(u32());
    const s = { kind, name, spec, offset: u32(), length: u32(), crc: u32() };
    if (s.offset + s.length > areaLength) throw corrupt(`places section ${i} (${kind} ${name}) outside its ${areaLength}-byte area`);
    sections.push(s);
  }
  if (at !== bytes.length) throw corrupt(`has ${bytes.length - at} bytes past its last section`);
  return { areaLength, areaCrc, sections };
}

/** Section `id` of `sections` when its kind, name and spec are `id`'s, else undefined (absent, or built for another definition). */
export function findSection<S extends SectionId>(sections: readonly S[], id: SectionId): S | undefined {
  return sections.find((s) => s.kind === id.kind && s.name === id.name && s.spec === id.spec);
}
