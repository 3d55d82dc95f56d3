// A module worker that never calls hostMemWal(): openMemWal({ workerUrl }) must fail fast on it.

self.addEventListener('message', () => undefined);
