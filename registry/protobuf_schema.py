"""Protobuf schemas: ``.proto`` text (parsed with ``proto-schema-parser``) or a base64
FileDescriptorProto (what confluent-kafka's Python serializer registers) become one
FileDescriptorProto, checked by building it into a ``protobuf`` DescriptorPool with its
references and the well-known types. The canonical string is the ``.proto`` text printed from
it (types fully qualified); ``format=serialized`` answers the descriptor in base64.

Compatibility follows Confluent's Protobuf rules: fields are matched by number; adding or
removing an optional field, renaming a field, adding or removing messages, enums, enum
constants and oneofs are compatible; removing or adding a ``required`` field, changing a
field's kind (scalar, message, map) or its scalar group (int32/int64/uint32/uint64/bool and
enums; sint32/sint64; string/bytes; fixed32/sfixed32; fixed64/sfixed64; float; double),
changing its message type, changing the package, moving several fields into one oneof or a
field into an existing oneof, and removing a oneof's field are not."""
from __future__ import annotations

import base64
import binascii
import functools
import json

from antlr4.error.ErrorListener import ErrorListener
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError
from proto_schema_parser import ast
from proto_schema_parser.parser import Parser

from josefk.registry.schema import PROTOBUF, InvalidSchema

F = descriptor_pb2.FieldDescriptorProto
SCALARS = {"double": F.TYPE_DOUBLE, "float": F.TYPE_FLOAT, "int64": F.TYPE_INT64,
           "uint64": F.TYPE_UINT64, "int32": F.TYPE_INT32, "fixed64": F.TYPE_FIXED64,
           "fixed32": F.TYPE_FIXED32, "bool": F.TYPE_BOOL, "string": F.TYPE_STRING,
           "bytes": F.TYPE_BYTES, "uint32": F.TYPE_UINT32, "sfixed32": F.TYPE_SFIXED32,
           "sfixed64": F.TYPE_SFIXED64, "sint32": F.TYPE_SINT32, "sint64": F.TYPE_SINT64}
SCALAR_NAMES = {v: k for k, v in SCALARS.items()}
LABELS = {ast.FieldCardinality.OPTIONAL: F.LABEL_OPTIONAL,
          ast.FieldCardinality.REQUIRED: F.LABEL_REQUIRED,
          ast.FieldCardinality.REPEATED: F.LABEL_REPEATED, None: F.LABEL_OPTIONAL}
# Wire-compatible scalar groups (Protobuf's "updating a message type" rules), enums with ints.
_GROUP = {F.TYPE_INT32: "number", F.TYPE_INT64: "number", F.TYPE_UINT32: "number",
          F.TYPE_UINT64: "number", F.TYPE_BOOL: "number", F.TYPE_ENUM: "number",
          F.TYPE_SINT32: "signed", F.TYPE_SINT64: "signed", F.TYPE_STRING: "string",
          F.TYPE_BYTES: "string", F.TYPE_FIXED32: "fixed32", F.TYPE_SFIXED32: "fixed32",
          F.TYPE_FIXED64: "fixed64", F.TYPE_SFIXED64: "fixed64", F.TYPE_FLOAT: "float",
          F.TYPE_DOUBLE: "double"}
MAX_FIELD = 536870912  # one past the largest field number: "max" in a reserved range


@functools.cache
def builtin_files() -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """The files a client may import without a reference: google/protobuf/*, google/type/*
    and confluent/* (as confluent-kafka's serializers treat them)."""
    import importlib

    modules = [f"google.protobuf.{m}_pb2" for m in (
        "any", "api", "descriptor", "duration", "empty", "field_mask", "source_context",
        "struct", "timestamp", "type", "wrappers")]
    modules += [f"google.type.{m}_pb2" for m in (
        "calendar_period", "color", "date", "datetime", "dayofweek", "decimal", "expr",
        "fraction", "interval", "latlng", "localized_text", "money", "month", "phone_number",
        "postal_address", "quaternion", "timeofday")]
    modules += ["confluent_kafka.schema_registry.confluent.meta_pb2",
                "confluent_kafka.schema_registry.confluent.type.decimal_pb2"]
    files = {}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        fdp = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        files[fdp.name] = fdp
    return files


