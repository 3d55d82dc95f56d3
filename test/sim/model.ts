// The model the simulation checks reads against. Every write is an operation with a state:
// pending (issued, not settled), acked (durable: its put resolved durable, a sync or close covered
// it, or a later writer read it back), visible (resolved but not yet durable: durableWrite false),
// doubt (outcome unknown: rejected with IOError, Fenced, Closed..., or visible when its writer
// died), failed (certainly not written) and dropped (known not applied: a later writer read past it).
//
// Reads are checked per key (keyed stores) or per operation (append-only, WAL-only): a read may
// return the newest acked-or-visible version, or any version written after it whose operation is
// pending or in doubt. Operations on one key may overlap in time (seeds with `overlap`): then
// either order is allowed, until a read shows which one won (`won`). A read that overlaps writes
// is checked against the window from its issue to its settlement (sequence numbers).

import type { ColumnSpec, KeyType, KeyValue, Value } from './values.js';
import { compareKeyValues, keyId, keyOfRow, sameValue, show } from './values.js';

export type OpState = 'pending' | 'acked' | 'visible' | 'doubt' | 'failed' | 'dropped';

export interface WriteOp {
  id: number;
  session: number;
  kind: 'put' | 'delete';
  rows: ModelRow[];
  state: OpState;
  issuedSeq: number;
  settledSeq: number;
  /** When it became acked or visible (its settlement, or the read that found it applied). */
  knownSeq: number;
  /** The WAL position, once known to be durable there. */
  position?: number;
}

export interface ModelRow {
  op: WriteOp;
  key?: KeyValue;
  keyId?: string;
  /** The `v` column: unique per row of a put; undefined for a delete. */
  tag?: string;
  /** Values by column incarnation, as written. */
  vals: Map<number, Value>;
  /** A row its own put overwrote (a later row of the put has its key): in the WAL, never read back. */
  shadowed?: true;
}

/** The outcome a read may show for one key: a row, or the key absent (a delete, or never written). */
export interface Candidate {
  /** The row written (a put's, or a delete's key-only row); undefined: the key was never written. */
  row: ModelRow | undefined;
  /** The operation behind it (undefined: the key was never written). */
  op: WriteOp | undefined;
  absent: boolean;
}

export class Model {
  seq = 0;
  private nextOp = 1;
  readonly ops: WriteOp[] = [];
  /** Keyed stores: every row written per key, in issue order. */
  readonly byKey = new Map<string, ModelRow[]>();
  readonly byTag = new Map<string, ModelRow>();
  /** Rows a read showed another row (the value) winning over, both applied (overlapping writes: the order is now known). */
  private readonly beaten = new Map<ModelRow, ModelRow>();

  constructor(readonly keyType: KeyType | undefined) {}

  tick(): number {
    return ++this.seq;
  }

  issue(session: number, kind: 'put' | 'delete', rows: Omit<ModelRow, 'op'>[]): WriteOp {
    const op: WriteOp = {
      id: this.nextOp++,
      session,
      kind,
      rows: [],
      state: 'pending',
      issuedSeq: this.tick(),
      settledSeq: Infinity,
      knownSeq: Infinity,
    };
    for (const r of rows) {
      const row: ModelRow = { ...r, op };
      if (row.tag !== undefined) this.byTag.set(row.tag, row);
      if (row.shadowed) continue;
      op.rows.push(row);
      if (row.keyId !== undefined) {
        const list = this.byKey.get(row.keyId) ?? [];
        list.push(row);
        this.byKey.set(row.keyId, list);
      }
    }
    this.ops.push(op);
    return op;
  }

  /** The next operation id (tags are built from it). */
  peekOpId(): number {
    return this.nextOp;
  }

  /**
   * A write settled: `acked` (durable), `visible`, `doubt` or `failed`. An op read back as applied
   * stays acked. Returns false when the outcome contradicts what a later writer read (an op it
   * found not applied now acknowledged as durable).
   */
  settle(op: WriteOp, outcome: 'acked' | 'visible' | 'doubt' | 'failed', position?: number): boolean {
    op.settledSeq = this.tick();
    if (op.state === 'dropped') return outcome !== 'acked';
    if (op.state === 'acked') return true;
    op.state = outcome;
    if (outcome === 'acked' || outcome === 'visible') op.knownSeq = op.settledSeq;
    if (outcome === 'acked' && position !== undefined) op.position = position;
    return true;
  }

  /** Every visible operation of `session` settled before `seq` is now durable (a sync or close covered it). */
  durableUpTo(session: number, seq: number): void {
    for (const op of this.ops) {
      if (op.session === session && op.state === 'visible' && op.settledSeq < seq) op.state = 'acked';
    }
  }

  /** A writer is gone without a clean close: what it held only in memory is in doubt. */
  sessionEnded(session: number): void {
    for (const op of this.ops) if (op.session === session && op.state === 'visible') op.state = 'doubt';
  }

  /** A store reset (onSchemaMismatch 'reset'): every row is gone. */
  reset(): void {
    for (const op of this.ops) if (op.state !== 'failed') op.state = 'dropped';
    this.byKey.clear();
  }

  /** Ops that are still pending. */
  pendingOps(): WriteOp[] {
    return this.ops.filter((o) => o.state === 'pending');
  }

  // ---------------------------------------------------------------- keyed reads

