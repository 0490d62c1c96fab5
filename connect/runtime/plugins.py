"""Plug-in discovery and class names, as Connect's ``Plugins``: connectors, converters, header
converters, transformations and predicates are found through their entry-point groups (the
entry point's name is the class name the REST API shows, a Java one for Kafka's own plug-ins),
and a setting may name one by that full name, its simple name, a connector's simple name
without ``Connector`` (``FileStreamSource``), or a Python path (``pkg.module.Class`` or
``pkg.module:Class``) that need not be registered."""
from __future__ import annotations

import importlib
import logging
from importlib.metadata import entry_points

from josefk.connect.api.config import ConfigDef, ConfigException, NO_DEFAULT, display_value
from josefk.connect.api.connector import Connector, SinkConnector, SourceConnector
from josefk.connect.runtime.herder import BadRequest, NotFound

log = logging.getLogger("josefk.connect.plugins")

GROUPS = {"connector": "josefk.connect.plugins",
          "converter": "josefk.connect.converters",
          "header_converter": "josefk.connect.header_converters",
          "transformation": "josefk.connect.transforms",
          "predicate": "josefk.connect.predicates"}
# What Connect calls each kind in messages (``implements Connector``).
_JAVA_KIND = {"connector": "Connector", "converter": "Converter",
              "header_converter": "HeaderConverter", "transformation": "Transformation",
              "predicate": "Predicate"}
UNDEFINED_VERSION = "undefined"


def plugin_type(kind: str, cls: type) -> str:
    """The REST API's ``type``: source/sink for connectors, else the kind."""
    if kind != "connector":
        return kind
    if issubclass(cls, SourceConnector):
        return "source"
    if issubclass(cls, SinkConnector):
        return "sink"
    return "unknown"


def plugin_version(cls: type) -> str:
    try:
        version = cls().version() if hasattr(cls, "version") else UNDEFINED_VERSION
    except Exception:  # a plug-in that cannot be built without settings
        return UNDEFINED_VERSION
    return version or UNDEFINED_VERSION


def config_key_info(key) -> dict:
    """A declared setting as Connect's ConfigKeyInfo (the REST body's ``definition``)."""
    required = key.default is NO_DEFAULT
    return {"name": key.name, "type": key.type.value, "required": required,
            "default_value": None if required else display_value(key.default),
            "importance": key.importance.value, "documentation": key.documentation,
            "group": key.group, "width": key.width.value, "display_name": key.display_name,
            "dependents": list(key.dependents), "order": key.order_in_group}


def import_class(path: str):
    """The object at ``pkg.module:Name`` or ``pkg.module.Name``, or None."""
    module, sep, name = path.partition(":")
    if not sep:
        module, _, name = path.rpartition(".")
    if not module or not name:
        return None
    try:
        found = importlib.import_module(module)
        for part in name.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError, ValueError):
        return None
    return found if isinstance(found, type) else None


