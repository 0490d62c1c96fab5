import tomllib
from pathlib import Path

import pytest

from josefk.connect.api import (ConfigDef, ConfigException, ConfigType, Schema, SchemaBuilder,
                                Struct)
from josefk.connect.transforms import PREDICATES, TRANSFORMS, InsertField, RegexRouter
from josefk.connect.transforms.chain import TransformationChain, enrich, find_class

from tests.connect.transforms.records import source

KAFKA = "org.apache.kafka.connect.transforms."
ROUTE_THEN_INSERT = {
    "transforms": "route,insert",
    "transforms.route.type": KAFKA + "RegexRouter",
    "transforms.route.regex": "(.*)-raw", "transforms.route.replacement": "$1",
    "transforms.insert.type": KAFKA + "InsertField$Value",
    "transforms.insert.topic.field": "from_topic",
}


def chain(props):
    return TransformationChain.from_config(props)


def test_transforms_apply_in_order():
    out = chain(ROUTE_THEN_INSERT).apply(source({"a": 1}, topic="orders-raw"))
    assert out.topic == "orders" and out.value == {"a": 1, "from_topic": "orders"}
    reversed_order = chain({**ROUTE_THEN_INSERT, "transforms": "insert,route"})
    assert reversed_order.apply(source({"a": 1}, topic="orders-raw")).value == {
        "a": 1, "from_topic": "orders-raw"}


def test_no_transforms():
    record = source({"a": 1})
    empty = chain({})
    assert len(empty) == 0 and empty.apply(record) is record


def test_predicates_gate_their_transform_and_negate_inverts():
    props = {
        "transforms": "dropTombstones,onlyOrders,mask",
        "transforms.dropTombstones.type": "Filter",
        "transforms.dropTombstones.predicate": "isTombstone",
        "transforms.onlyOrders.type": "Filter",
        "transforms.onlyOrders.predicate": "isOrders", "transforms.onlyOrders.negate": "true",
        "transforms.mask.type": KAFKA + "MaskField$Value", "transforms.mask.fields": "card",
        "transforms.mask.predicate": "hasSecret",
        "predicates": "isTombstone,isOrders,hasSecret",
        "predicates.isTombstone.type": KAFKA + "predicates.RecordIsTombstone",
        "predicates.isOrders.type": "TopicNameMatches", "predicates.isOrders.pattern": "orders.*",
        "predicates.hasSecret.type": "HasHeaderKey", "predicates.hasSecret.name": "secret",
    }
    transforms = chain(props)
    assert transforms.apply(source(None, topic="orders")) is None
    assert transforms.apply(source({"card": "1234"}, topic="users")) is None
    assert transforms.apply(source({"card": "1234"}, topic="orders")).value == {"card": "1234"}
    secret = source({"card": "1234"}, topic="orders-eu", headers=[("secret", None, "y")])
    assert transforms.apply(secret).value == {"card": ""}


def test_a_dropped_record_stops_the_chain():
    class Boom(RegexRouter):
        def apply(self, record):
            raise AssertionError("applied after a drop")

    props = {"transforms": "drop,boom", "transforms.drop.type": "Filter",
             "transforms.boom.type": "Boom", "transforms.boom.regex": "x",
             "transforms.boom.replacement": "y"}
    transforms = TransformationChain.from_config(
        props, find=lambda kind, name: Boom if name == "Boom" else find_class(kind, name))
    assert transforms.apply(source({"a": 1})) is None


def test_class_names_by_python_path_and_entry_point_style():
    props = {"transforms": "a,b",
             "transforms.a.type": "josefk.connect.transforms.routers.RegexRouter",
             "transforms.a.regex": "t", "transforms.a.replacement": "u",
             "transforms.b.type": "josefk.connect.transforms.insert_field:InsertField.Value",
             "transforms.b.topic.field": "tp"}
    assert chain(props).apply(source({}, topic="t")).value == {"tp": "u"}


