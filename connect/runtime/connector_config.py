"""A connector's settings as Kafka Connect declares them (``ConnectorConfig``,
``SourceConnectorConfig``, ``SinkConnectorConfig``): names, defaults, groups, display names
and messages; their enrichment with each transformation's and predicate's settings
(``transforms.<alias>.*``, ``predicates.<alias>.*``) and the source's topic creation groups;
and ``validate``, the body of ``PUT /connector-plugins/{plugin}/config/validate``
(Connect's ConfigInfos), built as Kafka's AbstractHerder.validateConnectorConfig builds it."""
from __future__ import annotations

import re

from josefk.connect.api.config import (NO_DEFAULT, ConfigDef, ConfigException, ConfigValue,
                                       Importance, LambdaValidator, Range, ValidString, Width,
                                       display_value)
from josefk.connect.api.config import Type as T
from josefk.connect.api.connector import (ConnectorTransactionBoundaries, ExactlyOnceSupport,
                                          SinkConnector, SourceConnector)
from josefk.connect.runtime.herder import BadRequest
from josefk.connect.runtime.plugins import Plugins, config_key_info
from josefk.connect.transforms import chain

COMMON_GROUP = "Common"
TRANSFORMS_GROUP = "Transforms"
PREDICATES_GROUP = "Predicates"
ERROR_GROUP = "Error Handling"
TOPIC_CREATION_GROUP = "Topic Creation"
EXACTLY_ONCE_SUPPORT_GROUP = "Exactly Once Support"
OFFSETS_TOPIC_GROUP = "offsets.topic"
DEFAULT_TOPIC_CREATION_GROUP = "default"
CLIENT_PREFIXES = {"producer": "producer.override.", "consumer": "consumer.override.",
                   "admin": "admin.override."}


def _name_check(name, value):
    """Kafka's NonEmptyStringWithoutControlChars: null passes (the missing setting's own
    error says it)."""
    if value is None:
        return
    if not str(value).strip():
        raise ConfigException(name, value, "String may not be empty")
    bad = [c for c in str(value) if ord(c) < 0x20 or ord(c) == 0x7f]
    if bad:
        raise ConfigException(name, value, "String may not contain control sequences but had "
                              "the following ASCII chars: "
                              + ", ".join(str(ord(c)) for c in bad))


def _regex_check(name, value):
    try:
        if isinstance(value, list):
            for item in value:
                re.compile(item)
        elif value:
            re.compile(value)
    except re.error as e:
        raise ConfigException(name, value, f"Invalid regex: {e}") from None


def _unique_aliases(kind: str):
    def check(name, value):
        if len(set(value or [])) != len(value or []):
            raise ConfigException(name, value, "Duplicate alias provided.")
    return LambdaValidator(check, f"unique {kind} aliases")


def _partitions_or_rf(name, value):
    if value is None or (value < 1 and value != -1):
        raise ConfigException(name, value, "Value must be -1 (use the broker's default) or "
                                           "at least 1")


