// The conformance page's OPFS table writer thread (what memwal's I/O worker starts from its own
// script). Dedicated module worker.

import { serveTableWriter, type TableWriterScope } from '../../src/storage/opfs-table-writer.js';

serveTableWriter(self as unknown as TableWriterScope);
