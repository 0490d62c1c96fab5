"""Avro schemas through the ``avro`` library: parsing (with named types from references),
the canonical string stored and compared (the library's JSON form, compact: Avro's attributes
in a fixed order, names relative to their namespace), its normalized form for
``normalize=true`` (also other properties and aliases sorted, as Confluent normalizes), and
Avro's own reader/writer schema resolution rules for compatibility, as Confluent uses Avro's."""
from __future__ import annotations

import json

import avro.errors
import avro.name
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from josefk.registry.schema import AVRO, InvalidSchema


class AvroSchema:
    schema_type = AVRO

    def __init__(self, text: str, references: list["AvroSchema"] = ()):
        try:
            data = json.loads(text)
        except ValueError as e:
            raise InvalidSchema(f"Invalid schema: not JSON: {e}") from None
        names = avro.name.Names()
        for ref in references:  # named types of referenced schemas are known by name here
            avro.schema.make_avsc_object(ref.data, names)
        ref_names = dict(names.names)
        try:
            self.parsed = avro.schema.make_avsc_object(data, names)
        except (avro.errors.AvroException, TypeError, AttributeError, KeyError) as e:
            raise InvalidSchema(f"Invalid schema: {e}") from None
        self.data = data
        out_names = avro.name.Names()
        out_names.names.update(ref_names)  # referenced types stay references in the output
        self.canonical = json.dumps(self.parsed.to_json(out_names), separators=(",", ":"))

    def normalized(self) -> str:
        return json.dumps(_normalized(json.loads(self.canonical)), separators=(",", ":"))

    def read_problems(self, writer: "AvroSchema") -> list[str]:
        result = ReaderWriterCompatibilityChecker().get_compatibility(self.parsed, writer.parsed)
        if result.compatibility is SchemaCompatibilityType.compatible:
            return []
        kinds = ", ".join(sorted(k.name.upper() for k in result.incompatibilities))
        return [f"{kinds}: {'; '.join(sorted(result.messages))} "
                f"(at {', '.join(sorted(result.locations))})"]


# Avro's own attributes, which the library writes in a fixed order; any other is a property.
_ATTRIBUTES = {"type", "name", "namespace", "doc", "fields", "symbols", "items", "values",
               "size", "default", "order", "aliases", "logicalType", "precision", "scale"}


def _normalized(node, in_schema: bool = True):
    """Avro's attributes where the library put them, other properties sorted by name (their
    values with sorted keys too), aliases sorted."""
    if isinstance(node, list):
        return [_normalized(n, in_schema) for n in node]
    if not isinstance(node, dict):
        return node
    if not in_schema:  # a property's or a default's value: plain JSON
        return {k: _normalized(node[k], False) for k in sorted(node)}
    out = {}
    for k, v in node.items():
        if k in _ATTRIBUTES:
            out[k] = sorted(v) if k == "aliases" else _normalized(v, k in (
                "type", "fields", "items", "values"))
    for k in sorted(k for k in node if k not in _ATTRIBUTES):
        out[k] = _normalized(node[k], False)
    return out