def connector_def() -> ConfigDef:
    """ConnectorConfig's settings, common to sources and sinks."""
    d, order = ConfigDef(), iter(range(1, 100))
    d.define("name", T.STRING, NO_DEFAULT, LambdaValidator(_name_check,
             "non-empty string without ISO control characters"), Importance.HIGH,
             "Globally unique name to use for this connector.", COMMON_GROUP, next(order),
             Width.MEDIUM, "Connector name")
    d.define("connector.class", T.STRING, NO_DEFAULT, None, Importance.HIGH,
             "Name or alias of the class for this connector: the full class name "
             "(org.apache.kafka.connect.file.FileStreamSinkConnector), its simple name "
             "(FileStreamSinkConnector or FileStreamSink), or a Python path.", COMMON_GROUP,
             next(order), Width.LONG, "Connector class")
    d.define("tasks.max", T.INT, 1, Range.at_least(1), Importance.HIGH,
             "Maximum number of tasks to use for this connector.", COMMON_GROUP, next(order),
             Width.SHORT, "Tasks max")
    d.define("tasks.max.enforce", T.BOOLEAN, True, None, Importance.LOW,
             "(Deprecated) Whether to enforce that the tasks.max property is respected by the "
             "connector: a connector that generates more task configs fails.", COMMON_GROUP,
             next(order), Width.SHORT, "Enforce tasks max")
    for side in ("key", "value"):
        d.define(f"{side}.converter", T.CLASS, None, None, Importance.LOW,
                 f"Converter class used to convert between Kafka Connect format and the "
                 f"serialized form that is written to Kafka. This controls the format of the "
                 f"{side}s in messages written to or read from Kafka; the worker's "
                 f"{side}.converter when not set.", COMMON_GROUP, next(order), Width.SHORT,
                 f"{side.capitalize()} converter class")
    d.define("header.converter", T.CLASS, None, None, Importance.LOW,
             "HeaderConverter class used to convert between Kafka Connect format and the "
             "serialized form that is written to Kafka; the worker's header.converter when "
             "not set.", COMMON_GROUP, next(order), Width.SHORT, "Header converter class")
    d.define("config.action.reload", T.STRING, "restart", ValidString.in_("none", "restart"),
             Importance.LOW, "The action that Connect should take on the connector when "
             "changes in external configuration providers result in a change in the "
             "connector's configuration properties: none or restart.", COMMON_GROUP,
             next(order), Width.MEDIUM, "Reload Action")
    d.define("transforms", T.LIST, "", _unique_aliases("transformation"), Importance.LOW,
             "Aliases for the transformations to be applied to records.", TRANSFORMS_GROUP,
             next(order), Width.LONG, "Transforms")
    d.define("predicates", T.LIST, "", _unique_aliases("predicate"), Importance.LOW,
             "Aliases for the predicates used by transformations.", PREDICATES_GROUP,
             next(order), Width.LONG, "Predicates")
    errors = iter(range(1, 100))
    d.define("errors.retry.timeout", T.LONG, 0, None, Importance.MEDIUM,
             "The maximum duration in milliseconds that a failed operation will be "
             "reattempted. The default is 0, which means no retries will be attempted. Use "
             "-1 for infinite retries.", ERROR_GROUP, next(errors), Width.MEDIUM,
             "Retry Timeout for Errors")
    d.define("errors.retry.delay.max.ms", T.LONG, 60000, None, Importance.MEDIUM,
             "The maximum duration in milliseconds between consecutive retry attempts.",
             ERROR_GROUP, next(errors), Width.MEDIUM, "Maximum Delay Between Retries for Errors")
    d.define("errors.tolerance", T.STRING, "none", ValidString.in_("none", "all"),
             Importance.MEDIUM, "Behavior for tolerating errors during connector operation. "
             "'none' is the default value and signals that any error will result in an "
             "immediate connector task failure; 'all' changes the behavior to skip over "
             "problematic records.", ERROR_GROUP, next(errors), Width.SHORT, "Error Tolerance")
    d.define("errors.log.enable", T.BOOLEAN, False, None, Importance.MEDIUM,
             "If true, write each error and the details of the failed operation and "
             "problematic record to the Connect application log.", ERROR_GROUP, next(errors),
             Width.SHORT, "Log Errors")
    d.define("errors.log.include.messages", T.BOOLEAN, False, None, Importance.MEDIUM,
             "Whether to include in the log the Connect record that resulted in a failure.",
             ERROR_GROUP, next(errors), Width.SHORT, "Log Error Details")
    return d


