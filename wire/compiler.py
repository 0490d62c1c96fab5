"""Compiles declared layouts (``wire.schema``) into per-version encode/decode functions.

Each struct becomes a slotted class. For every (struct, version) pair used, Python source is
generated once (runs of fixed-width fields collapse into a single ``struct`` call) and cached.
Encoders return a list of buffers so record data is never copied into the response.
"""
from __future__ import annotations

import linecache
import re
import struct
from typing import Self

from josefk.wire import types as T
from josefk.wire.schema import BOOL, BYTES, RECORDS, STRING, UUID, Array, Field, Prim, Struct, camel

_MISSING = object()
_DECODE_ERRORS = (struct.error, IndexError, UnicodeDecodeError, ValueError, TypeError)


class Message:
    """Base of every generated struct class."""

    __slots__ = ()
    _fields: list = []
    _api = None

    @classmethod
    def build(cls, api, name, fields, registry=None):
        """Make the class for a struct; nested struct classes hang off it by name, and the
        top-level class also carries every nested class of the message (when names are unique).
        One list of fields used by several fields under one name (Kafka's commonStructs) makes
        one class."""
        top = registry is None
        registry = {} if top else registry
        for known in registry.get(name, ()):
            if known._fields is fields:  # a common struct declared once and used twice
                return known
        nested = {}
        for f in fields:
            sub = _struct_fields(f.type)
            if sub is not None:
                nested[f.name] = Message.build(api, f.struct_name or _struct_name(f), sub, registry)
        klass = type(name, (Message,), {
            "__slots__": tuple(f.name for f in fields),
            "_fields": fields,
            "_nested": nested,
            "_api": api,
            "_decoders": {},
            "_encoders": {},
        })
        _make_init(klass)
        for sub in nested.values():
            setattr(klass, sub.__name__, sub)
        registry.setdefault(name, []).append(klass)
        if top:
            for sname, subs in registry.items():
                if len(subs) == 1 and not hasattr(klass, sname):
                    setattr(klass, sname, subs[0])
        return klass

    # -- codecs -------------------------------------------------------------------------------
    @classmethod
    def decode(cls, buf, version: int, pos: int = 0) -> tuple[Self, int]:
        """Decode from ``buf`` at ``pos``; returns ``(obj, end_pos)``; raises DecodeError."""
        fn = cls._decoders.get(version) or _compile(cls, version, decode=True)
        try:
            return fn(buf, pos)
        except T.DecodeError:
            raise
        except _DECODE_ERRORS as e:
            # chained: its traceback shows the generated line that failed
            raise T.DecodeError(f"cannot decode {cls.__name__} v{version}: {e}") from e

    def encode(self, version: int, out: bytearray | None = None) -> list:
        """Encode into a list of buffers (the first one may be ``out``)."""
        cls = type(self)
        fn = cls._encoders.get(version) or _compile(cls, version, decode=False)
        chunks = []
        chunks.append(fn(self, bytearray() if out is None else out, chunks))
        return chunks

    def to_bytes(self, version: int) -> bytes:
        return b"".join(bytes(c) for c in self.encode(version))

    def encoded(self, version: int) -> "Encoded":
        """This struct encoded once, to stand in for it in arrays of later responses."""
        return Encoded(self.to_bytes(version))

    # -- conveniences -------------------------------------------------------------------------
    def __eq__(self, other):
        return type(self) is type(other) and all(
            _norm(getattr(self, s)) == _norm(getattr(other, s)) for s in self.__slots__)

    def __repr__(self):
        inner = ", ".join(f"{s}={getattr(self, s)!r}" for s in self.__slots__)
        return f"{type(self).__name__}({inner})"