class _Raise(ErrorListener):
    def syntaxError(self, recognizer, offending, line, column, msg, e):
        raise InvalidSchema(f"Invalid schema: line {line}:{column}: {msg}")


def _strict(recognizer):
    recognizer.removeErrorListeners()
    recognizer.addErrorListener(_Raise())


_PARSER = Parser(setup_lexer=_strict, setup_parser=_strict)


class ProtobufSchema:
    schema_type = PROTOBUF

    def __init__(self, text: str, references: dict[str, "ProtobufSchema"] | None = None,
                 name: str = "default"):
        self.references = references or {}
        self.files = _importable(self.references)
        if ";" not in text and "{" not in text:
            fdp = _from_base64(text)
        else:
            fdp = _FromText(self.files).file(text)
        fdp.name = name
        _check(fdp, self.files)
        self.fdp = fdp
        self.canonical = to_text(fdp)

    def normalized(self) -> str:
        """As Confluent normalizes: imports sorted (types are fully qualified and options
        ordered in the canonical text already)."""
        return to_text(self.fdp, sort_imports=True)

    def serialized(self) -> str:
        return base64.standard_b64encode(self.fdp.SerializeToString()).decode()

    def read_problems(self, writer: "ProtobufSchema") -> list[str]:
        return _Diff(writer, self).run()


def _from_base64(text: str) -> descriptor_pb2.FileDescriptorProto:
    try:
        return descriptor_pb2.FileDescriptorProto.FromString(
            base64.b64decode(text.strip(), validate=True))
    except (binascii.Error, DecodeError, ValueError) as e:
        raise InvalidSchema(f"Invalid schema: neither .proto text nor a base64 "
                            f"FileDescriptorProto: {e}") from None


def _importable(references: dict) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """The files a schema may import, by the names it imports them by: the well-known types,
    its references and theirs."""
    files = dict(builtin_files())
    for name, ref in references.items():
        files.update(ref.files)
        fdp = descriptor_pb2.FileDescriptorProto()
        fdp.CopyFrom(ref.fdp)
        fdp.name = name
        files[name] = fdp
    return files


def _check(fdp, deps: dict) -> None:
    """Build the file into a fresh pool with everything it imports: the protobuf library
    refuses unresolved types, duplicate names and bad numbers."""
    pool = descriptor_pool.DescriptorPool()
    added: set = set()

    def add(name):
        if name in added:
            return
        dep = deps.get(name)
        if dep is None:
            raise InvalidSchema(f"Invalid schema: import {name!r} is neither a reference nor a "
                                "well-known type")
        for d in dep.dependency:
            add(d)
        pool.Add(dep)
        added.add(name)

    try:
        for d in fdp.dependency:
            add(d)
        pool.Add(fdp)
        pool.FindFileByName(fdp.name)
    except InvalidSchema:
        raise
    except Exception as e:  # noqa: BLE001 - the library's TypeError/KeyError on a bad schema
        raise InvalidSchema(f"Invalid schema: {e}") from None


# -- .proto text -> FileDescriptorProto -----------------------------------------------------------
def _symbols(fdp, out: dict) -> None:
    """{full name: 'message'|'enum'} of a file's types (nested ones too)."""
    prefix = f"{fdp.package}." if fdp.package else ""

    def walk(messages, enums, scope):
        for e in enums:
            out[scope + e.name] = "enum"
        for m in messages:
            out[scope + m.name] = "message"
            walk(m.nested_type, m.enum_type, f"{scope}{m.name}.")

    walk(fdp.message_type, fdp.enum_type, prefix)


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def _range(text: str) -> tuple[int, int]:
    lo, _, hi = (p.strip() for p in text.partition(" to "))
    return int(lo, 0), MAX_FIELD if hi == "max" else int(hi or lo, 0) + 1


def _value(v):
    return v.name if isinstance(v, ast.Identifier) else v


