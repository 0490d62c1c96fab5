"""JSON Schema through the ``jsonschema`` library (meta-schema validation of drafts 4 to
2020-12), the canonical string (compact JSON, key order kept, as Confluent stores it; sorted
keys when normalized, as Confluent normalizes), and
compatibility as Confluent defines it for JSON Schema: a reader accepts a writer's data when
every document valid under the writer is valid under the reader. So adding a property is
backward compatible only to a closed content model (``additionalProperties: false``), removing
one only from an open one; a new required property, a narrowed type, a tighter bound or a
shorter enum are not."""
from __future__ import annotations

import json

import jsonschema
import jsonschema.exceptions

from josefk.registry.schema import JSON, InvalidSchema

_BOUNDS_LOW = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_BOUNDS_HIGH = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")


class JsonSchema:
    schema_type = JSON

    def __init__(self, text: str, references: dict[str, "JsonSchema"] | None = None):
        try:
            data = json.loads(text)
        except ValueError as e:
            raise InvalidSchema(f"Invalid schema: not JSON: {e}") from None
        if not isinstance(data, (dict, bool)):
            raise InvalidSchema("Invalid schema: a JSON schema is an object or a boolean")
        try:
            jsonschema.validators.validator_for(data).check_schema(data)
        except jsonschema.exceptions.SchemaError as e:
            raise InvalidSchema(f"Invalid schema: {e.message} at "
                                f"{'/'.join(map(str, e.absolute_path)) or 'the root'}") from None
        self.data = data
        self.references = references or {}
        self.canonical = json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    def normalized(self) -> str:
        return json.dumps(self.data, separators=(",", ":"), ensure_ascii=False, sort_keys=True)

    def read_problems(self, writer: "JsonSchema") -> list[str]:
        problems: list[str] = []
        _Compare(writer, self, problems).check(writer.data, self.data, "#")
        return problems


