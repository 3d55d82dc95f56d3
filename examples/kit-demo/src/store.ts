// The todo store: one memwal store opened in its own worker, reopened when that worker dies
// (a crashed tab's worker, an out-of-memory kill), and a warning when flushes keep failing.

import { Bool, Field, Float64, Schema, Utf8 } from 'apache-arrow';
import { isMemWalError, openMemWal, type MemWalClient, type WriterState } from 'memwal';

export interface Todo {
  id: string;
  title: string;
  done: boolean;
  createdAt: number;
}

const schema = new Schema([
  new Field('id', new Utf8(), false),
  new Field('title', new Utf8(), false),
  new Field('done', new Bool(), false),
  new Field('createdAt', new Float64(), false),
]);

/** What the page shows about storage. */
export interface StoreEvents {
  state(s: WriterState | 'reopening'): void;
  /** A storage warning from memwal (a failing flush is retried in place), or null once it has recovered. */
  warning(message: string | null): void;
}

/**
 * The app's todos in memwal. Every write is an upsert by id, so a write whose outcome is unknown
 * (the worker died mid-call: `Closed`) is simply written again after the reopen.
 */
export class TodoStore {
  private client: Promise<MemWalClient> | undefined;
  private warned = false;

  constructor(private readonly events: StoreEvents) {}

  private open(): Promise<MemWalClient> {
    this.client ??= openMemWal(
      {
        name: 'todos',
        schema,
        primaryKey: ['id'],
        flushRetry: { baseMs: 100, maxMs: 1000 },
        logger: {
          warn: (message: string) => {
            this.warned = true;
            this.events.warning(message);
          },
        },
      },
      { onStateChange: (s) => this.events.state(s) },
    ).catch((e: unknown) => {
      this.client = undefined;
      throw e;
    });
    return this.client;
  }

  /** Run `fn` on the store; when its worker is gone, reopen once and run it again. */
  private async use<T>(fn: (c: MemWalClient) => Promise<T>): Promise<T> {
    const client = await this.open();
    try {
      return await fn(client);
    } catch (e) {
      if (!isMemWalError(e, 'Closed')) throw e;
      if (this.client !== undefined && (await this.client) === client) this.client = undefined;
      this.events.state('reopening');
      return fn(await this.open());
    }
  }

  async list(): Promise<Todo[]> {
    const table = await this.use((c) => c.scan());
    return table
      .toArray()
      .map((r) => r.toJSON() as unknown as Todo)
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  async save(todo: Todo): Promise<void> {
    await this.use((c) => c.put([todo as unknown as Record<string, unknown>]));
  }

  /** Clears the warning once every frozen memtable has reached a table file; returns unflushed bytes. */
  async checkHealth(): Promise<number> {
    const s = await this.use((c) => c.memtableStats());
    if (this.warned && s.frozenBytes === 0) {
      this.warned = false;
      this.events.warning(null);
    }
    return s.estimatedBytes + s.frozenBytes;
  }
}