def test_close_reaches_every_transform_and_predicate():
    closed = []

    def recording(base):
        class Recording(base):
            def close(self):
                closed.append(type(self).__mro__[1].__name__)
        return Recording

    classes = {"Filter": recording(TRANSFORMS["Filter"]),
               "HasHeaderKey": recording(PREDICATES["HasHeaderKey"])}
    props = {"transforms": "f", "transforms.f.type": "Filter", "transforms.f.predicate": "p",
             "predicates": "p", "predicates.p.type": "HasHeaderKey", "predicates.p.name": "h"}
    TransformationChain.from_config(props, find=lambda kind, name: classes[name]).close()
    assert sorted(closed) == ["Filter", "HasHeaderKey"]


@pytest.mark.parametrize("changes,message", [
    ({"transforms": "route,route"},
     r"^Invalid value \[route, route\] for configuration transforms: Duplicate alias provided\.$"),
    ({"transforms.route.type": None},
     r'^Missing required configuration "transforms.route.type" which has no default value\.$'),
    ({"transforms.route.predicate": "p", "predicates": "p"},
     r'^Missing required configuration "predicates.p.type" which has no default value\.$'),
    ({"transforms.route.type": "com.example.Nope"},
     r"^Invalid value com.example.Nope for configuration transforms.route.type: Class "
     r"com.example.Nope could not be found\.$"),
    ({"transforms.route.type": "josefk.connect.transforms.routers.Nope"},
     r"Class josefk.connect.transforms.routers.Nope could not be found\.$"),
    ({"transforms.route.type": "Nope"}, r"Class Nope could not be found\.$"),
    ({"transforms.route.type": KAFKA + "InsertField"},
     r"^Invalid value org.apache.kafka.connect.transforms.InsertField for configuration "
     r"transforms.route.type: Transformation is abstract and cannot be created\. Did you mean "
     r"org.apache.kafka.connect.transforms.InsertField\$Key, "
     r"org.apache.kafka.connect.transforms.InsertField\$Value\?$"),
    ({"transforms.route.type": KAFKA + "predicates.HasHeaderKey"},
     r"transforms.route.type: Not a Transformation$"),
    ({"transforms.route.negate": "true"},
     r"^Config 'transforms.route.negate' was provided but there is no config "
     r"'transforms.route.predicate' defining a predicate to be negated\.$"),
    ({"transforms.route.predicate": "p"},
     r"^Invalid value p for configuration transforms.route.predicate: There is no predicate "
     r"alias 'p' in 'predicates'$"),
    ({"transforms.route.predicate": "p", "predicates": "p", "predicates.p.type": "Filter"},
     r"predicates.p.type: Not a Predicate$"),
    ({"transforms.route.regex": "("}, r"^Invalid value \( for configuration regex: Invalid regex"),
])
def test_configuration_errors(changes, message):
    props = {**ROUTE_THEN_INSERT, **changes}
    props = {k: v for k, v in props.items() if v is not None}
    with pytest.raises(ConfigException, match=message):
        chain(props)


def test_enrich_adds_each_alias_settings_prefixed():
    props = {**ROUTE_THEN_INSERT, "transforms.insert.predicate": "p", "predicates": "p",
             "predicates.p.type": "TopicNameMatches", "predicates.p.pattern": ".*"}
    base = ConfigDef().define("name", ConfigType.STRING)
    enriched = enrich(props, base)
    assert list(enriched.keys)[:1] == ["name"]
    assert {"transforms.route.type", "transforms.route.predicate", "transforms.route.negate",
            "transforms.route.regex", "transforms.route.replacement",
            "transforms.insert.topic.field", "transforms.insert.replace.null.with.default",
            "predicates.p.type", "predicates.p.pattern"} <= set(enriched.keys)
    key = enriched.keys["transforms.route.regex"]
    assert key.group == "Transforms: route" and key.documentation.startswith("Regular")
    assert enriched.keys["transforms.route.type"].documentation == \
        "Class for the 'route' transformation."
    assert enriched.keys["predicates.p.type"].group == "Predicates: p"
    assert "Transforms: route" in enriched.groups
    results = enriched.validate({**props, "name": "c"})
    assert not [r.errors for r in results.values() if r.errors]
    assert KAFKA + "RegexRouter" in results["transforms.route.type"].recommended_values