class _Compare:
    """Whether the writer's documents are all valid under the reader, keyword by keyword."""

    def __init__(self, writer: JsonSchema, reader: JsonSchema, problems: list):
        self.writer, self.reader, self.problems = writer, reader, problems
        self.seen: set = set()

    def _resolve(self, schema, root: JsonSchema, depth: int = 0):
        while isinstance(schema, dict) and "$ref" in schema and depth < 32:
            ref = schema["$ref"]
            doc, _, pointer = ref.partition("#")
            target = root.references.get(doc) if doc else root
            if target is None:
                return schema
            root, schema = target, target.data
            for part in filter(None, pointer.split("/")):
                part = part.replace("~1", "/").replace("~0", "~")
                schema = schema.get(part, {}) if isinstance(schema, dict) else {}
            depth += 1
        return schema

    def fail(self, path: str, kind: str, detail: str):
        self.problems.append(f"{kind} at {path}: {detail}")

    def check(self, w, r, path: str):
        w, r = self._resolve(w, self.writer), self._resolve(r, self.reader)
        key = (id(w), id(r))
        if key in self.seen:  # recursive schemas: each pair once
            return
        self.seen.add(key)
        if r is True or r == {}:
            return
        if w is False:
            return
        if r is False:
            self.fail(path, "TYPE_NARROWED", "the reader accepts nothing")
            return
        if w is True:
            w = {}
        for combinator in ("oneOf", "anyOf"):
            if combinator in w:
                for i, branch in enumerate(w[combinator]):
                    self.check(branch, {k: v for k, v in r.items()}, f"{path}/{combinator}/{i}")
                return
        for combinator in ("oneOf", "anyOf"):
            if combinator in r:
                if not any(self._fits(w, branch, path) for branch in r[combinator]):
                    self.fail(path, "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
                              f"no {combinator} branch of the reader takes the writer's data")
                rest = {k: v for k, v in r.items() if k != combinator}
                if rest:
                    self.check(w, rest, path)
                return
        for i, branch in enumerate(r.get("allOf", ())):
            self.check(w, branch, f"{path}/allOf/{i}")
        if "not" in r and r.get("not") != w.get("not"):
            self.fail(path, "NOT_TYPE_CHANGED", "the reader's 'not' changed")
        self._types(w, r, path)
        self._values(w, r, path)
        self._objects(w, r, path)
        self._arrays(w, r, path)

    def _fits(self, w, r, path) -> bool:
        sub = _Compare(self.writer, self.reader, [])
        sub.check(w, r, path)
        return not sub.problems

    def _types(self, w, r, path):
        rt = _type_set(r)
        if rt is None:
            return
        wt = _type_set(w)
        if wt is None:
            wt = set(_TYPES) if "enum" not in w and "const" not in w else _value_types(w)
        if "number" in rt:
            rt = rt | {"integer"}
        missing = wt - rt
        if missing:
            self.fail(path, "TYPE_NARROWED" if rt < wt or not (rt - wt) else "TYPE_CHANGED",
                      f"the writer allows {sorted(wt)}, the reader {sorted(rt)}")

    def _values(self, w, r, path):
        if "enum" in r or "const" in r:
            allowed = r["enum"] if "enum" in r else [r["const"]]
            written = w["enum"] if "enum" in w else [w["const"]] if "const" in w else None
            if written is None or any(v not in allowed for v in written):
                self.fail(path, "ENUM_ARRAY_NARROWED", "the reader allows fewer values")
        for name in _BOUNDS_LOW:
            if name in r and not (name in w and w[name] >= r[name]):
                self.fail(path, f"{_camel_to_const(name)}_ADDED_OR_INCREASED",
                          f"{name} {w.get(name)} -> {r[name]}")
        for name in _BOUNDS_HIGH:
            if name in r and not (name in w and w[name] <= r[name]):
                self.fail(path, f"{_camel_to_const(name)}_ADDED_OR_DECREASED",
                          f"{name} {w.get(name)} -> {r[name]}")
        for name in ("pattern", "multipleOf", "format"):
            if name in r and w.get(name) != r[name]:
                self.fail(path, f"{_camel_to_const(name)}_CHANGED",
                          f"{name} {w.get(name)!r} -> {r[name]!r}")

    def _objects(self, w, r, path):
        wp, rp = w.get("properties", {}), r.get("properties", {})
        w_extra, r_extra = w.get("additionalProperties", True), r.get("additionalProperties", True)
        for name in r.get("required", ()):
            if name not in w.get("required", ()) and "default" not in (rp.get(name) or {}):
                self.fail(f"{path}/required", "REQUIRED_PROPERTY_ADDED",
                          f"the reader requires {name!r}")
        for name, r_schema in rp.items():
            if name in wp:
                self.check(wp[name], r_schema, f"{path}/properties/{name}")
            elif w_extra is not False:
                if self._fits(w_extra if w_extra is not True else {}, r_schema, path):
                    continue
                self.fail(f"{path}/properties/{name}", "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
                          f"the writer's open content model may hold any {name!r}")
        for name, w_schema in wp.items():
            if name in rp:
                continue
            if r_extra is False:
                self.fail(f"{path}/properties/{name}", "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
                          f"the reader no longer takes {name!r}")
            elif r_extra is not True:
                self.check(w_schema, r_extra, f"{path}/properties/{name}")
        if r_extra is not True and w_extra is not False:
            self.check(w_extra, r_extra, f"{path}/additionalProperties")

    def _arrays(self, w, r, path):
        ri = r.get("items")
        if ri is None:
            return
        wi = w.get("items", True)
        if isinstance(ri, list) or isinstance(wi, list):
            if wi != ri:
                self.fail(f"{path}/items", "ITEMS_CHANGED", "tuple items changed")
            return
        self.check(wi, ri, f"{path}/items")


def _type_set(schema):
    t = schema.get("type") if isinstance(schema, dict) else None
    if t is None:
        return None
    return set(t) if isinstance(t, list) else {t}


def _value_types(schema) -> set:
    values = schema["enum"] if "enum" in schema else [schema["const"]]
    names = {type(None): "null", bool: "boolean", dict: "object", list: "array", str: "string",
             float: "number", int: "integer"}
    return {names.get(type(v), "string") for v in values}


def _camel_to_const(name: str) -> str:
    return "".join("_" + c if c.isupper() else c.upper() for c in name)