def sink_def() -> ConfigDef:
    d = connector_def()
    d.define("topics", T.LIST, "", None, Importance.HIGH,
             "List of topics to consume, separated by commas", COMMON_GROUP, 4, Width.LONG,
             "Topics")
    d.define("topics.regex", T.STRING, "", LambdaValidator(_regex_check, "valid regex"),
             Importance.HIGH, "Regular expression giving topics to consume. Only one of "
             "topics or topics.regex should be specified.", COMMON_GROUP, 4, Width.LONG,
             "Topics regex")
    d.define("errors.deadletterqueue.topic.name", T.STRING, "", None, Importance.MEDIUM,
             "The name of the topic to be used as the dead letter queue (DLQ) for messages "
             "that result in an error when processed by this sink connector, or its "
             "transformations or converters. The topic name is blank by default, which means "
             "that no messages are to be recorded in the DLQ.", ERROR_GROUP, 6, Width.MEDIUM,
             "Dead Letter Queue Topic Name")
    d.define("errors.deadletterqueue.topic.replication.factor", T.SHORT, 3, None,
             Importance.MEDIUM, "Replication factor used to create the dead letter queue "
             "topic when it doesn't already exist.", ERROR_GROUP, 7, Width.MEDIUM,
             "Dead Letter Queue Topic Replication Factor")
    d.define("errors.deadletterqueue.context.headers.enable", T.BOOLEAN, False, None,
             Importance.MEDIUM, "If true, add headers containing error context to the "
             "messages written to the dead letter queue.", ERROR_GROUP, 8, Width.MEDIUM,
             "Enable Error Context Headers")
    return d


def source_def() -> ConfigDef:
    d = connector_def()
    d.define("topic.creation.groups", T.LIST, "", _unique_aliases("topic creation group"),
             Importance.LOW, "Groups of configurations for topics created by source "
             "connectors", TOPIC_CREATION_GROUP, 1, Width.LONG, "Topic Creation Groups")
    d.define("exactly.once.support", T.STRING, "requested",
             ValidString.in_ignore_case("requested", "required"), Importance.MEDIUM,
             "Permitted values are requested, required. If set to \"required\", forces a "
             "preflight check for the connector to ensure that it can provide exactly-once "
             "semantics with the given configuration.", EXACTLY_ONCE_SUPPORT_GROUP, 1,
             Width.SHORT, "Exactly once support level")
    d.define("transaction.boundary", T.STRING, "poll",
             ValidString.in_ignore_case("poll", "interval", "connector"), Importance.MEDIUM,
             "Permitted values are: poll, interval, connector. If set to 'poll', a new "
             "producer transaction will be started and committed for every batch of records "
             "that each task from this connector provides to Connect. If set to 'connector', "
             "relies on connector-defined transaction boundaries. If set to 'interval', "
             "commits transactions only after a user-defined time interval has passed.",
             EXACTLY_ONCE_SUPPORT_GROUP, 2, Width.SHORT, "Transaction Boundary")
    d.define("transaction.boundary.interval.ms", T.LONG, None, None, Importance.LOW,
             "If 'transaction.boundary' is set to 'interval', determines the interval for "
             "producer transaction commits by connector tasks. If unset, defaults to the "
             "value of the worker-level 'offset.flush.interval.ms' property.",
             EXACTLY_ONCE_SUPPORT_GROUP, 3, Width.SHORT, "Transaction boundary interval")
    d.define("offsets.storage.topic", T.STRING, None, None, Importance.LOW,
             "The name of a separate offsets topic to use for this connector. If empty or "
             "not specified, the worker's global offsets topic name will be used.",
             OFFSETS_TOPIC_GROUP, 1, Width.LONG, "Offsets topic")
    return d


def _class_validator(plugins: Plugins, kind: str):
    def check(name, value):
        if value is not None and plugins.find(kind, value) is None:
            raise ConfigException(name, value, f"Class {value} could not be found.")
    return LambdaValidator(check)


def _topic_creation_group(d: ConfigDef, group: str, default: bool):
    prefix, title = f"topic.creation.{group}.", f"Topic Creation: {group}"
    order = iter(range(1, 10))
    rule = LambdaValidator(_partitions_or_rf, "-1 or [1,...]")
    if not default:
        for which in ("include", "exclude"):
            d.define(prefix + which, T.LIST, "", LambdaValidator(_regex_check, "valid regex"),
                     Importance.LOW, f"A list of regular expressions used to "
                     f"{which} topics of this group, matched by topic name.", title,
                     next(order), Width.LONG,
                     f"{'Inclusion' if which == 'include' else 'Exclusion'} Topic Pattern "
                     f"for {group}")
    needed = NO_DEFAULT if default else -1
    d.define(prefix + "replication.factor", T.SHORT, needed, rule, Importance.LOW,
             "The replication factor for new topics created for this connector (-1: the "
             "broker's default).", title, next(order), Width.LONG,
             f"Replication Factor for Topics in {group}")
    d.define(prefix + "partitions", T.INT, needed, rule, Importance.LOW,
             "The number of partitions new topics created for this connector (-1: the "
             "broker's default).", title, next(order), Width.LONG,
             f"Partition Count for Topics in {group}")


