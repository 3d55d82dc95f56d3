# workerd config for the conformance worker (test/workerd.test.ts). The test bundles
# conformance-worker.ts to conformance.js next to a copy of this file, and overrides the socket
# (--socket-addr http=127.0.0.1:0) and the disk (--directory-path do-disk=...).
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .conformanceWorker),
    (name = "do-disk", disk = (path = "do-disk", writable = true)),
  ],
  sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "main")],
);

const conformanceWorker :Workerd.Worker = (
  modules = [(name = "conformance.js", esModule = embed "conformance.js")],
  compatibilityDate = "2025-09-01",
  durableObjectNamespaces = [(className = "ConformanceObject", uniqueKey = "memwal-conformance", enableSql = true)],
  durableObjectStorage = (localDisk = "do-disk"),
  bindings = [(name = "CONFORMANCE", durableObjectNamespace = "ConformanceObject")],
);
