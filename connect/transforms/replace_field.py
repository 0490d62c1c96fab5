"""ReplaceField: keep (``include``), drop (``exclude``, which wins) and rename (``renames``,
``old:new`` pairs) the fields of a key or value. The names before Kafka 4.0, ``whitelist`` and
``blacklist``, are read where ``include`` / ``exclude`` are not given."""
from __future__ import annotations

from josefk.connect.api.config import ConfigDef, ConfigException, Importance, LambdaValidator, Type
from josefk.connect.api.schema import Schema, SchemaBuilder, Struct
from josefk.connect.transforms.util import (REPLACE_NULL_WITH_DEFAULT_CONFIG, SchemaCache,
                                            Transform, copy_schema_basics,
                                            define_replace_null_with_default, field_value,
                                            key_and_value, require_map, require_struct)

EXCLUDE, INCLUDE, RENAMES = "exclude", "include", "renames"
DEPRECATED = {INCLUDE: "whitelist", EXCLUDE: "blacklist"}
PURPOSE = "field replacement"


def java_split(text: str, separator: str) -> list[str]:
    """Java's String.split: trailing empty strings are dropped."""
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_rename_mappings(mappings: list[str]) -> dict[str, str]:
    renames = {}
    for mapping in mappings:
        parts = java_split(mapping, ":")
        if len(parts) != 2:
            raise ConfigException(RENAMES, mappings, "Invalid rename mapping: " + mapping)
        renames[parts[0]] = parts[1]
    return renames


@key_and_value
class ReplaceField(Transform):
    CONFIG_DEF = define_replace_null_with_default(
        ConfigDef()
        .define(EXCLUDE, Type.LIST, [], importance=Importance.MEDIUM,
                documentation="Fields to exclude. This takes precedence over the fields to "
                              "include.")
        .define(DEPRECATED[EXCLUDE], Type.LIST, None, importance=Importance.LOW,
                documentation=f"Deprecated. Use {EXCLUDE} instead.")
        .define(INCLUDE, Type.LIST, [], importance=Importance.MEDIUM,
                documentation="Fields to include. If specified, only these fields will be used.")
        .define(DEPRECATED[INCLUDE], Type.LIST, None, importance=Importance.LOW,
                documentation=f"Deprecated. Use {INCLUDE} instead.")
        .define(RENAMES, Type.LIST, [], LambdaValidator(
                    lambda name, value: parse_rename_mappings(value),
                    "list of colon-delimited pairs, e.g. <code>foo:bar,abc:xyz</code>"),
                importance=Importance.MEDIUM, documentation="Field rename mappings."))

    def configure(self, configs: dict) -> None:
        configs = dict(configs)
        for current, old in DEPRECATED.items():
            if current not in configs and old in configs:
                configs[current] = configs[old]
        config = self.CONFIG_DEF.parse(configs)
        self.exclude = frozenset(config[EXCLUDE])
        self.include = frozenset(config[INCLUDE])
        self.renames = parse_rename_mappings(config[RENAMES])
        self.reverse_renames = {new: old for old, new in self.renames.items()}
        self.replace_null_with_default = config[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schemas = SchemaCache()

    def filter(self, name: str) -> bool:
        return name not in self.exclude and (not self.include or name in self.include)

    def apply(self, record):
        value = self.operating_value(record)
        if value is None:
            return record
        if self.operating_schema(record) is None:
            renames = self.renames
            updated = {renames.get(name, name): v
                       for name, v in require_map(value, PURPOSE).items() if self.filter(name)}
            return self.new_record(record, None, updated)
        value = require_struct(value, PURPOSE)
        schema = self._schemas.get(value.schema, self._updated_schema)
        updated = Struct(schema)
        for field in schema.fields():
            updated.put(field, field_value(value, self.reverse_renames.get(field.name, field.name),
                                           self.replace_null_with_default))
        return self.new_record(record, schema, updated)

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields():
            if self.filter(field.name):
                builder.field(self.renames.get(field.name, field.name), field.schema)
        return builder.build()