def uses_topic_creation(props: dict) -> bool:
    return any(k.startswith("topic.creation.") for k in props)


def enriched_def(plugins: Plugins, props: dict, sink: bool,
                 topic_creation_enabled: bool = True) -> ConfigDef:
    """The connector's settings with its topic creation groups (sources) and each named
    transformation's and predicate's own settings under their prefixes (Kafka's
    ``ConnectorConfig.enrich``, lenient as validation is: the transforms' ``enrich``)."""
    d = sink_def() if sink else source_def()
    if not sink and topic_creation_enabled and uses_topic_creation(props):
        groups = [g.strip() for g in props.get("topic.creation.groups", "").split(",")
                  if g.strip() and g.strip() != DEFAULT_TOPIC_CREATION_GROUP]
        _topic_creation_group(d, DEFAULT_TOPIC_CREATION_GROUP, True)
        for group in dict.fromkeys(groups):
            _topic_creation_group(d, group, False)
    return chain.enrich(props, d, False, finder(plugins))


def finder(plugins: Plugins):
    """The transforms' class finder over the worker's plug-ins (``Transformation`` /
    ``Predicate`` kinds as the chain names them)."""
    return lambda kind, name: plugins.find(_CHAIN_KINDS[kind], name)


_CHAIN_KINDS = {"Transformation": "transformation", "Predicate": "predicate"}


def _add_error(values: dict[str, ConfigValue], name: str, value, message: str) -> None:
    values.setdefault(name, ConfigValue(name, value)).errors.append(message)


def sink_checks(props: dict, values: dict[str, ConfigValue]) -> None:
    """SinkConnectorConfig.validate: one of topics or topics.regex, and not the DLQ."""
    topics = (props.get("topics") or "").strip()
    regex = (props.get("topics.regex") or "").strip()
    dlq = (props.get("errors.deadletterqueue.topic.name") or "").strip()
    if topics and regex:
        message = "topics and topics.regex are mutually exclusive options, but both are set."
        _add_error(values, "topics", topics, message)
        _add_error(values, "topics.regex", regex, message)
    if not topics and not regex:
        message = "Must configure one of topics or topics.regex"
        _add_error(values, "topics", topics, message)
        _add_error(values, "topics.regex", regex, message)
    if dlq:
        listed = [t.strip() for t in topics.split(",") if t.strip()]
        if dlq in listed:
            _add_error(values, "topics", topics,
                       f"The DLQ topic '{dlq}' may not be included in the list of topics "
                       f"('topics=[{', '.join(listed)}]') consumed by the connector")
        if regex:
            try:
                matched = re.fullmatch(regex, dlq) is not None
            except re.error:
                matched = False
            if matched:
                _add_error(values, "topics.regex", regex,
                           f"The DLQ topic '{dlq}' may not be included in the regex matching "
                           f"the topics ('topics.regex={regex}') consumed by the connector")