def test_enrich_reports_each_problem_as_validate_does():
    props = {**ROUTE_THEN_INSERT, "transforms": "route,insert,broken",
             "transforms.broken.type": "nope.Nope", "transforms.route.regex": "(",
             "transforms.insert.negate": "true", "transforms.insert.type": KAFKA + "Cast$Value"}
    del props["transforms.route.replacement"]
    errors = {name: r.errors for name, r in enrich(props).validate(props).items() if r.errors}
    assert errors == {
        "transforms.route.regex": ["Invalid value ( for configuration regex: Invalid regex: "
                                   "missing ), unterminated subpattern at position 0"],
        "transforms.route.replacement": ['Missing required configuration '
                                         '"transforms.route.replacement" which has no default '
                                         'value.'],
        "transforms.insert.type": ["Config 'transforms.insert.negate' was provided but there is "
                                   "no config 'transforms.insert.predicate' defining a predicate "
                                   "to be negated."],
        "transforms.broken.type": ["Invalid value nope.Nope for configuration "
                                   "transforms.broken.type: Class nope.Nope could not be found."],
    }
    with pytest.raises(ConfigException, match="Class nope.Nope could not be found"):
        enrich({"transforms": "broken", "transforms.broken.type": "nope.Nope"},
               require_full_config=True)
    with pytest.raises(ConfigException, match="^Invalid value null for configuration "
                                              "transforms.t.type: Not a Transformation$"):
        enrich({"transforms": "t"}, require_full_config=True)
    missing = enrich({"transforms": "t"}).validate({"transforms": "t"})
    assert missing["transforms.t.type"].errors == [
        'Missing required configuration "transforms.t.type" which has no default value.']


def test_with_schema_through_a_chain():
    schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field(
        "name", Schema.STRING_SCHEMA).build()
    props = {"transforms": "key,extract,cast",
             "transforms.key.type": KAFKA + "ValueToKey", "transforms.key.fields": "id",
             "transforms.extract.type": KAFKA + "ExtractField$Key",
             "transforms.extract.field": "id",
             "transforms.cast.type": KAFKA + "Cast$Key", "transforms.cast.spec": "string"}
    out = chain(props).apply(source(Struct(schema).put("id", 7).put("name", "n"), schema))
    assert (out.key_schema, out.key) == (Schema.STRING_SCHEMA, "7")


def test_alias_tables_and_entry_points_agree():
    kafka = ["Cast", "ExtractField", "Flatten", "HeaderFrom", "HoistField", "InsertField",
             "MaskField", "ReplaceField", "TimestampConverter"]
    for name in kafka:
        assert TRANSFORMS[f"{KAFKA}{name}$Value"].__qualname__ == f"{name}.Value"
        assert TRANSFORMS[f"{name}$Key"] is TRANSFORMS[f"{KAFKA}{name}$Key"]
    assert TRANSFORMS[KAFKA + "InsertField$Value"] is InsertField.Value
    for name in ["DropHeaders", "Filter", "InsertHeader", "RegexRouter", "TimestampRouter",
                 "ValueToKey"]:
        assert TRANSFORMS[KAFKA + name] is TRANSFORMS[name]
    assert set(PREDICATES) == {KAFKA + "predicates." + n for n in (
        "HasHeaderKey", "RecordIsTombstone", "TopicNameMatches")} | {
        "HasHeaderKey", "RecordIsTombstone", "TopicNameMatches"}
    project = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())
    points = project["project"]["entry-points"]
    for group, table in (("josefk.connect.transforms", TRANSFORMS),
                         ("josefk.connect.predicates", PREDICATES)):
        assert points[group] == {name: f"{cls.__module__}:{cls.__qualname__}"
                                 for name, cls in table.items()}
