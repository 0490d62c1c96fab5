"""What Kafka's transforms share (``org.apache.kafka.connect.transforms.util``): the
requirements on a record's data with their messages, the per-schema cache of updated schemas,
the list and regex validators, and the key/value variants of a transform."""
from __future__ import annotations

import re
from collections import OrderedDict
from typing import Callable

from josefk.connect.api.config import ConfigDef, ConfigException, Importance, Type, Validator
from josefk.connect.api.errors import DataException
from josefk.connect.api.records import ConnectRecord, SinkRecord
from josefk.connect.api.schema import Schema, SchemaBuilder, Struct
from josefk.connect.api.schema import Type as SchemaType

REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"
REPLACE_NULL_WITH_DEFAULT_DOC = ("Whether to replace fields that have a default value and that "
                                 "are null to the default value. When set to true, the default "
                                 "value is used, otherwise null is used.")


def define_replace_null_with_default(config_def: ConfigDef) -> ConfigDef:
    return config_def.define(REPLACE_NULL_WITH_DEFAULT_CONFIG, Type.BOOLEAN, True,
                             importance=Importance.MEDIUM,
                             documentation=REPLACE_NULL_WITH_DEFAULT_DOC)


def class_name(value) -> str:
    """A value's class as messages name it (Java prints ``getClass().getName()``)."""
    if value is None:
        return "null"
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def require_map(value, purpose: str) -> dict:
    if not isinstance(value, dict):
        raise DataException(f"Only Map objects supported in absence of schema for [{purpose}], "
                            f"found: {class_name(value)}")
    return value


def require_map_or_null(value, purpose: str) -> dict | None:
    return None if value is None else require_map(value, purpose)