def _set_options(options_msg, options) -> None:
    for opt in options:
        if opt.name.startswith("(") or opt.name in ("default", "json_name"):
            continue  # custom options are not kept; default/json_name are not options
        field = options_msg.DESCRIPTOR.fields_by_name.get(opt.name)
        if field is None:
            raise InvalidSchema(f"Invalid schema: unknown option {opt.name!r}")
        value = _value(opt.value)
        try:
            if field.enum_type is not None:
                value = field.enum_type.values_by_name[value].number
            setattr(options_msg, opt.name, value)
        except (KeyError, TypeError, ValueError):
            raise InvalidSchema(f"Invalid schema: bad value {value!r} for option "
                                f"{opt.name!r}") from None


class _FromText:
    def __init__(self, deps: dict):
        self.deps = deps
        self.symbols: dict[str, str] = {}

    def file(self, text: str) -> descriptor_pb2.FileDescriptorProto:
        try:
            tree = _PARSER.parse(text)
        except InvalidSchema:
            raise
        except Exception as e:  # noqa: BLE001 - the parser's own errors on odd input
            raise InvalidSchema(f"Invalid schema: {e}") from None
        fdp = descriptor_pb2.FileDescriptorProto()
        if tree.edition:
            raise InvalidSchema("Invalid schema: editions are not supported")
        syntax = tree.syntax or "proto2"
        if syntax not in ("proto2", "proto3"):
            raise InvalidSchema(f"Invalid schema: unknown syntax {syntax!r}")
        self.proto3 = syntax == "proto3"
        if self.proto3:
            fdp.syntax = "proto3"
        elements = [e for e in tree.file_elements if e is not None]
        for e in elements:
            if isinstance(e, ast.Package):
                fdp.package = e.name
            elif isinstance(e, ast.Import):
                if e.public:
                    fdp.public_dependency.append(len(fdp.dependency))
                if e.weak:
                    fdp.weak_dependency.append(len(fdp.dependency))
                fdp.dependency.append(e.name)
        for name in self._imported(list(fdp.dependency)):
            _symbols(self.deps[name], self.symbols)
        skeleton = descriptor_pb2.FileDescriptorProto(package=fdp.package)
        self._declare(skeleton.message_type, skeleton.enum_type, elements)
        _symbols(skeleton, self.symbols)
        scope = fdp.package
        for e in elements:
            if isinstance(e, ast.Message):
                self._message(fdp.message_type.add(), e, scope)
            elif isinstance(e, ast.Enum):
                self._enum(fdp.enum_type.add(), e)
            elif isinstance(e, ast.Service):
                self._service(fdp.service.add(), e, scope)
            elif isinstance(e, ast.Option):
                _set_options(fdp.options, [e])
            elif isinstance(e, ast.Extension):
                raise InvalidSchema("Invalid schema: extensions (extend) are not supported")
        return fdp

    def _imported(self, names: list[str]) -> list[str]:
        out, todo = [], list(names)
        while todo:
            name = todo.pop()
            if name in out:
                continue
            if name not in self.deps:
                raise InvalidSchema(f"Invalid schema: import {name!r} is neither a reference "
                                    "nor a well-known type")
            out.append(name)
            todo += list(self.deps[name].dependency)
        return out

    def _declare(self, messages, enums, elements):
        """Only names: what the file declares, for resolving type references."""
        for e in elements:
            if isinstance(e, ast.Message):
                m = messages.add(name=e.name)
                self._declare(m.nested_type, m.enum_type, e.elements)
                for f in e.elements:
                    if isinstance(f, ast.MapField):
                        m.nested_type.add(name=_camel(f.name) + "Entry")
            elif isinstance(e, ast.Enum):
                enums.add(name=e.name)

    def _resolve(self, name: str, scope: str) -> tuple[str, str]:
        if name.startswith("."):
            full = name[1:]
            if full in self.symbols:
                return full, self.symbols[full]
        else:
            parts = scope.split(".") if scope else []
            for i in range(len(parts), -1, -1):
                full = ".".join(parts[:i] + [name])
                if full in self.symbols:
                    return full, self.symbols[full]
        raise InvalidSchema(f"Invalid schema: type {name!r} is not defined (in {scope or 'the file'})")

    def _type(self, f, type_name: str, scope: str):
        if type_name in SCALARS:
            f.type = SCALARS[type_name]
        else:
            full, kind = self._resolve(type_name, scope)
            f.type = F.TYPE_MESSAGE if kind == "message" else F.TYPE_ENUM
            f.type_name = "." + full

    def _field(self, f, e, scope: str):
        f.name, f.number = e.name, e.number
        f.label = LABELS[e.cardinality]
        self._type(f, e.type, scope)
        for opt in e.options:
            if opt.name == "default":
                v = _value(opt.value)
                f.default_value = ("true" if v else "false") if isinstance(v, bool) else str(v)
            elif opt.name == "json_name":
                f.json_name = str(opt.value)
        _set_options(f.options, e.options)
        if not f.options.ListFields():
            f.ClearField("options")

    def _message(self, m, e: ast.Message, scope: str):
        m.name = e.name
        inner = f"{scope}.{e.name}" if scope else e.name
        for el in e.elements:
            if isinstance(el, ast.Field):
                f = m.field.add()
                self._field(f, el, inner)
                if self.proto3 and el.cardinality == ast.FieldCardinality.OPTIONAL:
                    f.proto3_optional = True
                    f.oneof_index = len(m.oneof_decl)
                    m.oneof_decl.add(name="_" + el.name)
            elif isinstance(el, ast.MapField):
                entry = m.nested_type.add(name=_camel(el.name) + "Entry")
                entry.options.map_entry = True
                for number, (name, t) in enumerate((("key", el.key_type),
                                                    ("value", el.value_type)), 1):
                    ef = entry.field.add(name=name, number=number, label=F.LABEL_OPTIONAL)
                    self._type(ef, t, inner)
                f = m.field.add(name=el.name, number=el.number, label=F.LABEL_REPEATED,
                                type=F.TYPE_MESSAGE, type_name=f".{inner}.{entry.name}")
                _set_options(f.options, el.options)
                if not f.options.ListFields():
                    f.ClearField("options")
            elif isinstance(el, ast.OneOf):
                index = len(m.oneof_decl)
                m.oneof_decl.add(name=el.name)
                for of in el.elements:
                    if isinstance(of, ast.Field):
                        f = m.field.add()
                        self._field(f, of, inner)
                        f.oneof_index = index
                    elif isinstance(of, ast.Group):
                        raise InvalidSchema("Invalid schema: groups are not supported")
            elif isinstance(el, ast.Message):
                self._message(m.nested_type.add(), el, inner)
            elif isinstance(el, ast.Enum):
                self._enum(m.enum_type.add(), el)
            elif isinstance(el, ast.Reserved):
                for r in el.ranges:
                    lo, hi = _range(r)
                    m.reserved_range.add(start=lo, end=hi)
                m.reserved_name.extend(el.names)
            elif isinstance(el, ast.ExtensionRange):
                for r in el.ranges:
                    lo, hi = _range(r)
                    m.extension_range.add(start=lo, end=hi)
            elif isinstance(el, ast.Option):
                _set_options(m.options, [el])
            elif isinstance(el, ast.Group):
                raise InvalidSchema("Invalid schema: groups are not supported")
            elif isinstance(el, ast.Extension):
                raise InvalidSchema("Invalid schema: extensions (extend) are not supported")

    def _enum(self, en, e: ast.Enum):
        en.name = e.name
        for el in e.elements:
            if isinstance(el, ast.EnumValue):
                v = en.value.add(name=el.name, number=el.number)
                _set_options(v.options, el.options)
                if not v.options.ListFields():
                    v.ClearField("options")
            elif isinstance(el, ast.EnumReserved):
                for r in el.ranges:
                    lo, hi = _range(r)
                    en.reserved_range.add(start=lo, end=hi - 1 if hi != MAX_FIELD else 2**31 - 1)
                en.reserved_name.extend(el.names)
            elif isinstance(el, ast.Option):
                _set_options(en.options, [el])

    def _service(self, s, e: ast.Service, scope: str):
        s.name = e.name
        for el in e.elements:
            if isinstance(el, ast.Method):
                s.method.add(name=el.name,
                             input_type="." + self._resolve(el.input_type.type, scope)[0],
                             output_type="." + self._resolve(el.output_type.type, scope)[0],
                             client_streaming=el.input_type.stream,
                             server_streaming=el.output_type.stream)
            elif isinstance(el, ast.Option):
                _set_options(s.options, [el])


