import pytest

from josefk.connect.api.config import ConfigException
from josefk.connect.connectors.file_stream import FileStreamSinkConnector, FileStreamSourceConnector
from josefk.connect.runtime.connector_config import plugin_base_def
from josefk.connect.runtime.herder import NotFound
from josefk.connect.runtime.plugins import Plugins
from tests.connect.runtime import doubles


def test_a_connector_is_found_by_every_name_connect_accepts():
    plugins = Plugins()
    for name in ("org.apache.kafka.connect.file.FileStreamSourceConnector",
                 "FileStreamSourceConnector", "FileStreamSource",
                 "josefk.connect.connectors.file_stream.FileStreamSourceConnector",
                 "josefk.connect.connectors.file_stream:FileStreamSourceConnector"):
        assert plugins.connector_class(name) is FileStreamSourceConnector, name
    assert plugins.find("connector", "json:JSONDecoder") is None  # not a Connector


def test_an_unknown_connector_gets_connects_message():
    with pytest.raises(ConfigException) as failure:
        Plugins().new_connector("Nope")
    assert str(failure.value).startswith(
        "Failed to find any class that implements Connector and which name matches Nope, "
        "available connectors are: ")
    assert "org.apache.kafka.connect.file.FileStreamSinkConnector" in str(failure.value)


def test_connector_plugins_in_the_rest_shape():
    plugins = Plugins(doubles.PLUGINS)
    listed = plugins.connector_plugins(connectors_only=True)
    assert {"class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "type": "sink",
            "version": "3.6.0"} in listed
    assert [p["class"] for p in listed] == sorted(p["class"] for p in listed)
    everything = plugins.connector_plugins(connectors_only=False)
    assert {"class": "tests.FlakyConverter", "type": "converter",
            "version": "undefined"} in everything
    kinds = {(p["class"], p["type"]) for p in everything}
    assert ("org.apache.kafka.connect.storage.StringConverter", "header_converter") in kinds
    assert ("org.apache.kafka.connect.storage.StringConverter", "converter") in kinds
    assert ("org.apache.kafka.connect.transforms.RegexRouter", "transformation") in kinds


def test_plugin_config_lists_the_plugins_settings_then_the_frameworks():
    plugins = Plugins()
    names = [k["name"] for k in plugins.plugin_config("FileStreamSink", plugin_base_def)]
    assert names[0] == "file" and "topics" in names and "errors.tolerance" in names
    assert plugins.plugin_config("FileStreamSinkConnector") == [{
        "name": "file", "type": "STRING", "required": False, "default_value": None,
        "importance": "HIGH", "documentation": "Destination filename. If not specified, the "
        "standard output will be used", "group": None, "width": "NONE", "display_name": "file",
        "dependents": [], "order": -1}]
    assert issubclass(plugins.connector_class("FileStreamSink"), FileStreamSinkConnector)
    with pytest.raises(NotFound, match="Unknown plugin Nope."):
        plugins.plugin_config("Nope")
