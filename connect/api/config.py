"""Settings declared as data and checked as Kafka's ``ConfigDef`` checks them: each has a
type, a default (or none: required), a validator, an importance, documentation and a place in
a group. ``parse`` gives typed values or raises ``ConfigException`` with Kafka's message;
``validate`` gives every setting's ``ConfigValue`` with its errors, what the REST API's
``/connector-plugins/{plugin}/config/validate`` answers."""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from josefk.connect.api.errors import ConnectException


class ConfigException(ConnectException):
    """A setting with a wrong value: Kafka's message ``Invalid value V for configuration N:
    why`` (or the message given alone)."""

    def __init__(self, name: str, value: Any = None, message: str | None = None):
        if value is None and message is None:
            text = name  # a message alone, as Java's ConfigException(String)
        else:
            text = f"Invalid value {_show(value)} for configuration {name}" + (
                f": {message}" if message else "")
        super().__init__(text)
        self.name = name


def _show(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(_show, value)) + "]"
    return "null" if value is None else str(value)


class Type(enum.Enum):
    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(enum.Enum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class Width(enum.Enum):
    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"


class Password:
    """A secret: printed as ``[hidden]``; ``.value`` is the text."""
    HIDDEN = "[hidden]"

    __slots__ = ("value",)

    def __init__(self, value: str):
        self.value = value

    def __str__(self):
        return self.HIDDEN

    __repr__ = __str__

    def __eq__(self, other):
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self):
        return hash(self.value)


NO_DEFAULT = object()
_BOUNDS = {Type.INT: 32, Type.SHORT: 16, Type.LONG: 64}


def parse_type(name: str, value, type: Type):
    """One setting's value as ``type`` (strings as in a properties file or a connector's JSON
    config; values of the right type pass), or ConfigException as Kafka's parseType."""
    if value is None:
        return None
    text = value.strip() if isinstance(value, str) else value
    if type is Type.BOOLEAN:
        if isinstance(text, bool):
            return text
        if isinstance(text, str) and text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ConfigException(name, value, "Expected value to be either true or false")
    if type in (Type.STRING, Type.CLASS):
        if isinstance(text, str):
            return text
        if type is Type.CLASS and isinstance(text, type_):
            return text
        raise ConfigException(name, value, f"Expected value to be a string, but it was a "
                                           f"{_java_type(value)}")
    if type is Type.PASSWORD:
        if isinstance(value, Password):
            return value
        if isinstance(value, str):
            return Password(value)
        raise ConfigException(name, value, "Expected value to be a string, but it was a "
                                           + _java_type(value))
    if type in _BOUNDS:
        bits = _BOUNDS[type]
        try:
            if isinstance(text, bool) or isinstance(text, float):
                raise ValueError
            number = int(text, 10) if isinstance(text, str) else int(text)
        except (TypeError, ValueError):
            raise ConfigException(name, value, f"Not a number of type {type.value}") from None
        if not -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
            raise ConfigException(name, value, f"Not a number of type {type.value}")
        return number
    if type is Type.DOUBLE:
        try:
            if isinstance(text, bool):
                raise ValueError
            return float(text)
        except (TypeError, ValueError):
            raise ConfigException(name, value, "Not a number of type DOUBLE") from None
    if type is Type.LIST:
        if isinstance(text, (list, tuple)):
            return list(text)
        if isinstance(text, str):
            return [] if not text else [item.strip() for item in re.split(r"\s*,\s*", text)]
        raise ConfigException(name, value, "Expected a comma separated list.")
    raise ConfigException(name, value, "Unknown type.")


type_ = type


def _java_type(value) -> str:
    return {bool: "Boolean", int: "Integer", float: "Double", list: "List"}.get(
        type_(value), type_(value).__name__)


# ---- validators: callables (name, value) that raise ConfigException --------------------------

class Validator:
    def __call__(self, name: str, value) -> None:
        raise NotImplementedError

    def __str__(self):
        return ""


class Range(Validator):
    def __init__(self, min=None, max=None):
        self.min, self.max = min, max

    @classmethod
    def at_least(cls, min):
        return cls(min=min)

    @classmethod
    def between(cls, min, max):
        return cls(min=min, max=max)

    def __call__(self, name, value):
        if value is None:
            raise ConfigException(name, None, "Value must be non-null")
        if self.min is not None and value < self.min:
            raise ConfigException(name, value, f"Value must be at least {self.min}")
        if self.max is not None and value > self.max:
            raise ConfigException(name, value, f"Value must be no more than {self.max}")

    def __str__(self):
        if self.max is None:
            return f"[{self.min},...]"
        if self.min is None:
            return f"[...,{self.max}]"
        return f"[{self.min},...,{self.max}]"


class ValidString(Validator):
    def __init__(self, values: Iterable[str], case_sensitive: bool = True):
        self.values, self.case_sensitive = list(values), case_sensitive

    @classmethod
    def in_(cls, *values: str):
        return cls(values)

    @classmethod
    def in_ignore_case(cls, *values: str):
        return cls(values, case_sensitive=False)

    def __call__(self, name, value):
        ok = (value in self.values if self.case_sensitive
              else isinstance(value, str) and value.lower() in
              [v.lower() for v in self.values])
        if not ok:
            raise ConfigException(name, value, "String must be one of"
                                  + (" (case insensitive)" if not self.case_sensitive else "")
                                  + ": " + ", ".join(self.values))

    def __str__(self):
        return "[" + ", ".join(self.values) + "]"