def source_eos_checks(connector: SourceConnector, props: dict,
                      values: dict[str, ConfigValue]) -> None:
    """The preflight checks of KIP-618 on a worker with exactly-once source support."""
    eos = values.get("exactly.once.support")
    if eos and not eos.errors and str(props.get("exactly.once.support", "")).lower() == "required":
        try:
            support = connector.exactly_once_support(props)
        except Exception as e:
            eos.errors.append(f"An unexpected error occurred during validation: {e}")
        else:
            if support is None:
                eos.errors.append(
                    "The connector does not implement the API required for preflight "
                    "validation of exactly-once source support. Please consult the "
                    "documentation for the connector to determine whether it supports "
                    "exactly-once semantics, and then consider reconfiguring the connector "
                    "to use the value \"requested\" for this property (which will disable "
                    "this preflight check and allow the connector to be created).")
            elif support is not ExactlyOnceSupport.SUPPORTED:
                eos.errors.append("The connector does not support exactly-once semantics "
                                  "with the provided configuration.")
    boundary = values.get("transaction.boundary")
    if (boundary and not boundary.errors
            and str(props.get("transaction.boundary", "")).lower() == "connector"):
        try:
            can = connector.can_define_transaction_boundaries(props)
        except Exception as e:
            boundary.errors.append(f"An unexpected error occurred during validation: {e}")
        else:
            if can is not ConnectorTransactionBoundaries.SUPPORTED:
                boundary.errors.append(
                    "The connector does not support connector-defined transaction boundaries "
                    "with the given configuration. Please reconfigure it to use a different "
                    "transaction boundary definition.")


def _value_info(value: ConfigValue, key=None) -> dict:
    return {"name": value.name, "value": display_value(value.value),
            "recommended_values": [display_value(v) for v in value.recommended_values],
            "errors": list(value.errors), "visible": value.visible}


def generate_result(name: str, keys: dict, values: list[ConfigValue],
                    groups: list[str]) -> dict:
    """Connect's ConfigInfos: values without a declared key first, then every key."""
    by_name = {v.name: v for v in values}
    configs, errors = [], 0
    for value in values:
        if value.name not in keys:
            configs.append({"definition": None, "value": _value_info(value)})
            errors += len(value.errors)
    for key_name, key in keys.items():
        value = by_name.get(key_name)
        configs.append({"definition": config_key_info(key),
                        "value": _value_info(value) if value else None})
        errors += len(value.errors) if value else 0
    return {"name": name, "error_count": errors, "groups": groups, "configs": configs}


def _merge(name: str, *infos: dict | None) -> dict:
    merged = {"name": name, "error_count": 0, "groups": [], "configs": []}
    for info in infos:
        if info is None:
            continue
        merged["error_count"] += info["error_count"]
        merged["configs"].extend(info["configs"])
        merged["groups"].extend(g for g in info["groups"] if g not in merged["groups"])
    return merged


def _prefixed(prefix: str, keys: dict, values: list[ConfigValue]) -> dict:
    configs, groups, errors = [], [], 0
    for value in values:
        key = keys.get(value.name)
        definition = None
        if key is not None:
            definition = dict(config_key_info(key), name=prefix + key.name)
            if key.group is not None and key.group not in groups:
                groups.append(key.group)
        shown = ConfigValue(prefix + value.name, value.value, value.recommended_values,
                            value.errors, value.visible)
        errors += 1 if value.errors else 0
        configs.append({"definition": definition, "value": _value_info(shown)})
    return {"name": "", "error_count": errors, "groups": groups, "configs": configs}


def _converter_infos(plugins: Plugins, props: dict,
                     values: dict[str, ConfigValue]) -> dict | None:
    """Each converter the connector names, its own settings validated under its prefix."""
    infos = []
    for setting, kind in (("key.converter", "converter"), ("value.converter", "converter"),
                          ("header.converter", "header_converter")):
        if not props.get(setting) or values.get(setting, ConfigValue(setting)).errors:
            continue
        cls = plugins.find(kind, props[setting])
        try:
            definition = cls().config() if cls is not None else None
        except Exception:
            definition = None
        if not isinstance(definition, ConfigDef):
            continue
        prefix = setting + "."
        own = {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}
        own.setdefault("converter.type", setting.split(".")[0])  # key, value or header
        checked = definition.validate(own)
        infos.append(_prefixed(prefix, definition.keys, list(checked.values())))
    return _merge("", *infos) if infos else None


