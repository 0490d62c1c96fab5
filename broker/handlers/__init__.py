"""One module per API family: each ``handle_<api>(broker, ctx, request)`` (``broker`` typed as
``services.Services``, all a handler may use of the broker; ``request`` as the API's class, e.g.
``ProduceRequest``) maps a decoded request to calls on the replica manager, the metadata store,
the coordinators and the security room, and their results to a response object (never bytes,
never sockets). A handler returns the response (or an awaitable of it), or `NO_RESPONSE` for a
request that gets none; what the request does to its connection (a throttle, a close after the
response, a SASL step) it returns with the response as a `broker.security.listeners.Reply`,
never calling the connection.

Must not import the connection core, the server, the dispatch table or the process wiring
(``broker.app``), nor know which metadata store (local or ZooKeeper) is behind
``broker.metadata``."""

NO_RESPONSE = object()  # a handler's answer for requests that get none (Produce with acks=0)
