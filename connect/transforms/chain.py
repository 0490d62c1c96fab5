"""A connector's transforms as Kafka's runtime builds them from its settings
(``ConnectorConfig.transformations`` and ``enrich``): ``transforms`` lists the aliases in the
order they apply, ``transforms.<alias>.type`` names each class (Kafka's class name, its simple
name, an entry point of ``josefk.connect.transforms`` or a dotted Python path) and the rest of
``transforms.<alias>.*`` configures it; ``transforms.<alias>.predicate`` names an alias of
``predicates`` whose test (negated with ``transforms.<alias>.negate``) decides, record by
record, whether the transform applies.

``TransformationChain.from_config(props).apply(record)`` is what the worker calls per record;
``enrich(props)`` gives the settings the chain adds to a connector's ConfigDef, for
validation."""
from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Callable, Iterable

from josefk.connect.api.config import (NO_DEFAULT, ConfigDef, ConfigException, ConfigKey,
                                       Importance, LambdaValidator, Type, Width, parse_type)
from josefk.connect.api.plugins import Predicate, Transformation
from josefk.connect.api.records import ConnectRecord
from josefk.connect.transforms import ABSTRACT, PREDICATES, TRANSFORMS

TRANSFORMS_CONFIG, PREDICATES_CONFIG = "transforms", "predicates"
PREDICATE, NEGATE = "predicate", "negate"
ENTRY_POINT_GROUPS = {"Transformation": "josefk.connect.transforms",
                      "Predicate": "josefk.connect.predicates"}
_KINDS = {"Transformation": (TRANSFORMS, Transformation, TRANSFORMS_CONFIG, "Transforms"),
          "Predicate": (PREDICATES, Predicate, PREDICATES_CONFIG, "Predicates")}


def _import(name: str) -> type | None:
    module_name, sep, attr = name.partition(":")
    if not sep:
        module_name, _, attr = name.rpartition(".")
    if not module_name or not attr:
        return None
    for split in range(len(module_name.split(".")), 0, -1):
        parts = module_name.split(".")
        try:
            target = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for step in parts[split:] + attr.split("."):
            target = getattr(target, step, None)
            if target is None:
                return None
        return target if isinstance(target, type) else None
    return None


def find_class(kind: str, name: str) -> type | None:
    """The class a ``type`` setting names: an alias of the tables, an installed entry point, a
    dotted Python path; None where nothing has that name. Every kind is searched, as Java loads
    any class and then checks it (``Not a Transformation``); ``kind`` is there for the finder a
    worker passes instead (its plug-in registry)."""
    for table in (TRANSFORMS, PREDICATES, ABSTRACT):
        if name in table:
            return table[name]
    for group in ENTRY_POINT_GROUPS.values():
        for entry in entry_points(group=group):
            if entry.name == name:
                return entry.load()
    return _import(name)


def plugin_class(kind: str, key: str, name, find: Callable[[str, str], type | None] = find_class
                 ) -> type:
    """The class of ``key``'s value, or ConfigException with Kafka's message: not found, not a
    Transformation (Predicate), abstract (InsertField rather than InsertField$Value)."""
    if name is None:
        raise ConfigException(key, "null", f"Not a {kind}")
    cls = find(kind, name)
    if cls is None:
        raise ConfigException(key, name, f"Class {name} could not be found.")
    if hasattr(cls, "Key") and hasattr(cls, "Value") and not hasattr(cls, "operating_value"):
        separator = "$" if name in ABSTRACT else "."
        raise ConfigException(key, name, f"{kind} is abstract and cannot be created. Did you "
                                         f"mean {name}{separator}Key, {name}{separator}Value?")
    if not isinstance(cls, type) or not issubclass(cls, _KINDS[kind][1]):
        raise ConfigException(key, name, f"Not a {kind}")
    return cls


def _aliases(props: dict, setting: str) -> list[str]:
    aliases = parse_type(setting, props.get(setting), Type.LIST) or []
    if len(set(aliases)) != len(aliases):
        raise ConfigException(setting, aliases, "Duplicate alias provided.")
    return aliases


def _required(props: dict, key: str):
    if props.get(key) is None:
        raise ConfigException(f'Missing required configuration "{key}" which has no default '
                              f'value.')
    return props[key]


def _with_prefix(props: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}


def _check_negate(props: dict, prefix: str) -> None:
    if prefix + NEGATE in props and prefix + PREDICATE not in props:
        raise ConfigException(f"Config '{prefix}{NEGATE}' was provided but there is no config "
                              f"'{prefix}{PREDICATE}' defining a predicate to be negated.")


class PredicatedTransformation:
    """A transform applied only to the records its predicate's test (negated or not) passes;
    the others go through unchanged."""

    __slots__ = ("predicate", "negate", "transformation")

    def __init__(self, predicate, negate: bool, transformation):
        self.predicate, self.negate, self.transformation = predicate, negate, transformation

    def apply(self, record):
        if self.predicate.test(record) != self.negate:
            return self.transformation.apply(record)
        return record

    def close(self) -> None:
        self.transformation.close()
        self.predicate.close()