class ValidList(Validator):
    def __init__(self, values: Iterable[str], allow_empty: bool = True):
        self.values, self.allow_empty = list(values), allow_empty

    @classmethod
    def in_(cls, *values: str):
        return cls(values)

    def __call__(self, name, value):
        if not value and not self.allow_empty:
            raise ConfigException(name, value, "Configuration must not be empty")
        for item in value or []:
            if item not in self.values:
                raise ConfigException(name, item, "String must be one of: "
                                      + ", ".join(self.values))

    def __str__(self):
        return "[" + ", ".join(self.values) + "]"


class NonEmptyString(Validator):
    """An empty string is refused; null passes (a missing required setting says so itself),
    as Kafka's."""

    def __call__(self, name, value):
        if value is not None and not str(value).strip():
            raise ConfigException(name, value, "String must be non-empty")

    def __str__(self):
        return "non-empty string"


class NonNull(Validator):
    def __call__(self, name, value):
        if value is None:
            raise ConfigException(name, None, "entry must be non null")

    def __str__(self):
        return "non-null string"


class LambdaValidator(Validator):
    """A validator from a function ``(name, value)`` and its description."""

    def __init__(self, check: Callable[[str, Any], None], description: str = ""):
        self.check, self.description = check, description

    def __call__(self, name, value):
        self.check(name, value)

    def __str__(self):
        return self.description


@dataclass
class ConfigKey:
    """One declared setting (Kafka's ConfigDef.ConfigKey)."""
    name: str
    type: Type
    default: Any
    validator: Validator | None
    importance: Importance
    documentation: str
    group: str | None = None
    order_in_group: int = -1
    width: Width = Width.NONE
    display_name: str | None = None
    dependents: list[str] = field(default_factory=list)
    recommender: Callable[[str, dict], list] | None = None
    internal: bool = False

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT


@dataclass
class ConfigValue:
    """A setting's validation result (Kafka's ConfigValue)."""
    name: str
    value: Any = None
    recommended_values: list = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    visible: bool = True


class ConfigDef:
    """Declared settings: ``ConfigDef().define("file", ConfigType.STRING, None,
    importance=Importance.HIGH, documentation="...")``."""

    def __init__(self, base: "ConfigDef | None" = None):
        self.keys: dict[str, ConfigKey] = dict(base.keys) if base else {}
        self.groups: list[str] = list(base.groups) if base else []

    def define(self, name: str, type: Type, default=NO_DEFAULT, validator: Validator | None = None,
               importance: Importance = Importance.MEDIUM, documentation: str = "",
               group: str | None = None, order_in_group: int = -1, width: Width = Width.NONE,
               display_name: str | None = None, dependents: Iterable[str] = (),
               recommender=None, internal: bool = False) -> "ConfigDef":
        if name in self.keys:
            raise ConfigException(f"Configuration {name} is defined twice.")
        if group is not None and group not in self.groups:
            self.groups.append(group)
        parsed = default
        if default is not NO_DEFAULT and default is not None:
            parsed = parse_type(name, default, type)
            if validator is not None:
                validator(name, parsed)
        self.keys[name] = ConfigKey(name, type, parsed, validator, importance, documentation,
                                    group, order_in_group, width, display_name or name,
                                    list(dependents), recommender, internal)
        return self

    def define_internal(self, name: str, type: Type, default=NO_DEFAULT,
                        importance: Importance = Importance.LOW) -> "ConfigDef":
        return self.define(name, type, default, importance=importance, internal=True)

    def names(self) -> list[str]:
        return list(self.keys)

    def merge(self, other: "ConfigDef") -> "ConfigDef":
        """This definition plus ``other``'s keys it does not have (a connector's own settings
        added to the worker's base ones)."""
        merged = ConfigDef(self)
        for name, key in other.keys.items():
            if name not in merged.keys:
                merged.keys[name] = key
                if key.group is not None and key.group not in merged.groups:
                    merged.groups.append(key.group)
        return merged

    def _value(self, key: ConfigKey, props: dict):
        if key.name in props:
            value = parse_type(key.name, props[key.name], key.type)
        elif key.has_default:
            value = key.default
        else:
            raise ConfigException(f'Missing required configuration "{key.name}" which has '
                                  f"no default value.")
        if key.validator is not None:
            key.validator(key.name, value)
        return value

    def parse(self, props: dict) -> dict:
        """Every declared setting's typed value (defaults where not given); ConfigException
        for the first missing or wrong one. Undeclared keys are kept as they are."""
        parsed = dict(props)
        for key in self.keys.values():
            parsed[key.name] = self._value(key, props)
        return parsed

    def validate(self, props: dict) -> dict[str, ConfigValue]:
        """Every declared setting's ConfigValue as Kafka's ConfigDef.validate gives it: the
        parsed value (None where it does not parse or is missing), each problem as an error
        message (the validator runs on the value whatever it is, as Kafka's), and the
        recommender's values."""
        results = {}
        parsed = {}
        for key in self.keys.values():
            result = ConfigValue(key.name)
            value = None
            if key.name in props:
                try:
                    value = parse_type(key.name, props[key.name], key.type)
                except ConfigException as e:
                    result.errors.append(str(e))
            elif not key.has_default:
                result.errors.append(f'Missing required configuration "{key.name}" which has '
                                     f"no default value.")
            else:
                value = key.default
            if key.validator is not None:
                try:
                    key.validator(key.name, value)
                except ConfigException as e:
                    result.errors.append(str(e))
            result.value = parsed[key.name] = value
            results[key.name] = result
        for key in self.keys.values():
            if key.recommender is not None:
                try:
                    results[key.name].recommended_values = list(
                        key.recommender(key.name, parsed))
                except ConfigException as e:
                    results[key.name].errors.append(str(e))
        return results


def display_value(value) -> str | None:
    """A typed setting as Kafka shows it in the REST API (lists comma-joined, booleans in
    lower case, passwords hidden)."""
    if value is None or value is NO_DEFAULT:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)
