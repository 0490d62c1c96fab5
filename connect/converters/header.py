"""``org.apache.kafka.connect.storage.SimpleHeaderConverter``, Connect's default header
converter: a header's value written as the string Kafka's ``Values.convertToString`` makes,
and read back with the types ``Values.parseString`` infers (booleans, the narrowest integer,
float32/float64, decimals, ISO-8601 dates, times and timestamps, arrays and maps of them,
strings otherwise)."""
from __future__ import annotations

import base64
import datetime
import decimal
import logging
import re

from josefk.connect.api.config import ConfigDef
from josefk.connect.api.errors import DataException
from josefk.connect.api.schema import (Date, Decimal, Schema, SchemaAndValue, SchemaBuilder,
                                       Struct, Time, Timestamp, Type)
from josefk.connect.converters._java import java_double, java_float, to_float32

log = logging.getLogger(__name__)

# ---- Values.convertToString --------------------------------------------------------------


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _temporal(value) -> str:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def _append(out: list, value, embedded: bool, schema: Schema | None) -> None:
    if value is None:
        out.append("null")
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(java_float(value) if schema is not None and schema.type is Type.FLOAT32
                   else java_double(value))
    elif isinstance(value, decimal.Decimal):
        out.append(str(value))
    elif isinstance(value, str):
        out.append(_quoted(value) if embedded else value)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        text = base64.b64encode(value).decode("ascii")
        out.append(f'"{text}"' if embedded else text)
    elif isinstance(value, (list, tuple)):
        item_schema = schema.value_schema if schema is not None else None
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _append(out, item, True, item_schema)
        out.append("]")
    elif isinstance(value, dict):
        key_schema, value_schema = ((schema.key_schema, schema.value_schema)
                                    if schema is not None else (None, None))
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(",")
            _append(out, k, True, key_schema)
            out.append(":")
            _append(out, v, True, value_schema)
        out.append("}")
    elif isinstance(value, Struct):
        out.append("{")
        for i, field in enumerate(value.schema.fields()):
            if i:
                out.append(",")
            out.append(_quoted(field.name) + ":")
            _append(out, value.get(field), True, field.schema)
        out.append("}")
    elif isinstance(value, (datetime.date, datetime.time)):
        out.append(_temporal(value))
    else:
        raise DataException(f"Failed to serialize unexpected value type "
                            f"{type(value).__name__}: {value!r}")


def convert_to_string(schema: Schema | None, value) -> str | None:
    """Kafka's ``Values.convertToString``."""
    if value is None:
        return None
    out: list[str] = []
    _append(out, value, False, schema)
    return "".join(out)


# ---- Values.parseString ------------------------------------------------------------------

_DELIMITERS = frozenset(':,{}[]"')
_JAVA_WHITESPACE = "".join(map(chr, range(33)))  # what Java's String.trim() strips
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_TEMPORAL_NAMES = (Date.LOGICAL_NAME, Time.LOGICAL_NAME, Timestamp.LOGICAL_NAME)
_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)\.(\d\d\d)Z")
_DATE = re.compile(r"(\d\d\d\d)-(\d\d)-(\d\d)")
_BOOLEANS = {"true": SchemaAndValue(Schema.BOOLEAN_SCHEMA, True),
             "false": SchemaAndValue(Schema.BOOLEAN_SCHEMA, False)}
_INTEGERS = ((Schema.INT8_SCHEMA, 8), (Schema.INT16_SCHEMA, 16), (Schema.INT32_SCHEMA, 32),
             (Schema.INT64_SCHEMA, 64))


def _tokenize(text: str) -> list[str]:
    """Kafka's Parser tokens: each unescaped delimiter alone, the runs between them."""
    tokens, start, escaped = [], 0, False
    for i, char in enumerate(text):
        if char == "\\":
            escaped = not escaped
            continue
        if char in _DELIMITERS and not escaped:
            if start < i:
                tokens.append(text[start:i])
            tokens.append(char)
            start = i + 1
        escaped = False
    if start < len(text):
        tokens.append(text[start:])
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.original, self.tokens, self.pos, self.previous = text, _tokenize(text), 0, None

    def has_next(self) -> bool:
        return self.pos < len(self.tokens)

    def next(self) -> str:
        self.previous = self.tokens[self.pos]
        self.pos += 1
        return self.previous

    def next_text(self, n: int) -> str | None:
        """The text of the next ``n`` tokens, or None (and nothing consumed) if fewer."""
        if self.pos + n > len(self.tokens):
            return None
        text = "".join(self.tokens[self.pos:self.pos + n])
        self.pos += n
        return text

    def can_consume(self, expected: str) -> bool:
        while (self.pos + 1 < len(self.tokens)
               and not self.tokens[self.pos].strip(_JAVA_WHITESPACE)):
            self.pos += 1
        if self.has_next() and self.tokens[self.pos].strip(_JAVA_WHITESPACE) == expected:
            self.pos += 1
            return True
        return False