  /**
   * What a read of `id` issued at `from` and settled at `to` may return: the newest row whose op
   * was acked or visible before `from` (or the key's absence before any), and every later row
   * whose op was issued before `to` and is pending, in doubt, acked or visible.
   */
  candidates(id: string, from: number, to: number): Candidate[] {
    const list = this.byKey.get(id) ?? [];
    // Rows known applied before the read. Writes of one key may overlap in time (several puts in
    // flight): their order is the engine's choice (SPEC §5: a put's order is its admission, which a
    // backpressure wait may move), so a row is out only when one of these certainly came after it
    // (issued once it had settled) or a read already showed one of these winning over it.
    const known = list.filter((r) => (r.op.state === 'acked' || r.op.state === 'visible') && r.op.knownSeq < from);
    const beaten = (r: ModelRow) => {
      const w = this.beaten.get(r)?.op.state;
      return w === 'acked' || w === 'visible' || known.some((k) => k !== r && r.op.settledSeq < k.op.issuedSeq);
    };
    const out: Candidate[] = [];
    if (known.length === 0) out.push({ row: undefined, op: undefined, absent: true });
    for (const r of list) {
      const op = r.op;
      if (op.issuedSeq > to) break;
      if (op.state === 'failed' || op.state === 'dropped' || beaten(r)) continue;
      out.push(asCandidate(r));
    }
    return out;
  }

  /**
   * A read showed `got` (a row known applied before it) as the newest of its key: every other row
   * known applied then came before it in the engine's order, whatever their overlap, for as long
   * as `got` stays (acked, or visible while its writer lives: a crash may lose it).
   */
  won(id: string, got: Candidate, from: number): void {
    if (!got.row || got.op!.knownSeq >= from) return;
    for (const r of this.byKey.get(id) ?? []) {
      if (
        r !== got.row &&
        (r.op.state === 'acked' || r.op.state === 'visible') &&
        r.op.knownSeq < from &&
        r.op.issuedSeq < got.op!.settledSeq
      ) {
        this.beaten.set(r, got.row);
      }
    }
  }

  /** Keys that may be present (for scans): every key with a candidate row. */
  keyIds(): string[] {
    return [...this.byKey.keys()];
  }

  keyOf(id: string): KeyValue | undefined {
    return this.byKey.get(id)?.[0]?.key;
  }

  /**
   * A writer of session `session` (opened after every earlier writer's fate was sealed by its
   * claim) read `got` for key `id`. When what it shows was written by an earlier session (or is
   * known durable), it is durable (`applied`: only when `got` alone explains the read), and
   * whatever earlier sessions wrote after it was never applied.
   */
  observe(id: string, got: Candidate, session: number, applied = true): void {
    const op = got.op;
    if (op && !(op.session < session || op.state === 'acked')) return;
    const list = this.byKey.get(id);
    if (!list) return;
    // An operation writes every key of it or none: mark it applied only when it alone explains the read.
    if (op && applied && op.state !== 'acked') {
      op.state = 'acked';
      op.knownSeq = this.tick();
    }
    for (let i = got.row ? list.indexOf(got.row) + 1 : 0; i < list.length; i++) {
      const later = list[i]!.op;
      // (One that overlapped it may have been applied first, then overwritten by it.)
      if (op && later.issuedSeq < op.settledSeq) continue;
      if (later.session < session && (later.state === 'doubt' || later.state === 'pending')) later.state = 'dropped';
    }
  }

  /** Append-only and WAL-only: a writer of `session` read back `op` (present) or found it absent. */
  observeOp(op: WriteOp, present: boolean, session: number): void {
    if (op.session >= session) return;
    if (present && op.state !== 'acked') {
      op.state = 'acked';
      op.knownSeq = this.tick();
    } else if (!present && (op.state === 'doubt' || op.state === 'pending')) op.state = 'dropped';
  }

  /** The row as `get`/`scan` must show it in a schema of `columns`. */
  expectedRow(row: ModelRow, columns: readonly ColumnSpec[], keyValues: KeyValue | undefined): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (this.keyType && keyValues) Object.assign(out, keyRecord(this.keyType, keyValues));
    out.v = row.tag;
    for (const c of columns) out[c.name] = row.vals.has(c.inc) ? row.vals.get(c.inc)! : null;
    return out;
  }
}

function asCandidate(row: ModelRow): Candidate {
  return { row, op: row.op, absent: row.op.kind === 'delete' };
}

function keyRecord(t: KeyType, k: KeyValue): Record<string, unknown> {
  const names = t === 'composite' ? ['k1', 'k2'] : ['id'];
  const out: Record<string, unknown> = {};
  names.forEach((n, i) => {
    out[n] = k[i];
  });
  return out;
}

/** Does `got` (a row read back) equal `want` on every column of `want`? Returns the first difference. */
export function diffRow(got: Record<string, unknown>, want: Record<string, unknown>, columns?: readonly string[]): string | undefined {
  const names = columns ?? Object.keys(want);
  for (const n of names) {
    if (!sameValue(got[n], want[n])) return `column ${n}: got ${show(got[n])}, expected ${show(want[n])}`;
  }
  if (!columns) for (const n of Object.keys(got)) if (!(n in want)) return `unexpected column ${n}`;
  return undefined;
}

/** Key helpers re-exported for the checks. */
export { compareKeyValues, keyId, keyOfRow };
