// Preloaded (`node --import`) into the example Lance server by test/lance-server-process.ts when
// a test asks for a kill during the creation of a dataset: MEMWAL_TEST_KILL_DURING_CREATE is
// `<table>:<ms>`. LanceDB's `connect` is wrapped so that the first `createTable` or
// `createEmptyTable` of that table arms a SIGKILL of this process `<ms>` after the call starts;
// the creation itself goes on, so the kill lands before, inside or just after it. Node only.

import { createRequire } from 'node:module';
import type * as LanceModule from '@lancedb/lancedb';

const [table, ms] = (process.env.MEMWAL_TEST_KILL_DURING_CREATE ?? '').split(':');
/** The LanceDB module instance the sink loads (CommonJS: one instance per resolved path). */
const lancedb = createRequire(import.meta.url)('@lancedb/lancedb') as typeof LanceModule;
const connect = lancedb.connect;
let armed = false;

(lancedb as { connect: unknown }).connect = async (...args: Parameters<typeof connect>) => {
  const db = (await connect(...args)) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
  for (const method of ['createTable', 'createEmptyTable']) {
    const original = db[method]!.bind(db);
    db[method] = (...a: unknown[]) => {
      const name = typeof a[0] === 'string' ? a[0] : (a[0] as { name?: string }).name;
      if (name === table && !armed) {
        armed = true;
        process.stderr.write(`lance-kill-hook: SIGKILL ${ms} ms into the creation of ${table}\n`);
        setTimeout(() => process.kill(process.pid, 'SIGKILL'), Number(ms));
      }
      return original(...a);
    };
  }
  return db as unknown as Awaited<ReturnType<typeof connect>>;
};
