"""The broker process, its server core: start-up (``main``), the process wiring (``app``), the
connection core, sans I/O, with its state table (``connection``) and the socket transport
that drives it (``server``), the API dispatch table (``dispatch``), one handler
module per API family (``handlers``), configuration (``config``, ``configs``, ``dynamic``),
fetch sessions, limits and metrics; with three rooms of their own:

- ``replication``: the partitions this broker hosts, the replica manager, fetchers, producer state;
- ``control``: cluster control: the metadata interface and its stores, controller, elections,
  placement, cluster membership;
- ``security``: listeners and TLS, SASL, the authorizer and ACLs, quotas.

Handlers map requests to calls on those rooms and the coordinators, and results to responses;
they see the broker only as ``handlers.services.Services``. The rooms never import handlers,
the server or the process wiring, and are never handed the broker object: ``app`` gives each
the collaborators it uses. Every module sits in a layer of the import contract
(docs/ARCHITECTURE.md). Nothing here declares a
protocol layout or a file format (``wire`` and ``storage`` own them), and nothing here imports
the operator tools or the HTTP services."""
