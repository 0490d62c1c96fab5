import re

import pytest

from josefk.connect.api import ConfigException, Schema, SchemaBuilder
from josefk.connect.transforms.util import (SchemaCache, class_name, copy_schema_basics,
                                            java_regex, java_replacement, key_and_value)


def struct_of(name):
    return SchemaBuilder.struct().field(name, Schema.INT32_SCHEMA).build()


def test_schema_cache_builds_once_per_schema_and_keeps_sixteen():
    built = []
    cache = SchemaCache()

    def build(schema):
        built.append(schema)
        return SchemaBuilder.struct().name("updated").build()

    first = cache.get(struct_of("a"), build)
    assert cache.get(struct_of("a"), build) is first  # equal, not the same object
    assert len(built) == 1
    for i in range(16):
        cache.get(struct_of(f"f{i}"), build)
    assert len(cache) == 16
    cache.get(struct_of("a"), build)  # the oldest was evicted
    assert len(built) == 18


def test_schema_cache_keeps_recently_used_entries():
    cache = SchemaCache(size=2)
    a, b, c = struct_of("a"), struct_of("b"), struct_of("c")
    for schema in (a, b, a, c):
        cache.get(schema, lambda s: s)
    built = []
    cache.get(struct_of("a"), lambda s: built.append(s) or s)
    assert built == []


@pytest.mark.parametrize("replacement,expected", [
    ("$1", "a"), ("<$2$1>", "<ba>"), ("${x}!", "a!"), ("\\$1 \\\\", "$1 \\"), ("$10", "a0"),
    ("x", "x"), ("", ""),
])
def test_java_replacement(replacement, expected):
    regex = java_regex("(?<x>a)(b)")
    assert java_replacement(replacement, regex)(regex.fullmatch("ab")) == expected


def test_twelve_groups_make_12_one_reference():
    regex = java_regex("(a)" * 12)
    assert java_replacement("$12", regex)(regex.fullmatch("a" * 12)) == "a"


@pytest.mark.parametrize("replacement,reason", [
    ("$3", "No group 3"), ("${y}", "No group with name {y}"), ("a$", "Illegal group reference"),
    ("${x", "named capturing group is missing trailing '}'"),
    ("\\", "character to be escaped is missing"),
])
def test_java_replacement_refused(replacement, reason):
    with pytest.raises(ConfigException, match=re.escape(reason) + "$"):
        java_replacement(replacement, java_regex("(?<x>a)(b)"))


def test_java_regex_named_groups_and_lookbehind():
    assert java_regex("(?<year>\\d{4})").fullmatch("2024").group("year") == "2024"
    assert java_regex("(?<=a)b").search("ab")
    with pytest.raises(re.error):
        java_regex("\\p{Alpha}+")


def test_class_names_and_requirements():
    assert class_name(None) == "null" and class_name("x") == "str"
    assert class_name(Schema.INT8_SCHEMA) == "josefk.connect.api.schema.Schema"


def test_copy_schema_basics_copies_name_version_doc_parameters_only():
    source = (SchemaBuilder.array(Schema.STRING_SCHEMA).name("n").version(2).doc("d")
              .parameter("k", "v").optional().build())
    copy = copy_schema_basics(source).build()
    assert (copy.type, copy.value_schema, copy.name, copy.version, copy.doc, copy.parameters,
            copy.optional) == (source.type, Schema.STRING_SCHEMA, "n", 2, "d", {"k": "v"}, False)
    primitive = copy_schema_basics(SchemaBuilder.int8().name("x").build()).build()
    assert (primitive.type, primitive.name) == (Schema.INT8_SCHEMA.type, "x")


def test_key_and_value_variants():
    @key_and_value
    class Upper:
        def apply(self, record):
            return self.new_record(record, None, self.operating_value(record).upper())

    from tests.connect.transforms.records import source
    record = source("value", key="key")
    assert Upper.Key().apply(record).key == "KEY"
    assert Upper.Value().apply(record).value == "VALUE"
    assert Upper.Value.__qualname__.endswith("Upper.Value")