# -- FileDescriptorProto -> .proto text -----------------------------------------------------------
def _literal(field, value) -> str:
    if field.enum_type is not None:
        return field.enum_type.values_by_number[value].name
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def _options(msg) -> list[str]:
    return [f"{fd.name} = {_literal(fd, v)}" for fd, v in msg.ListFields()
            if fd.name not in ("map_entry", "uninterpreted_option")]


def to_text(fdp: descriptor_pb2.FileDescriptorProto, sort_imports: bool = False) -> str:
    out = [f'syntax = "{fdp.syntax or "proto2"}";']
    if fdp.package:
        out.append(f"package {fdp.package};")
    imports = []
    for i, dep in enumerate(fdp.dependency):
        kind = ("public " if i in fdp.public_dependency else
                "weak " if i in fdp.weak_dependency else "")
        imports.append((dep, f'import {kind}"{dep}";'))
    out += [line for _dep, line in (sorted(imports) if sort_imports else imports)]
    out += [f"option {o};" for o in _options(fdp.options)]
    proto3 = fdp.syntax == "proto3"
    for m in fdp.message_type:
        _print_message(out, m, "", proto3)
    for e in fdp.enum_type:
        _print_enum(out, e, "")
    for s in fdp.service:
        out.append(f"service {s.name} {{")
        out += [f"  option {o};" for o in _options(s.options)]
        for r in s.method:
            cs, ss = ("stream " if r.client_streaming else ""), ("stream " if r.server_streaming else "")
            out.append(f"  rpc {r.name}({cs}{r.input_type}) returns ({ss}{r.output_type});")
        out.append("}")
    return "\n".join(out) + "\n"