class Encoded:
    """A struct already encoded (``Message.encoded``), placed as it is where an array of such
    structs is encoded: a response that repeats large unchanged parts (Metadata of thousands
    of partitions) encodes them once, not per request. Only for the version it was made for."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data


def _norm(v):
    if isinstance(v, memoryview):
        return bytes(v)
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], (bytes, memoryview, bytearray)):
        return b"".join(bytes(c) for c in v)
    return v


def _struct_fields(t):
    if isinstance(t, list):
        return t
    if isinstance(t, Struct):
        return t.fields
    return None


def _struct_name(f: Field) -> str:
    if isinstance(f.type, Struct) and f.type.name:
        return f.type.name
    return camel(f.name)


def _make_init(klass):
    args, body, ns = [], [], {"_M": _MISSING}
    for i, f in enumerate(klass._fields):
        d = _default_value(f)
        if isinstance(f.type, list) or isinstance(f.type, Array):
            args.append(f"{f.name}=_M")
            empty = "None" if f.default is None else "[]"  # "default": "null" arrays
            body.append(f"    self.{f.name} = {empty} if {f.name} is _M else {f.name}")
        elif isinstance(f.type, Struct):
            ns[f"_S{i}"] = klass._nested[f.name]
            args.append(f"{f.name}=_M")
            fallback = "None" if _struct_defaults_to_none(f) else f"_S{i}()"
            body.append(f"    self.{f.name} = {fallback} if {f.name} is _M else {f.name}")
        else:
            ns[f"_d{i}"] = d
            args.append(f"{f.name}=_d{i}")
            body.append(f"    self.{f.name} = {f.name}")
    src = f"def __init__(self, *, {', '.join(args)}):\n" + ("\n".join(body) or "    pass") + "\n"
    if not args:
        src = "def __init__(self):\n    pass\n"
    _exec(src, ns, _source_name(klass, "init"))
    klass.__init__ = ns["__init__"]


def _struct_defaults_to_none(f: Field) -> bool:
    """Tagged structs, and nullable structs declared with ``default=None``, start out as None."""
    return f.tag is not None or (f.default is None and f.nullable.lo <= f.nullable.hi)


def _default_value(f: Field):
    if f.default is not ...:
        return f.default
    if isinstance(f.type, Prim):
        return f.type.default
    return None


# -- code generation ----------------------------------------------------------------------------

class _Gen:
    def __init__(self, flexible: bool, version: int):
        self.flexible = flexible
        self.version = version
        self.ns = {
            "T": T, "DecodeError": T.DecodeError, "wuv": T.write_uvarint, "ruv": T.read_uvarint,
            "records_size": T.records_size, "ZERO_UUID": T.ZERO_UUID, "_M": _MISSING,
            "Encoded": Encoded,
        }
        self.sources = []
        self.done = {}
        self.n = 0

    def name(self, prefix):
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, value):
        key = self.name("_c")
        self.ns[key] = value
        return key

    # ---- decode ----
    def decoder(self, klass) -> str:
        key = ("d", klass)
        if key in self.done:
            return self.done[key]
        fname = self.name("dec_")
        self.done[key] = fname
        v = self.version
        lines = [f"def {fname}(buf, p):", f"    o = {self.const(klass)}.__new__({self.const(klass)})"]
        present = [f for f in klass._fields if v in f.versions and f.tag is None]
        tagged = [f for f in klass._fields if v in f.versions and f.tag is not None and self.flexible]
        absent = [f for f in klass._fields if f not in present]
        for f in absent:
            lines.append(f"    o.{f.name} = {self._default_expr(klass, f)}")
        for run in _runs(present):
            if isinstance(run, list):
                s = self.const(struct.Struct(">" + "".join(f.type.fmt for f in run)))
                targets = ", ".join(f"o.{f.name}" for f in run) + ("," if len(run) == 1 else "")
                lines.append(f"    {targets} = {s}.unpack_from(buf, p)")
                lines.append(f"    p += {sum(f.type.width for f in run)}")
            else:
                lines.extend(self._decode_field(klass, run, "o." + run.name, "    "))
        if self.flexible:
            lines.append("    n_tags, p = ruv(buf, p)")
            lines.append("    for _ in range(n_tags):")
            lines.append("        tag, p = ruv(buf, p)")
            lines.append("        size, p = ruv(buf, p)")
            lines.append("        end = p + size")
            for f in tagged:
                lines.append(f"        if tag == {f.tag}:")
                lines.extend(self._decode_field(klass, f, "o." + f.name, "            "))
            lines.append("        p = end")
            lines.append("    if p > len(buf): raise DecodeError('message truncated')")
        lines.append("    return o, p")
        self.sources.append("\n".join(lines))
        return fname

    def _default_expr(self, klass, f):
        if isinstance(f.type, (list, Array)):
            return "None" if f.default is None else "[]"
        if isinstance(f.type, Struct):
            if _struct_defaults_to_none(f):
                return "None"
            return f"{self.const(klass._nested[f.name])}()"
        return self.const(_default_value(f))

    def _read_prim(self, t: Prim, target, ind):
        fl = self.flexible
        if t.width:
            s = self.const(struct.Struct(">" + t.fmt))
            return [f"{ind}{target}, = {s}.unpack_from(buf, p)", f"{ind}p += {t.width}"]
        if t is STRING:  # inline: the field read most often (names, ids), no call per string
            size = (["sn, p = ruv(buf, p)", "sn -= 1"] if fl else
                    ["sn, = T.i16.unpack_from(buf, p)", "p += 2"])
            return [ind + line for line in size + [
                f"if sn < 0: {target} = None",
                "else:",
                "    se = p + sn",
                "    if se > len(buf): raise DecodeError('message truncated')",
                f"    {target} = str(buf[p:se], 'utf-8')",
                "    p = se"]]
        fn = {
            "string": "read_compact_string" if fl else "read_string",
            "bytes": "read_compact_bytes" if fl else "read_bytes",
            "records": "read_compact_records" if fl else "read_records",
            "uuid": "read_uuid",
        }[t.name]
        return [f"{ind}{target}, p = T.{fn}(buf, p)"]

    def _read_len(self, ind):
        if self.flexible:
            return [f"{ind}n, p = ruv(buf, p)", f"{ind}n -= 1"]
        return [f"{ind}n, = T.i32.unpack_from(buf, p)", f"{ind}p += 4"]

    def _reject_null(self, f: Field, target, ind):
        """Kafka refuses null in a field whose schema does not allow it in this version."""
        return [f"{ind}if {target} is None: "
                f"raise DecodeError('non-nullable field {f.name} was serialized as null')"]

    def _decode_field(self, klass, f: Field, target, ind):
        t = f.type
        nullable = self.version in f.nullable
        if isinstance(t, Prim):
            lines = self._read_prim(t, target, ind)
            if not t.width and t is not UUID and not nullable:
                lines += self._reject_null(f, target, ind)
            return lines
        if isinstance(t, Struct):
            d = self.decoder(klass._nested[f.name])
            if f.tag is None and self.version in f.nullable:
                # A nullable struct is preceded by an int8 marker: -1 for null, 1 for present.
                return [f"{ind}if buf[p] >= 0x80:", f"{ind}    {target} = None",
                        f"{ind}    p += 1", f"{ind}else:",
                        f"{ind}    {target}, p = {d}(buf, p + 1)"]
            return [f"{ind}{target}, p = {d}(buf, p)"]
        lines = self._read_len(ind)
        lines += [f"{ind}if n < 0:"]
        lines += ([f"{ind}    {target} = None"] if nullable else
                  [f"{ind}    raise DecodeError('non-nullable field {f.name} was serialized "
                   f"as null')"])
        lines += [f"{ind}else:",
                  f"{ind}    if n > len(buf) - p: raise DecodeError('array length out of range')"]
        if isinstance(t, list):
            d = self.decoder(klass._nested[f.name])
            lines += [f"{ind}    L = []", f"{ind}    for _ in range(n):",
                      f"{ind}        e, p = {d}(buf, p)", f"{ind}        L.append(e)",
                      f"{ind}    {target} = L"]
        elif t.item.width:
            fmt, w = t.item.fmt, t.item.width
            lines += [f"{ind}    {target} = list(T.struct_unpack_from('>%d{fmt}' % n, buf, p))",
                      f"{ind}    p += {w} * n"]
        else:
            lines += [f"{ind}    L = []", f"{ind}    for _ in range(n):"]
            lines += self._read_prim(t.item, "e", ind + "        ")
            if t.item is not UUID:
                lines += self._reject_null(f, "e", ind + "        ")
            lines += [f"{ind}        L.append(e)", f"{ind}    {target} = L"]
        return lines

    # ---- encode ----
    def encoder(self, klass) -> str:
        key = ("e", klass)
        if key in self.done:
            return self.done[key]
        fname = self.name("enc_")
        self.done[key] = fname
        v = self.version
        lines = [f"def {fname}(o, b, ch):"]
        present = [f for f in klass._fields if v in f.versions and f.tag is None]
        tagged = sorted((f for f in klass._fields if v in f.versions and f.tag is not None
                         and self.flexible), key=lambda f: f.tag)
        for run in _runs(present):
            if isinstance(run, list):
                s = self.const(struct.Struct(">" + "".join(f.type.fmt for f in run)))
                args = ", ".join(f"o.{f.name}" for f in run)
                lines.append(f"    b += {s}.pack({args})")
            else:
                lines.extend(self._encode_field(klass, run, f"o.{run.name}", "    "))
        if self.flexible:
            if not tagged:
                lines.append("    b.append(0)")
            else:
                lines.append("    tags = []")
                for f in tagged:
                    d = _default_value(f)
                    cond = (f"o.{f.name} is not None" if isinstance(f.type, Struct) or d is None
                            else f"o.{f.name} != {self.const(d)}")
                    if isinstance(f.type, (list, Array)):
                        cond = f"o.{f.name}"
                    lines.append(f"    if {cond}:")
                    lines.append("        t = bytearray()")
                    lines.extend(self._encode_field(klass, f, f"o.{f.name}", "        ", "t"))
                    lines.append(f"        tags.append(({f.tag}, t))")
                lines += ["    wuv(b, len(tags))", "    for tag, t in tags:",
                          "        wuv(b, tag)", "        wuv(b, len(t))", "        b += t"]
        lines.append("    return b")
        self.sources.append("\n".join(lines))
        return fname

    def _write_prim(self, t: Prim, f: Field | None, val, ind, b="b"):
        fl = self.flexible
        if t.width:
            s = self.const(struct.Struct(">" + t.fmt))
            return [f"{ind}{b} += {s}.pack({val})"]
        if t is UUID:
            return [f"{ind}{b} += ({val} or ZERO_UUID).bytes"]
        if t is RECORDS:
            return [f"{ind}r = {val}", f"{ind}if r is None:",
                    f"{ind}    " + ("b.append(0)" if fl else "b += b'\\xff\\xff\\xff\\xff'"),
                    f"{ind}else:", f"{ind}    rn = records_size(r)",
                    f"{ind}    " + ("wuv(b, rn + 1)" if fl else "b += T.i32.pack(rn)"),
                    f"{ind}    if rn:", f"{ind}        ch.append(b)",
                    f"{ind}        ch.extend(r) if isinstance(r, (list, tuple)) else ch.append(r)",
                    f"{ind}        b = bytearray()"]
        fn = {"string": "write_compact_string" if fl else "write_string",
              "bytes": "write_compact_bytes" if fl else "write_bytes"}[t.name]
        if f is not None and self.version not in f.nullable:
            empty = '""' if t is STRING else 'b""'
            return [f"{ind}T.{fn}({b}, {empty} if {val} is None else {val})"]
        return [f"{ind}T.{fn}({b}, {val})"]

    def _write_len(self, n, ind, b):
        if self.flexible:
            return [f"{ind}wuv({b}, {n} + 1)"]
        return [f"{ind}{b} += T.i32.pack({n})"]

    def _encode_field(self, klass, f: Field, val, ind, b="b"):
        """Lines appending field ``f`` (value expression ``val``) to the buffer named ``b``."""
        t = f.type
        if isinstance(t, Prim):
            return self._write_prim(t, f, val, ind, b)
        if isinstance(t, Struct):
            e = self.encoder(klass._nested[f.name])
            k = self.const(klass._nested[f.name])
            if f.tag is None and self.version in f.nullable:
                return [f"{ind}x = {val}", f"{ind}if x is None:", f"{ind}    {b}.append(0xff)",
                        f"{ind}else:", f"{ind}    {b}.append(1)", f"{ind}    {b} = {e}(x, {b}, ch)"]
            return [f"{ind}x = {val}", f"{ind}{b} = {e}({k}() if x is None else x, {b}, ch)"]
        null = f"{b}.append(0)" if self.flexible else f"{b} += b'\\xff\\xff\\xff\\xff'"
        lines = [f"{ind}L = {val}", f"{ind}if L is None:", f"{ind}    {null}", f"{ind}else:"]
        lines += self._write_len("len(L)", ind + "    ", b)
        if isinstance(t, list):
            e = self.encoder(klass._nested[f.name])
            lines += [f"{ind}    for x in L:",
                      f"{ind}        if x.__class__ is Encoded: {b} += x.data",
                      f"{ind}        else: {b} = {e}(x, {b}, ch)"]
        elif t.item.width:
            lines += [f"{ind}    {b} += T.struct_pack('>%d{t.item.fmt}' % len(L), *L)"]
        else:
            lines += [f"{ind}    for x in L:"] + self._write_prim(t.item, None, "x", ind + "        ", b)
        return lines


def _runs(fields):
    """Group consecutive fixed-width primitive fields so each run is one struct call."""
    out, run = [], []
    for f in fields:
        if isinstance(f.type, Prim) and f.type.width:
            run.append(f)
        else:
            if run:
                out.append(run)
                run = []
            out.append(f)
    if run:
        out.append(run)
    return out


T.struct_unpack_from = struct.unpack_from
T.struct_pack = struct.pack


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _source_name(klass, what: str) -> str:
    """A stable name for generated code, by API and struct:
    ``josefk/wire/_generated/produce/produce_request_v9_decode.py``."""
    api = _snake(getattr(klass._api, "name", None) or "message")
    return f"josefk/wire/_generated/{api}/{_snake(klass.__name__)}_{what}.py"


def _exec(src: str, ns: dict, filename: str) -> None:
    """Run generated source under ``filename``, kept in ``linecache`` (with no mtime, so never
    evicted) so that a traceback through a codec shows its file, line and source."""
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), ns)


def _compile(klass, version: int, decode: bool):
    api = klass._api
    if version not in api.versions:
        raise T.DecodeError(f"{api.name} v{version} is not supported")
    gen = _Gen(api.is_flexible(version), version)
    fname = gen.decoder(klass) if decode else gen.encoder(klass)
    _exec("\n\n".join(gen.sources), gen.ns,
          _source_name(klass, f"v{version}_{'decode' if decode else 'encode'}"))
    fn = gen.ns[fname]
    (klass._decoders if decode else klass._encoders)[version] = fn
    return fn


__all__ = ["Message", "BOOL", "BYTES", "STRING"]
