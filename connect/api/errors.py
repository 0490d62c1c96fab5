"""Connect's exceptions (``org.apache.kafka.connect.errors``)."""


class ConnectException(Exception):
    """A connector, task, converter or transform failed (Connect's ConnectException)."""


class RetriableException(ConnectException):
    """A failure worth retrying: the worker calls the same operation again (a source task's
    ``poll``, a sink task's ``put`` with the same records), as Connect does."""


class DataException(ConnectException):
    """Data that does not fit its schema, or cannot be converted (Connect's DataException)."""


class SchemaProjectorException(DataException):
    """A value cannot be projected onto another schema."""