class TransformationChain:
    """The connector's transforms in order: ``apply`` runs a record through each and returns
    what comes out, or None where one of them dropped it. One chain per task: its transforms
    keep per-schema caches that are not shared between threads."""

    def __init__(self, stages: Iterable[tuple[str, object]] = ()):
        self.stages: list[tuple[str, object]] = list(stages)
        self._apply = [stage.apply for _, stage in self.stages]

    @classmethod
    def from_config(cls, props: dict,
                    find: Callable[[str, str], type | None] = find_class
                    ) -> "TransformationChain":
        """Each alias of ``transforms`` made and configured, with its predicate where it names
        one; ConfigException (a ConnectException) for any setting that does not hold."""
        stages = []
        predicate_aliases = _aliases(props, PREDICATES_CONFIG)
        try:
            for alias in _aliases(props, TRANSFORMS_CONFIG):
                prefix = f"{TRANSFORMS_CONFIG}.{alias}."
                _check_negate(props, prefix)
                transform = plugin_class("Transformation", prefix + "type",
                                         _required(props, prefix + "type"), find)()
                configs = _with_prefix(props, prefix)
                predicate_alias = configs.pop(PREDICATE, None) or None
                negate = str(configs.pop(NEGATE, "false")).lower() == "true"
                transform.configure(configs)
                stages.append((alias, transform))
                if predicate_alias is None:
                    continue
                if predicate_alias not in predicate_aliases:
                    raise ConfigException(prefix + PREDICATE, predicate_alias,
                                          f"There is no predicate alias '{predicate_alias}' in "
                                          f"'{PREDICATES_CONFIG}'")
                predicate_prefix = f"{PREDICATES_CONFIG}.{predicate_alias}."
                predicate = plugin_class("Predicate", predicate_prefix + "type",
                                         _required(props, predicate_prefix + "type"), find)()
                predicate.configure(_with_prefix(props, predicate_prefix))
                stages[-1] = (alias, PredicatedTransformation(predicate, negate, transform))
        except BaseException:
            cls(stages).close()
            raise
        return cls(stages)

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        for apply in self._apply:
            record = apply(record)
            if record is None:
                return None
        return record

    def close(self) -> None:
        for _, stage in self.stages:
            stage.close()

    def __len__(self):
        return len(self.stages)


def _embed(target: ConfigDef, prefix: str, group: str, order: int, child: ConfigDef) -> None:
    """``child``'s keys added to ``target`` under ``prefix`` in ``group`` (Kafka's
    ConfigDef.embed; the group is the alias's, already in ``target``): their validators still
    see the names without the prefix."""
    for key in child.keys.values():
        validator = key.validator
        if validator is not None:
            validator = LambdaValidator(
                lambda name, value, base=validator: base(name[len(prefix):], value),
                str(validator))
        target.keys[prefix + key.name] = ConfigKey(
            prefix + key.name, key.type, key.default, validator, key.importance,
            key.documentation, group + (": " + key.group if key.group else ""), order,
            key.width, key.display_name, [prefix + d for d in key.dependents], None,
            key.internal)
        order += 1


def enrich(props: dict, base: ConfigDef | None = None, require_full_config: bool = False,
           find: Callable[[str, str], type | None] = find_class) -> ConfigDef:
    """``base`` (or an empty ConfigDef) with, for each alias of ``transforms`` and
    ``predicates``, its ``type`` and the settings of the class it names under
    ``transforms.<alias>.`` / ``predicates.<alias>.`` (Kafka's ConnectorConfig.enrich). A type
    that cannot be resolved leaves only the ``type`` key, whose validator reports why, unless
    ``require_full_config`` (then ConfigException)."""
    enriched = ConfigDef(base)
    for kind, (table, _, setting, group_name) in _KINDS.items():
        aliases = parse_type(setting, props.get(setting), Type.LIST) or []
        for alias in dict.fromkeys(aliases):
            prefix, group = f"{setting}.{alias}.", f"{group_name}: {alias}"
            type_key = prefix + "type"

            def check(name, value, prefix=prefix, kind=kind, type_key=type_key):
                if kind == "Transformation":
                    _check_negate(props, prefix)
                if value is not None:  # missing: its own error says so, as Kafka's validator
                    plugin_class(kind, type_key, value, find)

            enriched.define(
                type_key, Type.CLASS, NO_DEFAULT,
                LambdaValidator(check, f"valid configs for {alias} {kind.lower()}"),
                Importance.HIGH, f"Class for the '{alias}' {kind.lower()}.", group, 0,
                Width.LONG, f"{kind} type for {alias}",
                recommender=lambda name, parsed, table=table: sorted(
                    n for n in table if n.startswith("org.")))
            try:
                if kind == "Transformation":
                    _check_negate(props, prefix)
                cls = plugin_class(kind, type_key, props.get(type_key), find)
            except ConfigException:
                if require_full_config:
                    raise
                continue
            child = ConfigDef()
            if kind == "Transformation":
                child.define(PREDICATE, Type.STRING, "", importance=Importance.MEDIUM,
                             documentation="The alias of a predicate used to determine whether "
                                           "to apply this transformation.")
                child.define(NEGATE, Type.BOOLEAN, False, importance=Importance.MEDIUM,
                             documentation="Whether the configured predicate should be negated.")
            for name, key in cls().config().keys.items():
                if name not in child.keys:
                    child.keys[name] = key
            _embed(enriched, prefix, group, 1, child)
    return enriched
