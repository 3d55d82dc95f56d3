// Table file formats 2 and 3 (docs/format.md §8): constants written to disk. Never renumber or
// rename. A table file is a standard Arrow IPC file; its index (block key bounds, Bloom filter,
// generation range) rides in the footer schema's custom metadata, so any Arrow reader still reads
// the rows and memwal reaches the index with one ranged read of the footer. Format 3 adds index
// sections between the end-of-stream marker and the footer, listed in the footer's metadata.

/** `format` of a table entry written before format 2: one record batch per put, unsorted. */
export const TABLE_FORMAT_V1 = 1;
/** Sorted by key (keyed stores), bounded blocks, block index and Bloom filter in the footer. */
export const TABLE_FORMAT_V2 = 2;
/** Format 2 plus index sections (one per declared index, `sections.ts`); what this build writes. */
export const TABLE_FORMAT_V3 = 3;

/** Footer schema metadata keys (values are strings). */
export const META_FORMAT = 'memwal.table.format';
/** `"{minGeneration}-{maxGeneration}"`: the memtable generations whose rows the file holds. */
export const META_GENERATIONS = 'memwal.table.generations';
/** base64 of the block index (grammar in docs/format.md §8). */
export const META_BLOCKS = 'memwal.table.blocks';
/** base64 of the Bloom filter of the file's keys (keyed stores only). */
export const META_BLOOM = 'memwal.table.bloom';
/** base64 of the section directory (format 3; grammar in docs/format.md §8, `sections.ts`). */
export const META_SECTIONS = 'memwal.table.sections';

/**
 * A block of an append-only store is cut at this many estimated bytes (about 64 KiB: scans read
 * few, large blocks). A writer's choice, not part of the format: readers take each block's
 * offset and length from the file.
 */
export const BLOCK_TARGET_BYTES = 64 * 1024;
/**
 * A block of a keyed store is cut at this many estimated bytes (about 16 KiB): a point read that
 * misses the block cache reads, checksums and searches one block, so a smaller block is a cheaper
 * miss; scans of keyed stores measured no slower (bench/results/HISTORY.md, "Keyed blocks of 16 KiB").
 */
export const KEYED_BLOCK_TARGET_BYTES = 16 * 1024;

/** The block size a store's table files are cut at: {@link KEYED_BLOCK_TARGET_BYTES} when keyed. */
export const blockTargetBytes = (keyed: boolean): number => (keyed ? KEYED_BLOCK_TARGET_BYTES : BLOCK_TARGET_BYTES);
/** ... or at this many rows, whichever comes first. */
export const BLOCK_MAX_ROWS = 4096;
/** Bloom filter bits per key: about 1 % false positives with 7 hash functions. */
export const BLOOM_BITS_PER_KEY = 10;
/** Hash functions of the Bloom filter (round(BLOOM_BITS_PER_KEY × ln 2)). */
export const BLOOM_HASHES = 7;
/** The Arrow IPC file trailer: footer length (int32 LE) then `ARROW1`. */
export const ARROW_FILE_TRAILER_BYTES = 10;
