"""What a connector, converter or transform author writes against, shaped as Apache Kafka
Connect's public API (``org.apache.kafka.connect.{data,connector,source,sink,storage,
transforms}``) in Python spelling: the data model (``schema``), records (``records``),
connectors and tasks (``connector``), settings declared and checked (``config``), the plug-in
protocols (``plugins``: Converter, HeaderConverter, Transformation, Predicate) and errors
(``errors``). It imports nothing of josefk."""
from josefk.connect.api.config import ConfigDef, ConfigException, ConfigValue, Importance
from josefk.connect.api.config import Type as ConfigType
from josefk.connect.api.connector import (Connector, ConnectorContext, ConnectorTransactionBoundaries,
                                          ExactlyOnceSupport, SinkConnector, SinkTask,
                                          SinkTaskContext, SourceConnector, SourceTask,
                                          SourceTaskContext, Task, TopicPartition)
from josefk.connect.api.plugins import Converter, HeaderConverter, Predicate, Transformation
from josefk.connect.api.errors import ConnectException, DataException, RetriableException
from josefk.connect.api.records import (ConnectRecord, Header, Headers, RecordMetadata, SinkRecord,
                                        SourceRecord, SourceRecordBatch)
from josefk.connect.api.schema import (Date, Decimal, Field, Schema, SchemaAndValue, SchemaBuilder,
                                       Struct, Time, Timestamp, Type)

__all__ = ["ConfigDef", "ConfigException", "ConfigValue", "Importance", "ConfigType",
           "Connector", "ConnectorContext", "ConnectorTransactionBoundaries",
           "ExactlyOnceSupport", "SinkConnector", "SinkTask", "SinkTaskContext",
           "SourceConnector", "SourceTask", "SourceTaskContext", "Task", "TopicPartition",
           "ConnectException", "DataException", "RetriableException", "ConnectRecord", "Header",
           "Headers", "RecordMetadata", "SinkRecord", "SourceRecord",
           "SourceRecordBatch", "Date", "Decimal",
           "Field", "Schema", "SchemaAndValue", "SchemaBuilder", "Struct", "Time", "Timestamp",
           "Type", "Converter", "HeaderConverter", "Predicate", "Transformation"]
