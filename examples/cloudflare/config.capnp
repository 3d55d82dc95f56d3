# Runs the example with plain workerd (no wrangler): bundle worker.ts to dist/worker.js (README),
# then `npx workerd serve config.capnp`. Data lives under ./do-disk (one SQLite file per object).
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .memwalWorker),
    (name = "do-disk", disk = (path = "do-disk", writable = true)),
    # Outgoing fetch (the drain to a Lance server): public addresses and this machine's loopback.
    (name = "internet", network = (allow = ["public", "local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "main")],
  # Cap V8's heap at a Durable Object's 128 MB, as Cloudflare caps an isolate: without it, local
  # workerd lets the heap grow lazily past what production allows, and garbage piles up.
  v8Flags = ["--max-heap-size=128"],
);

const memwalWorker :Workerd.Worker = (
  modules = [(name = "worker.js", esModule = embed "dist/worker.js")],
  compatibilityDate = "2025-09-01",
  durableObjectNamespaces = [(className = "MemWalObject", uniqueKey = "memwal-example", enableSql = true)],
  durableObjectStorage = (localDisk = "do-disk"),
  bindings = [
    (name = "MEMWAL", durableObjectNamespace = "MemWalObject"),
    # The drain's admin credential and the endpoints a drain may point at (README.md), from the
    # environment: MEMWAL_ADMIN_TOKEN=… MEMWAL_DRAIN_ALLOWLIST=http://127.0.0.1:8791/drain/ npm start
    (name = "MEMWAL_ADMIN_TOKEN", fromEnvironment = "MEMWAL_ADMIN_TOKEN"),
    (name = "MEMWAL_DRAIN_ALLOWLIST", fromEnvironment = "MEMWAL_DRAIN_ALLOWLIST"),
    # Who may use each store's routes (README.md): MEMWAL_STORE_TOKENS='{"<token>": "<store>"}'
    (name = "MEMWAL_STORE_TOKENS", fromEnvironment = "MEMWAL_STORE_TOKENS"),
  ],
);