def require_struct(value, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        raise DataException(f"Only Struct objects supported for [{purpose}], "
                            f"found: {class_name(value)}")
    return value


def require_struct_or_null(value, purpose: str) -> Struct | None:
    return None if value is None else require_struct(value, purpose)


def require_sink_record(record: ConnectRecord, purpose: str) -> SinkRecord:
    if not isinstance(record, SinkRecord):
        raise DataException(f"Only SinkRecord supported for [{purpose}], "
                            f"found: {class_name(record)}")
    return record


def field_value(struct: Struct, name: str, replace_null_with_default: bool):
    return struct.get(name) if replace_null_with_default else struct.get_without_default(name)


def copy_schema_basics(source: Schema, builder: SchemaBuilder | None = None) -> SchemaBuilder:
    """A builder (of ``source``'s type, a primitive or an array, unless given) with its name,
    version, doc and parameters: not its optionality nor default (Kafka's SchemaUtil)."""
    if builder is None:
        builder = (SchemaBuilder.array(source.value_schema) if source.type is SchemaType.ARRAY
                   else SchemaBuilder(source.type))
    if source.name is not None:
        builder.name(source.name)
    if source.version is not None:
        builder.version(source.version)
    if source.doc is not None:
        builder.doc(source.doc)
    if source.parameters:
        builder.parameters(source.parameters)
    return builder


class SchemaCache:
    """The updated schema of each input schema, computed once (Kafka's LRUCache of 16): the
    schema last seen is checked by identity first, since a task's records mostly share one."""

    __slots__ = ("_entries", "_size", "_last_key", "_last_value")

    def __init__(self, size: int = 16):
        self._entries: OrderedDict = OrderedDict()
        self._size = size
        self._last_key = self._last_value = None

    def get(self, schema: Schema, build: Callable[[Schema], Schema]) -> Schema:
        if schema is self._last_key:
            return self._last_value
        updated = self._entries.get(schema)
        if updated is None:
            updated = build(schema)
            self._entries[schema] = updated
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(schema)
        self._last_key, self._last_value = schema, updated
        return updated

    def __len__(self):
        return len(self._entries)


class NonEmptyListValidator(Validator):
    def __call__(self, name, value):
        if not value:
            raise ConfigException(name, value, "Empty list")

    def __str__(self):
        return "non-empty list"


def java_regex(pattern: str) -> re.Pattern:
    """A Java regular expression compiled by Python's ``re``: Java's named groups
    ``(?<name>...)`` become Python's ``(?P<name>...)``; Java syntax Python lacks (``\\p{Alpha}``
    classes, ``[a-z&&[^e]]`` intersections) fails to compile (re.error)."""
    return re.compile(re.sub(r"\(\?<(?=[A-Za-z])", "(?P<", pattern))


class RegexValidator(Validator):
    def __call__(self, name, value):
        try:
            java_regex(value)
        except (re.error, TypeError) as e:
            raise ConfigException(name, value, f"Invalid regex: {e}") from None

    def __str__(self):
        return "valid regex"


def java_replacement(replacement: str, regex: re.Pattern) -> Callable[[re.Match], str]:
    """Java's Matcher replacement string (``$1``, ``${name}``, ``\\$`` for a dollar) for
    ``regex``, as a function of its match. As in Java, ``$12`` refers to group 12 only where the
    regex has one (else to group 1 and a "2"); a reference to a group the regex lacks is a
    ConfigException here, where Java fails on the first record."""
    def refused(reason: str) -> ConfigException:
        return ConfigException("replacement", replacement, reason)

    parts: list = []
    literal: list[str] = []
    i, n = 0, len(replacement)
    while i < n:
        c = replacement[i]
        if c == "\\":
            if i + 1 >= n:
                raise refused("character to be escaped is missing")
            literal.append(replacement[i + 1])
            i += 2
            continue
        if c != "$":
            literal.append(c)
            i += 1
            continue
        if i + 1 < n and replacement[i + 1] == "{":
            end = replacement.find("}", i + 2)
            if end < 0:
                raise refused("named capturing group is missing trailing '}'")
            group = replacement[i + 2:end]
            if group not in regex.groupindex:
                raise refused(f"No group with name {{{group}}}")
            i = end + 1
        else:
            if i + 1 >= n or not replacement[i + 1].isdigit():
                raise refused("Illegal group reference")
            group = int(replacement[i + 1])
            i += 2
            while i < n and replacement[i].isdigit() and group * 10 + int(replacement[i]) <= \
                    regex.groups:
                group = group * 10 + int(replacement[i])
                i += 1
            if group > regex.groups:
                raise refused(f"No group {group}")
        parts.append("".join(literal))
        literal = []
        parts.append(group)
    parts.append("".join(literal))
    texts, groups = parts[0::2], parts[1::2]

    def expand(match: re.Match) -> str:
        out = [texts[0]]
        for group, text in zip(groups, texts[1:]):
            out.append(match.group(group) or "")
            out.append(text)
        return "".join(out)
    return expand


class KeySide:
    """A transform on the record's key: its schema and value, and a copy with them replaced."""

    @staticmethod
    def operating_schema(record):
        return record.key_schema

    @staticmethod
    def operating_value(record):
        return record.key

    @staticmethod
    def new_record(record, schema, value, headers=None):
        return record.new_record(key_schema=schema, key=value, headers=headers)


class ValueSide:
    """A transform on the record's value."""

    @staticmethod
    def operating_schema(record):
        return record.value_schema

    @staticmethod
    def operating_value(record):
        return record.value

    @staticmethod
    def new_record(record, schema, value, headers=None):
        return record.new_record(value_schema=schema, value=value, headers=headers)


def key_and_value(cls):
    """Give a transform working on one part of a record its ``Key`` and ``Value`` classes,
    as Kafka's ``InsertField$Key`` and ``InsertField$Value``."""
    for name, side in (("Key", KeySide), ("Value", ValueSide)):
        setattr(cls, name, type(name, (side, cls), {
            "__qualname__": f"{cls.__qualname__}.{name}", "__module__": cls.__module__,
            "__doc__": f"{cls.__name__} on the record's {name.lower()}."}))
    return cls


class Transform:
    """What every transform and predicate here shares: its settings declared in
    ``CONFIG_DEF``, nothing to release on close."""
    CONFIG_DEF = ConfigDef()

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF

    def close(self) -> None:
        return None