def _ranges(ranges, inclusive_end: bool) -> str:
    parts = []
    for r in ranges:
        hi = r.end if inclusive_end else r.end - 1
        if (not inclusive_end and r.end >= MAX_FIELD) or (inclusive_end and r.end >= 2**31 - 1):
            parts.append(f"{r.start} to max")
        elif hi == r.start:
            parts.append(str(r.start))
        else:
            parts.append(f"{r.start} to {hi}")
    return ", ".join(parts)


def _field_line(f, m, proto3: bool) -> str:
    entries = {n.name: n for n in m.nested_type if n.options.map_entry}
    short = f.type_name.rsplit(".", 1)[-1]
    if f.type == F.TYPE_MESSAGE and f.label == F.LABEL_REPEATED and short in entries and \
            f.type_name.endswith(f"{m.name}.{short}"):
        k, v = entries[short].field
        head = f"map<{_type_name(k)}, {_type_name(v)}>"
    else:
        if proto3:
            label = ("repeated " if f.label == F.LABEL_REPEATED else
                     "optional " if f.proto3_optional else "")
        else:
            label = {F.LABEL_OPTIONAL: "optional ", F.LABEL_REQUIRED: "required ",
                     F.LABEL_REPEATED: "repeated "}[f.label]
        head = label + _type_name(f)
    opts = _options(f.options)
    if f.HasField("default_value"):
        value = f.default_value
        opts.insert(0, "default = " + (json.dumps(value) if f.type in (F.TYPE_STRING, F.TYPE_BYTES)
                                       else value))
    if f.HasField("json_name") and f.json_name != _json_name(f.name):
        opts.append(f"json_name = {json.dumps(f.json_name)}")
    suffix = f" [{', '.join(opts)}]" if opts else ""
    return f"{head} {f.name} = {f.number}{suffix};"


def _json_name(name: str) -> str:
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def _type_name(f) -> str:
    return SCALAR_NAMES.get(f.type) or f.type_name


