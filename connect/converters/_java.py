"""Numbers and settings as Java writes them, shared by the converters: ``Double.toString`` and
``Float.toString`` (what Jackson and ``String.valueOf`` write), the ``converter.type`` setting
every Connect converter declares, and a bounded LRU cache (Kafka's ``LRUCache``)."""
from __future__ import annotations

import base64
import decimal
import math
import struct
from collections import OrderedDict

from josefk.connect.api.config import NO_DEFAULT, ConfigDef, Importance, ValidString
from josefk.connect.api.config import Type as ConfigType
from josefk.connect.api.schema import Struct

_F32 = struct.Struct(">f")


def to_float32(value: float) -> float:
    """``value`` rounded to the nearest float32, as Java's ``(float)`` cast."""
    try:
        return _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _layout(negative: bool, digits: str, exponent: int) -> str:
    """Java's layout of shortest digits ``d.ddd x 10^exponent``: plain from 10^-3 up to
    10^7, ``d.dddE<n>`` beyond, at least one digit after the point."""
    sign = "-" if negative else ""
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = digits[:exponent + 1].ljust(exponent + 1, "0")
            fraction = digits[exponent + 1:] or "0"
        else:
            whole, fraction = "0", "0" * (-exponent - 1) + digits
        return f"{sign}{whole}.{fraction}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return None


def _shortest(text: str) -> tuple[bool, str, int]:
    sign, digits, exp = decimal.Decimal(text).as_tuple()
    exponent = len(digits) + exp - 1
    return bool(sign), "".join(map(str, digits)).rstrip("0") or "0", exponent


def java_double(value: float) -> str:
    """``Double.toString(value)``: 1.0, 0.001, 1.0E7, 1.0E-4, NaN, Infinity."""
    special = _special(value)
    return special if special is not None else _layout(*_shortest(repr(value)))


def java_float(value: float) -> str:
    """``Float.toString(value)``: the fewest digits that read back as the same float32."""
    value = to_float32(value)
    special = _special(value)
    if special is not None:
        return special
    for precision in range(1, 10):
        text = f"{value:.{precision - 1}e}"
        if to_float32(float(text)) == value:
            return _layout(*_shortest(text))
    return _layout(*_shortest(repr(value)))


class LRUCache:
    """At most ``size`` entries; the least recently used goes first."""

    def __init__(self, size: int):
        self.size, self._data = size, OrderedDict()

    def get(self, key):
        value = self._data.get(key)
        if value is not None:
            try:
                self._data.move_to_end(key)
            except KeyError:
                pass  # evicted by another thread meanwhile: the value is still good
        return value

    def put(self, key, value) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self.size:
            self._data.popitem(last=False)

    def __len__(self):
        return len(self._data)


TYPE_CONFIG = "converter.type"


def converter_config_def() -> ConfigDef:
    """Kafka's ``ConverterConfig.newConfigDef()``: the ``converter.type`` every converter has
    (the worker sets it to key, value or header)."""
    return ConfigDef().define(
        TYPE_CONFIG, ConfigType.STRING, NO_DEFAULT, ValidString.in_("key", "value", "header"),
        Importance.LOW, "How this converter will be used.")


def with_type(configs: dict, is_key: bool | None) -> dict:
    """A converter's settings with ``converter.type`` set as Connect sets it: key or value
    from ``configure(configs, isKey)``; a header converter's ``configure(configs)`` (is_key
    None) keeps the worker's ``header``, or sets it."""
    if is_key is None:
        return {TYPE_CONFIG: "header", **configs}
    return {**configs, TYPE_CONFIG: "key" if is_key else "value"}


def java_string(value) -> str:
    """``String.valueOf(value)`` for Connect data: booleans in lower case, doubles as
    ``Double.toString``, lists as ``[a, b]``, maps as ``{k=v}``, structs as
    ``Struct{name=value,...}`` (fields set only), bytes as base64 (Java would print an array
    identity)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, list):
        return "[" + ", ".join(map(java_string, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{java_string(k)}={java_string(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, Struct):
        return "Struct{" + ",".join(
            f"{f.name}={java_string(v)}" for f in value.schema.fields()
            if (v := value.get_without_default(f.name)) is not None) + "}"
    return "null" if value is None else str(value)
