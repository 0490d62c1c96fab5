"""Single message transforms and predicates as Apache Kafka ships them
(``org.apache.kafka.connect.transforms``), with their class names as aliases.

``TRANSFORMS`` and ``PREDICATES`` map Kafka's class names
(``org.apache.kafka.connect.transforms.InsertField$Value``) and their simple names
(``InsertField$Value``, ``RegexRouter``) to the Python classes; ``ABSTRACT`` names the classes
that only exist as their ``$Key``/``$Value`` variants. ``chain`` builds a connector's chain
of transforms with their predicates from its settings."""
from josefk.connect.transforms.cast import Cast
from josefk.connect.transforms.fields import ExtractField, HoistField, ValueToKey
from josefk.connect.transforms.filter import Filter
from josefk.connect.transforms.flatten import Flatten
from josefk.connect.transforms.headers import DropHeaders, HeaderFrom, InsertHeader
from josefk.connect.transforms.insert_field import InsertField
from josefk.connect.transforms.mask_field import MaskField
from josefk.connect.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from josefk.connect.transforms.replace_field import ReplaceField
from josefk.connect.transforms.routers import RegexRouter, TimestampRouter
from josefk.connect.transforms.timestamp_converter import TimestampConverter

KAFKA_PACKAGE = "org.apache.kafka.connect.transforms"
_KEY_VALUE = [Cast, ExtractField, Flatten, HeaderFrom, HoistField, InsertField, MaskField,
              ReplaceField, TimestampConverter]
_SINGLE = [DropHeaders, Filter, InsertHeader, RegexRouter, TimestampRouter, ValueToKey]


def _aliases(package: str, classes: dict[str, type]) -> dict[str, type]:
    table = {}
    for simple, cls in classes.items():
        table[f"{package}.{simple}"] = cls
        table[simple] = cls
    return table


TRANSFORMS: dict[str, type] = _aliases(KAFKA_PACKAGE, {
    **{f"{cls.__name__}${side}": getattr(cls, side) for cls in _KEY_VALUE
       for side in ("Key", "Value")},
    **{cls.__name__: cls for cls in _SINGLE}})
PREDICATES: dict[str, type] = _aliases(KAFKA_PACKAGE + ".predicates", {
    cls.__name__: cls for cls in (HasHeaderKey, RecordIsTombstone, TopicNameMatches)})
ABSTRACT: dict[str, type] = _aliases(KAFKA_PACKAGE, {cls.__name__: cls for cls in _KEY_VALUE})

__all__ = ["TRANSFORMS", "PREDICATES", "ABSTRACT", "Cast", "DropHeaders", "ExtractField",
           "Filter", "Flatten", "HasHeaderKey", "HeaderFrom", "HoistField", "InsertField",
           "InsertHeader", "MaskField", "RecordIsTombstone", "RegexRouter", "ReplaceField",
           "TimestampConverter", "TimestampRouter", "TopicNameMatches", "ValueToKey"]