def _print_message(out, m, indent: str, proto3: bool):
    out.append(f"{indent}message {m.name} {{")
    inner = indent + "  "
    out += [f"{inner}option {o};" for o in _options(m.options)]
    real_oneofs = {i for i, _ in enumerate(m.oneof_decl)} - {
        f.oneof_index for f in m.field if f.HasField("oneof_index") and f.proto3_optional}
    printed: set = set()
    for f in m.field:
        if f.HasField("oneof_index") and f.oneof_index in real_oneofs:
            if f.oneof_index in printed:
                continue
            printed.add(f.oneof_index)
            decl = m.oneof_decl[f.oneof_index]
            out.append(f"{inner}oneof {decl.name} {{")
            out += [f"{inner}  option {o};" for o in _options(decl.options)]
            out += [f"{inner}  {_field_line(g, m, False).removeprefix('optional ')}"
                    for g in m.field if g.HasField("oneof_index") and
                    g.oneof_index == f.oneof_index]
            out.append(f"{inner}}}")
        else:
            out.append(inner + _field_line(f, m, proto3))
    if m.reserved_range:
        out.append(f"{inner}reserved {_ranges(m.reserved_range, False)};")
    if m.reserved_name:
        out.append(f"{inner}reserved {', '.join(json.dumps(n) for n in m.reserved_name)};")
    if m.extension_range:
        out.append(f"{inner}extensions {_ranges(m.extension_range, False)};")
    for n in m.nested_type:
        if not n.options.map_entry:
            _print_message(out, n, inner, proto3)
    for e in m.enum_type:
        _print_enum(out, e, inner)
    out.append(f"{indent}}}")


def _print_enum(out, e, indent: str):
    out.append(f"{indent}enum {e.name} {{")
    out += [f"{indent}  option {o};" for o in _options(e.options)]
    for v in e.value:
        opts = _options(v.options)
        out.append(f"{indent}  {v.name} = {v.number}{f' [{chr(44).join(opts)}]' if opts else ''};")
    if e.reserved_range:
        out.append(f"{indent}  reserved {_ranges(e.reserved_range, True)};")
    if e.reserved_name:
        out.append(f"{indent}  reserved {', '.join(json.dumps(n) for n in e.reserved_name)};")
    out.append(f"{indent}}}")


