import pytest

from josefk.connect.api.config import (ConfigDef, ConfigException, Importance, Password, Range,
                                       Type, ValidList, ValidString, display_value, parse_type)

DEF = (ConfigDef()
       .define("file", Type.STRING, importance=Importance.HIGH, documentation="the file")
       .define("tasks.max", Type.INT, 1, Range.at_least(1))
       .define("mode", Type.STRING, "bulk", ValidString.in_("bulk", "incrementing"))
       .define("topics", Type.LIST, "")
       .define("secret", Type.PASSWORD, None)
       .define("enabled", Type.BOOLEAN, "false"))


def test_parse_gives_typed_values_and_defaults():
    parsed = DEF.parse({"file": " /tmp/x ", "tasks.max": "3", "topics": "a, b,c",
                        "secret": "s3", "enabled": "TRUE", "other": "kept"})
    assert parsed["file"] == "/tmp/x" and parsed["tasks.max"] == 3
    assert parsed["topics"] == ["a", "b", "c"] and parsed["enabled"] is True
    assert str(parsed["secret"]) == "[hidden]" and parsed["secret"].value == "s3"
    assert parsed["mode"] == "bulk" and parsed["other"] == "kept"


def test_parse_raises_kafkas_messages():
    with pytest.raises(ConfigException,
                       match='^Missing required configuration "file" which has no default value.$'):
        DEF.parse({})
    with pytest.raises(ConfigException, match="^Invalid value abc for configuration tasks.max: "
                                              "Not a number of type INT$"):
        DEF.parse({"file": "f", "tasks.max": "abc"})
    with pytest.raises(ConfigException, match="^Invalid value 0 for configuration tasks.max: "
                                              "Value must be at least 1$"):
        DEF.parse({"file": "f", "tasks.max": "0"})
    with pytest.raises(ConfigException, match="String must be one of: bulk, incrementing"):
        DEF.parse({"file": "f", "mode": "x"})
    with pytest.raises(ConfigException, match="Expected value to be either true or false"):
        DEF.parse({"file": "f", "enabled": "yes"})


def test_validate_reports_every_setting_with_its_errors():
    results = DEF.validate({"tasks.max": "x", "mode": "bulk"})
    assert results["file"].errors == [
        'Missing required configuration "file" which has no default value.']
    assert results["tasks.max"].errors == [  # the validator sees null too, as Kafka's
        "Invalid value x for configuration tasks.max: Not a number of type INT",
        "Invalid value null for configuration tasks.max: Value must be non-null"]
    assert results["tasks.max"].value is None  # what does not parse has no value, as Kafka's
    assert results["mode"].errors == [] and results["mode"].value == "bulk"
    assert results["topics"].value == [] and results["topics"].errors == []


def test_numbers_out_of_their_width_are_refused():
    assert parse_type("n", "32767", Type.SHORT) == 32767
    with pytest.raises(ConfigException, match="Not a number of type SHORT"):
        parse_type("n", "32768", Type.SHORT)
    with pytest.raises(ConfigException, match="Not a number of type LONG"):
        parse_type("n", "1.5", Type.LONG)
    assert parse_type("n", "1.5", Type.DOUBLE) == 1.5


def test_a_setting_defined_twice_and_a_bad_default_are_refused():
    with pytest.raises(ConfigException, match="defined twice"):
        ConfigDef().define("a", Type.INT, 1).define("a", Type.INT, 1)
    with pytest.raises(ConfigException):
        ConfigDef().define("a", Type.INT, 0, Range.between(1, 5))


def test_lists_and_displayed_values():
    v = ValidList.in_("a", "b")
    v("x", ["a"])
    with pytest.raises(ConfigException):
        v("x", ["c"])
    assert display_value(["a", "b"]) == "a,b" and display_value(True) == "true"
    assert display_value(Password("p")) == "[hidden]" and display_value(None) is None
    merged = ConfigDef().define("x", Type.INT, 1).merge(DEF)
    assert merged.names()[0] == "x" and "file" in merged.keys