class Plugins:
    """The plug-ins installed (entry points), by kind: {class name: class}. ``extra`` adds
    plug-ins by kind without entry points (tests, embedding)."""

    def __init__(self, extra: dict[str, dict[str, type]] | None = None):
        self.classes: dict[str, dict[str, type]] = {kind: {} for kind in GROUPS}
        for kind, group in GROUPS.items():
            for ep in entry_points(group=group):
                try:
                    self.classes[kind][ep.name] = ep.load()
                except Exception as e:  # a broken plug-in must not stop the worker
                    log.warning("Cannot load plug-in %s (%s): %s", ep.name, ep.value, e)
        for kind, classes in (extra or {}).items():
            self.classes[kind].update(classes)
        self._aliases = {kind: self._alias_table(kind) for kind in GROUPS}

    def _alias_table(self, kind: str) -> dict[str, str]:
        """Alias -> class name: simple names (and connectors' without ``Connector``) and
        Python paths that name one class only, as Connect's PluginUtils.computeAliases."""
        candidates: dict[str, dict[type, str]] = {}
        for name, cls in self.classes[kind].items():
            simple = name.rsplit(".", 1)[-1].rsplit(":", 1)[-1]
            names = {simple, f"{cls.__module__}.{cls.__qualname__}",
                     f"{cls.__module__}:{cls.__qualname__}"}
            if kind == "connector" and simple.endswith("Connector") and simple != "Connector":
                names.add(simple[:-len("Connector")])
            for alias in names:
                candidates.setdefault(alias, {}).setdefault(cls, name)
        return {alias: next(iter(classes.values())) for alias, classes in candidates.items()
                if len(classes) == 1 and alias not in self.classes[kind]}

    def _listed(self, kind: str) -> dict[str, type]:
        """One name per class, its fullest (a Java class name over a simple-name alias)."""
        by_class: dict[type, str] = {}
        for name, cls in self.classes[kind].items():
            if cls not in by_class or name.count(".") > by_class[cls].count("."):
                by_class[cls] = name
        return {name: cls for cls, name in by_class.items()}

    def class_name(self, kind: str, name: str) -> str | None:
        """The registered class name ``name`` refers to (None: not a registered one)."""
        if name in self.classes[kind]:
            return name
        return self._aliases[kind].get(name)

    def find(self, kind: str, name: str) -> type | None:
        """The class ``name`` refers to, registered or by Python path; None if none."""
        if not isinstance(name, str):
            return name if isinstance(name, type) else None
        registered = self.class_name(kind, name.strip())
        if registered is not None:
            return self.classes[kind][registered]
        cls = import_class(name.strip())
        if cls is None:
            return None
        if kind == "connector" and not issubclass(cls, Connector):
            return None
        return cls

    def connector_class(self, name: str) -> type:
        cls = self.find("connector", name)
        if cls is None:
            available = ", ".join(sorted(self._listed("connector")))
            raise ConfigException(
                f"Failed to find any class that implements Connector and which name matches "
                f"{name}, available connectors are: {available}")
        return cls

    def new_connector(self, name: str) -> Connector:
        return self.connector_class(name)()

    def new_plugin(self, kind: str, name: str):
        """A new instance of the ``kind`` plug-in ``name``; ConfigException as Connect's
        ``Class X could not be found.`` when there is none."""
        if kind == "connector":
            return self.new_connector(name)
        cls = self.find(kind, name)
        if cls is None:
            raise ConfigException(f"Failed to find any class that implements "
                                  f"{_JAVA_KIND[kind]} and which name matches {name}")
        return cls()

    def connector_plugins(self, connectors_only: bool) -> list[dict]:
        """``GET /connector-plugins``: ``[{"class", "type", "version"}]`` sorted by class."""
        kinds = ["connector"] if connectors_only else list(GROUPS)
        found = []
        for kind in kinds:
            for name, cls in self._listed(kind).items():
                found.append({"class": name, "type": plugin_type(kind, cls),
                              "version": plugin_version(cls)})
        return sorted(found, key=lambda p: (p["class"], p["type"]))

    def plugin_config(self, name: str, base=lambda cls: None) -> list[dict]:
        """KIP-769's ``GET /connector-plugins/{plugin}/config``: the plug-in's own settings,
        then those of ``base(cls)`` (a connector's framework settings) it does not declare."""
        for kind in GROUPS:
            cls = self.find(kind, name)
            if cls is not None and (kind != "connector" or issubclass(cls, Connector)):
                try:
                    definition = cls().config()
                except Exception as e:
                    raise BadRequest(f"Plugin {name} cannot describe its settings: {e}") from e
                if not isinstance(definition, ConfigDef):
                    raise BadRequest(f"Plugin {name} does not declare its settings")
                keys = dict(definition.keys)
                for key_name, key in getattr(base(cls), "keys", {}).items():
                    keys.setdefault(key_name, key)
                return [config_key_info(key) for key in keys.values()]
        raise NotFound(f"Unknown plugin {name}.")