# -- compatibility ------------------------------------------------------------------------------
class _Diff:
    """Confluent's Protobuf differences of ``update`` (the reader) against ``original`` (the
    writer); only the incompatible ones are reported."""

    def __init__(self, original: ProtobufSchema, update: ProtobufSchema):
        self.types = ({}, {})  # full name -> DescriptorProto / EnumDescriptorProto, per side
        for side, schema in enumerate((original, update)):
            for fdp in [schema.fdp, *schema.files.values()]:
                _collect(fdp, self.types[side])
        self.original, self.update = original.fdp, update.fdp
        self.problems: list[str] = []
        self.seen: set = set()

    def run(self) -> list[str]:
        if self.original.package != self.update.package:
            self.problems.append(f"PACKAGE_CHANGED: {self.original.package!r} -> "
                                 f"{self.update.package!r}")
        self._types(self.original.message_type, self.update.message_type,
                    self.original.package, self.update.package, "#")
        return self.problems

    def _types(self, original, update, oscope, uscope, path):
        om = {m.name: m for m in original if not m.options.map_entry}
        um = {m.name: m for m in update if not m.options.map_entry}
        for name, m in om.items():
            if name not in um:
                self.problems.append(f"MESSAGE_REMOVED at {path}/{name}")
            else:
                self._message(m, um[name], _join(oscope, name), _join(uscope, name),
                              f"{path}/{name}")

    def _message(self, o, u, oname, uname, path):
        if (oname, uname) in self.seen:
            return
        self.seen.add((oname, uname))
        synthetic_o = _synthetic(o)
        synthetic_u = _synthetic(u)
        o_top = {f.number: f for f in o.field if not _in_oneof(f, synthetic_o)}
        u_top = {f.number: f for f in u.field if not _in_oneof(f, synthetic_u)}
        o_all = {f.number: f for f in o.field}
        u_all = {f.number: f for f in u.field}
        o_oneofs = _oneofs(o, synthetic_o)
        u_oneofs = _oneofs(u, synthetic_u)
        o_oneof_tags = {n for fields in o_oneofs.values() for n in fields}
        for name, fields in u_oneofs.items():
            moved = [n for n in fields if o_top.pop(n, None) is not None]
            existing = [n for n in fields if n in o_oneof_tags]
            if len(moved) > 1:
                self.problems.append(f"MULTIPLE_FIELDS_MOVED_TO_ONEOF at {path}/{name}")
            elif len(moved) == 1 and existing:
                self.problems.append(f"FIELD_MOVED_TO_EXISTING_ONEOF at {path}/{name}")
        for name, fields in o_oneofs.items():
            if name in u_oneofs:
                for n in fields:
                    if n not in u_oneofs[name]:
                        self.problems.append(f"ONEOF_FIELD_REMOVED at {path}/{name}/{n}")
                    else:
                        self._field(o_all[n], u_all[n], oname, uname, f"{path}/{n}")
        for n in sorted(set(o_top) | set(u_top)):
            of, uf = o_top.get(n), u_top.get(n)
            if uf is None:
                if of.label == F.LABEL_REQUIRED:
                    self.problems.append(f"REQUIRED_FIELD_REMOVED at {path}/{n}")
            elif of is None:
                if uf.label == F.LABEL_REQUIRED:
                    self.problems.append(f"REQUIRED_FIELD_ADDED at {path}/{n}")
            else:
                self._field(of, uf, oname, uname, f"{path}/{n}")
        o_place = {n: _oneof_name(o, o_all[n], synthetic_o) for n in o_all}
        u_place = {n: _oneof_name(u, u_all[n], synthetic_u) for n in u_all}
        for n in sorted(set(o_all) & set(u_all)):
            if o_place[n] != u_place[n]:
                self._field(o_all[n], u_all[n], oname, uname, f"{path}/{n}")
        self._types(o.nested_type, u.nested_type, oname, uname, path)

    def _kind(self, f, side):
        if f.type == F.TYPE_MESSAGE:
            t = self.types[side].get(f.type_name.lstrip("."))
            return "map" if t is not None and t.options.map_entry else "message"
        return "scalar"

    def _field(self, of, uf, oscope, uscope, path):
        ok, uk = self._kind(of, 0), self._kind(uf, 1)
        if ok != uk:
            self.problems.append(f"FIELD_KIND_CHANGED at {path}: {ok} -> {uk}")
        elif ok == "scalar":
            if _GROUP[of.type] != _GROUP[uf.type]:
                self.problems.append(f"FIELD_SCALAR_KIND_CHANGED at {path}: "
                                     f"{_type_name(of)} -> {_type_name(uf)}")
        elif ok == "map":
            ot, ut = (self.types[s][f.type_name.lstrip(".")] for s, f in ((0, of), (1, uf)))
            for a, b in zip(ot.field, ut.field):
                self._field(a, b, oscope, uscope, path)
        else:
            oname, uname = of.type_name.lstrip("."), uf.type_name.lstrip(".")
            if _local(oname, self.original.package) != _local(uname, self.update.package):
                self.problems.append(f"FIELD_NAMED_TYPE_CHANGED at {path}: {oname} -> {uname}")
                return
            ot, ut = self.types[0].get(oname), self.types[1].get(uname)
            if ot is not None and ut is not None:
                before = len(self.problems)
                self._message(ot, ut, oname, uname, f"{path}:{uname}")
                if len(self.problems) > before:
                    self.problems.append(f"FIELD_NAMED_TYPE_CHANGED at {path}: {uname}")


def _collect(fdp, out: dict) -> None:
    prefix = f"{fdp.package}." if fdp.package else ""

    def walk(messages, enums, scope):
        for e in enums:
            out.setdefault(scope + e.name, e)
        for m in messages:
            out.setdefault(scope + m.name, m)
            walk(m.nested_type, m.enum_type, f"{scope}{m.name}.")

    walk(fdp.message_type, fdp.enum_type, prefix)


def _join(scope: str, name: str) -> str:
    return f"{scope}.{name}" if scope else name


def _local(full: str, package: str) -> str:
    return full[len(package) + 1:] if package and full.startswith(package + ".") else full


def _synthetic(m) -> set:
    return {f.oneof_index for f in m.field if f.proto3_optional}


def _in_oneof(f, synthetic: set) -> bool:
    return f.HasField("oneof_index") and f.oneof_index not in synthetic


def _oneof_name(m, f, synthetic):
    return m.oneof_decl[f.oneof_index].name if _in_oneof(f, synthetic) else None


def _oneofs(m, synthetic) -> dict:
    out: dict = {}
    for f in m.field:
        if _in_oneof(f, synthetic):
            out.setdefault(m.oneof_decl[f.oneof_index].name, []).append(f.number)
    return out