def _common_schema(previous: Schema | None, latest: SchemaAndValue | None) -> Schema | None:
    """Kafka's ``commonSchemaFor``: numbers widen; other types must agree."""
    if latest is None:
        return previous
    if previous is None:
        return latest.schema
    new = latest.schema
    if previous.type is not new.type:
        order = (Type.INT8, Type.INT16, Type.INT32, Type.INT64, Type.FLOAT32, Type.FLOAT64)
        if previous.type in order and new.type in order:
            return new if order.index(new.type) > order.index(previous.type) else previous
        return None
    if previous.optional == new.optional:
        return previous if previous.optional else new
    return previous if previous == new else None


def _align(schema: Schema, value):
    if value is None:
        return None
    if schema.type in (Type.INT8, Type.INT16, Type.INT32, Type.INT64) and schema.name is None:
        return int(value)
    if schema.type is Type.FLOAT32:
        return to_float32(float(value))
    if schema.type is Type.FLOAT64:
        return float(value)
    return value


def _parse_temporal(token: str) -> SchemaAndValue | None:
    token = token.replace("\\:", ":")
    try:
        if len(token) == 13 and (m := _TIME.fullmatch(token)):
            h, mi, s, ms = map(int, m.groups())
            return SchemaAndValue(Time.SCHEMA, datetime.time(h, mi, s, ms * 1000))
        if len(token) == 24 and token[10] == "T" and (d := _DATE.fullmatch(token[:10])) \
                and (m := _TIME.fullmatch(token[11:])):
            h, mi, s, ms = map(int, m.groups())
            return SchemaAndValue(Timestamp.SCHEMA, datetime.datetime(
                *map(int, d.groups()), h, mi, s, ms * 1000, tzinfo=datetime.timezone.utc))
        if len(token) == 10 and (d := _DATE.fullmatch(token)):
            return SchemaAndValue(Date.SCHEMA, datetime.date(*map(int, d.groups())))
    except ValueError:
        return None  # digits in the right places, but no such date or time
    return None


def _parse_number(token: str) -> SchemaAndValue | None:
    if not _NUMBER.fullmatch(token):
        return None
    number = decimal.Decimal(token)
    if number == number.to_integral_value():
        whole = int(number)
        for schema, bits in _INTEGERS:
            if -(1 << (bits - 1)) <= whole < (1 << (bits - 1)):
                return SchemaAndValue(schema, whole)
    scale = -number.as_tuple().exponent
    if scale != 0:
        as_float = to_float32(float(number))
        if abs(as_float) != float("inf"):
            return SchemaAndValue(Schema.FLOAT32_SCHEMA, as_float)
        as_double = float(number)
        if abs(as_double) != float("inf"):
            return SchemaAndValue(Schema.FLOAT64_SCHEMA, as_double)
    return SchemaAndValue(Decimal.schema(scale), number)


def _literal(parser: _Parser, embedded: bool, literal: str) -> bool:
    start = parser.pos
    if parser.can_consume(literal) and (embedded or not parser.has_next()):
        return True
    parser.pos = start
    return False


def _parse_array(parser: _Parser) -> SchemaAndValue:
    items, element_schema = [], None
    while parser.has_next():
        if parser.can_consume("]"):
            if element_schema is None:
                return SchemaAndValue(SchemaBuilder.array(None).build(), items)
            return SchemaAndValue(SchemaBuilder.array(element_schema).build(),
                                  [_align(element_schema, item) for item in items])
        if parser.can_consume(","):
            raise DataException("Unable to parse an empty array element: " + parser.original)
        element = _parse(parser, True)
        element_schema = _common_schema(element_schema, element)
        items.append(element.value if element is not None else None)
        mark = parser.pos
        if parser.can_consume("]"):
            parser.pos = mark
        elif not parser.can_consume(","):
            raise DataException("Array elements missing ',' delimiter")
    if parser.previous == ",":
        raise DataException("Array is missing element after ',': " + parser.original)
    raise DataException("Array is missing terminating ']': " + parser.original)