def _override_infos(worker_config, props: dict, sink: bool) -> dict | None:
    """The producer/consumer/admin ``.override.`` settings against the worker's policy."""
    clients = ["consumer"] if sink else ["producer"]
    if sink and (props.get("errors.deadletterqueue.topic.name") or "").strip():
        clients += ["producer", "admin"]
    if not sink and uses_topic_creation(props):
        clients.append("admin")
    infos = []
    policy = worker_config["connector.client.config.override.policy"]
    for kind in clients:
        prefix = CLIENT_PREFIXES[kind]
        overrides = {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}
        refused = set(worker_config.check_overrides(kind, overrides))
        values = [ConfigValue(name, value, errors=[
            f"The '{policy}' policy does not allow '{name}' to be overridden in the "
            f"connector configuration."] if name in refused else [])
            for name, value in overrides.items()]
        infos.append(_prefixed(prefix, {}, values))
    return _merge("", *infos)


def validate(plugins: Plugins, worker_config, props: dict) -> dict:
    """``PUT /connector-plugins/{plugin}/config/validate``'s body (Connect's ConfigInfos).
    BadRequest when there is no ``connector.class`` or it names no connector."""
    connector_class = props.get("connector.class")
    if connector_class is None:
        raise BadRequest(f"Connector config {_java_map(props)} contains no connector type")
    try:
        connector = plugins.new_connector(connector_class)
    except Exception as e:
        raise BadRequest(str(e)) from e
    sink = isinstance(connector, SinkConnector)
    definition = enriched_def(plugins, props, sink,
                              bool(worker_config.get("topic.creation.enable", True)))
    for setting, kind in (("key.converter", "converter"), ("value.converter", "converter"),
                          ("header.converter", "header_converter")):
        definition.keys[setting].validator = _class_validator(plugins, kind)
    values = definition.validate(props)
    if sink:
        sink_checks(props, values)
    elif worker_config.exactly_once_source:
        source_eos_checks(connector, props, values)
    for name, value in props.items():
        if value is None:
            _add_error(values, name, None, "Null value can not be supplied as the "
                                           "configuration value.")
    keys, groups = dict(definition.keys), list(definition.groups)
    own = connector.config()
    if not isinstance(own, ConfigDef):
        raise BadRequest(f"{type(connector).__qualname__}.config() must return a ConfigDef "
                         f"that is not null.")
    checked = connector.validate(props)
    if checked is None:
        raise BadRequest(f"{type(connector).__qualname__}.validate() must return a Config "
                         f"that is not null.")
    keys.update(own.keys)
    groups.extend(g for g in own.groups if g not in groups)
    own_values = list(values.values()) + list(checked.values())
    return _merge(connector_class, generate_result(connector_class, keys, own_values, groups),
                  _override_infos(worker_config, props, sink),
                  _converter_infos(plugins, props, values))


def config_errors(infos: dict) -> str | None:
    """Connect's message for a config with errors (None when there are none)."""
    if not infos["error_count"]:
        return None
    lines = [f"Connector configuration is invalid and contains the following "
             f"{infos['error_count']} error(s):"]
    for config in infos["configs"]:
        if config["value"]:
            lines.extend(config["value"]["errors"])
    lines.append("You can also find the above list of errors at the endpoint "
                 "`/connector-plugins/{connectorType}/config/validate`")
    return "\n".join(lines)


def _java_map(props: dict) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in props.items()) + "}"


def plugin_base_def(cls: type) -> ConfigDef | None:
    """The framework's settings Connect lists beside a connector's own (KIP-769)."""
    if issubclass(cls, SinkConnector):
        return sink_def()
    if issubclass(cls, SourceConnector):
        return source_def()
    return None


class ConnectorConfig:
    """A connector's parsed settings (``config["tasks.max"]``): ConfigException with
    Kafka's message for the first bad one."""

    def __init__(self, plugins: Plugins, props: dict[str, str], sink: bool,
                 topic_creation_enabled: bool = True):
        self.props, self.sink = dict(props), sink
        self.definition = enriched_def(plugins, props, sink, topic_creation_enabled)
        self.values = self.definition.parse(self.props)

    def __getitem__(self, name: str):
        return self.values[name]

    def get(self, name: str, default=None):
        return self.values.get(name, default)

    def prefixed(self, prefix: str) -> dict[str, str]:
        """The settings under ``prefix``, prefix removed (as given, untyped)."""
        return {k[len(prefix):]: v for k, v in self.props.items() if k.startswith(prefix)}
