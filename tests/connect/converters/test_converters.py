"""The alias registry: each converter by Kafka's (or Confluent's) Java class name and simple
name, and the same names declared as entry points."""
from __future__ import annotations

import tomllib
from importlib import import_module
from pathlib import Path

from josefk.connect.api.plugins import Converter, HeaderConverter
from josefk.connect.converters import CONVERTERS, HEADER_CONVERTERS, JsonConverter

PYPROJECT = Path(__file__).parents[3] / "pyproject.toml"


def test_aliases():
    assert CONVERTERS["org.apache.kafka.connect.json.JsonConverter"] is JsonConverter
    assert CONVERTERS["JsonConverter"] is JsonConverter
    assert CONVERTERS["io.confluent.connect.avro.AvroConverter"] is CONVERTERS["AvroConverter"]
    assert "SimpleHeaderConverter" in HEADER_CONVERTERS and "AvroConverter" not in HEADER_CONVERTERS
    for cls in set(CONVERTERS.values()):
        assert isinstance(cls(), Converter), cls
    for cls in set(HEADER_CONVERTERS.values()):
        assert isinstance(cls(), HeaderConverter), cls


def test_entry_points_match_the_aliases():
    points = tomllib.loads(PYPROJECT.read_text())["project"]["entry-points"]
    for group, aliases in (("josefk.connect.converters", CONVERTERS),
                           ("josefk.connect.header_converters", HEADER_CONVERTERS)):
        java_names = {name for name in aliases if "." in name}
        assert set(points[group]) == java_names
        for name, target in points[group].items():
            module, attr = target.split(":")
            assert getattr(import_module(module), attr) is aliases[name]