def _parse_map(parser: _Parser) -> SchemaAndValue:
    entries, key_schema, value_schema = {}, None, None
    while parser.has_next():
        if parser.can_consume("}"):
            if key_schema is None:
                return SchemaAndValue(SchemaBuilder.map(None, None).build(), entries)
            keys = {_align(key_schema, k): v for k, v in entries.items()}
            if value_schema is None:
                return SchemaAndValue(SchemaBuilder.map(key_schema, None).build(), keys)
            return SchemaAndValue(SchemaBuilder.map(key_schema, value_schema).build(),
                                  {k: _align(value_schema, v) for k, v in keys.items()})
        if parser.can_consume(","):
            raise DataException("Unable to parse a map entry with no key or value: "
                                + parser.original)
        key = _parse(parser, True)
        if key is None or key.value is None:
            raise DataException("Map entry may not have a null key: " + parser.original)
        if not parser.can_consume(":"):
            raise DataException(f"Map entry is missing ':' at {parser.pos} in {parser.original}")
        value = _parse(parser, True)
        entries[key.value] = value.value if value is not None else None
        parser.can_consume(",")
        key_schema = _common_schema(key_schema, key)
        value_schema = _common_schema(value_schema, value)
    if parser.previous == ",":
        raise DataException("Map is missing element after ',': " + parser.original)
    raise DataException("Map is missing terminating '}': " + parser.original)


def _parse(parser: _Parser, embedded: bool) -> SchemaAndValue | None:
    if not parser.has_next():
        return None
    if embedded and parser.can_consume('"'):
        parts = []
        while parser.has_next() and not parser.can_consume('"'):
            parts.append(parser.next())
        content = "".join(parts)
        parsed = parse_string(content)
        if parsed.schema is not None and parsed.schema.name in _TEMPORAL_NAMES:
            return parsed
        return SchemaAndValue(Schema.STRING_SCHEMA, content)
    if _literal(parser, embedded, "null"):
        return None
    for literal, result in _BOOLEANS.items():
        if _literal(parser, embedded, literal):
            return result
    start = parser.pos
    try:
        if parser.can_consume("["):
            return _parse_array(parser)
        if parser.can_consume("{"):
            return _parse_map(parser)
    except DataException:
        log.debug("Unable to parse %r as a map or an array; reverting to string",
                  parser.original)
        parser.pos = start
    token = parser.next()
    if not token.strip(_JAVA_WHITESPACE):
        return SchemaAndValue(Schema.STRING_SCHEMA, token)
    token = token.strip(_JAVA_WHITESPACE)
    first = token[0]
    if first.isdigit():
        mark = parser.pos
        rest = parser.next_text(4)
        temporal = _parse_temporal(token + rest) if rest is not None else None
        if temporal is not None:
            return temporal
        parser.pos = mark
        temporal = _parse_temporal(token)
        if temporal is not None:
            return temporal
    if first.isdigit() or first in "+-":
        number = _parse_number(token)
        if number is not None:
            return number
    if embedded:
        raise DataException("Failed to parse embedded value")
    return SchemaAndValue(Schema.STRING_SCHEMA, parser.original)


def parse_string(text: str | None) -> SchemaAndValue:
    """Kafka's ``Values.parseString``: the schema and value a string most likely holds."""
    if text is None:
        return SchemaAndValue.NULL
    if not text:
        return SchemaAndValue(Schema.STRING_SCHEMA, text)
    return _parse(_Parser(text), False) or SchemaAndValue.NULL


class SimpleHeaderConverter:
    """Header values as strings (UTF-8); read back with the type their text suggests, or as
    the bytes they are when they are not text."""

    def configure(self, configs: dict) -> None:
        """No settings."""

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:
        """Nothing to release."""

    def from_connect_header(self, topic: str, header_key: str, schema: Schema | None,
                            value) -> bytes | None:
        if value is None:
            return None
        try:
            return convert_to_string(schema, value).encode("utf-8")
        except (RecursionError, UnicodeEncodeError) as e:  # a list holding itself, a lone surrogate
            raise DataException(f"Failed to serialize value for header '{header_key}' on topic "
                                f"'{topic}': {type(e).__name__}: {e}") from e

    def to_connect_header(self, topic: str, header_key: str,
                          value: bytes | None) -> SchemaAndValue:
        if value is None:
            return SchemaAndValue.NULL
        try:
            return parse_string(bytes(value).decode("utf-8"))
        except (UnicodeDecodeError, DataException, ValueError, TypeError) as e:
            log.warning("Failed to deserialize value for header '%s' on topic '%s', so using "
                        "byte array: %s", header_key, topic, e)
            return SchemaAndValue(Schema.BYTES_SCHEMA, bytes(value))
