// The request-body bytes a drain handler holds, shared fairly between bearer tokens
// (docs/scale-out.md "Trust model and budgets"). A POST reserves its body's bytes before the body
// is read. Each token's share is the server's budget over the tokens holding bytes (the asking
// one counted): a token holding bodies may not take more than its share, and when the server is
// full, a token asking within its share takes back bodies still arriving from tokens above
// theirs (the most above first, its newest body first) — so two tokens (or two hundred stalled
// uploads under them) cannot fill the budget and keep every other token out. Node only.

/** One body's reserved bytes. */
export interface BodyHold {
  /** The body has wholly arrived: from now on it is never taken back. */
  arrived(): void;
  /** Gives the bytes back (again: nothing). */
  release(): void;
}

interface Held {
  token: string;
  bytes: number;
  /** Still arriving: may be taken back. */
  arriving: boolean;
  released: boolean;
  /** Told when the hold is taken back (its bytes already given back): stop reading, answer 503. */
  takenBack: () => void;
}

/** Body bytes held per token and in all, under a server budget and a per-token cap, shared fairly. */
export class FairBodyBytes {
  private total = 0;
  /** Each token's holds, oldest first; a token holding nothing is absent. */
  private readonly byToken = new Map<string, Held[]>();

  constructor(
    /** Bytes the server holds at most, every token together. */
    readonly limit: number,
    /** Bytes one token holds at most, however few others hold any. */
    readonly perToken: number,
  ) {}

  /** Bytes `token` holds. */
  heldBy(token: string): number {
    return (this.byToken.get(token) ?? []).reduce((n, h) => n + h.bytes, 0);
  }

  /** `token`'s share now: the server's budget over the tokens holding bytes, `token` counted. */
  share(token: string): number {
    return Math.floor(this.limit / (this.byToken.size + (this.byToken.has(token) ? 0 : 1)));
  }

  /**
   * Reserves `bytes` for a body of `token`, or says why not (answer 503). A token holding nothing
   * may take any body the server has room for (its first body is never held back by its share);
   * one holding bodies, only up to its share. When the server is full, a body within the asking
   * token's share takes back arriving bodies of tokens above their share until it fits:
   * `takenBack` of each is called (its bytes already given back).
   */
  take(token: string, bytes: number, takenBack: () => void): BodyHold | string {
    const held = this.heldBy(token);
    if (held + bytes > this.perToken) return 'this credential has as many request bodies in flight as it may; retry later';
    const share = this.share(token);
    if (held > 0 && held + bytes > share) {
      return 'this credential holds its share of the server’s body budget while other credentials hold theirs; retry later';
    }
    if (this.total + bytes > this.limit && held + bytes <= share) this.takeBack(token, bytes);
    if (this.total + bytes > this.limit) return 'the server holds as many request bodies as it may; retry later';
    const hold: Held = { token, bytes, arriving: true, released: false, takenBack };
    const list = this.byToken.get(token);
    if (list) list.push(hold);
    else this.byToken.set(token, [hold]);
    this.total += bytes;
    return {
      arrived: () => {
        hold.arriving = false;
      },
      release: () => this.release(hold),
    };
  }

  /** Takes back arriving bodies of tokens above their share (recomputed after each) until `bytes` fit. */
  private takeBack(asking: string, bytes: number): void {
    while (this.total + bytes > this.limit) {
      const share = this.share(asking);
      let victim: Held | undefined;
      let most = 0;
      for (const [token, holds] of this.byToken) {
        if (token === asking) continue;
        const over = holds.reduce((n, h) => n + h.bytes, 0) - share;
        let newest: Held | undefined;
        for (const h of holds) if (h.arriving) newest = h;
        if (over > most && newest) {
          most = over;
          victim = newest;
        }
      }
      if (!victim) return;
      this.release(victim);
      victim.takenBack();
    }
  }

  private release(hold: Held): void {
    if (hold.released) return;
    hold.released = true;
    this.total -= hold.bytes;
    const list = this.byToken.get(hold.token)!;
    list.splice(list.indexOf(hold), 1);
    if (list.length === 0) this.byToken.delete(hold.token);
  }
}
