"""The registry's state as the ``_schemas`` topic describes it, in Confluent's record format:
JSON keys ``{"keytype":"SCHEMA","subject":s,"version":v,"magic":1}``,
``{"keytype":"CONFIG"|"MODE","subject":s|null,"magic":0}``,
``{"keytype":"DELETE_SUBJECT"|"CLEAR_SUBJECT","subject":s,"magic":0}`` and
``{"keytype":"NOOP","magic":0}``; values ``{"subject","version","id","schemaType",
"references","schema","deleted"}``, ``{"compatibilityLevel","normalize"}``, ``{"mode"}``,
``{"subject","version"}``; a null value (tombstone) removes what its key names. Every instance
applies the same records in order, so all hold the same state."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

DEFAULT_COMPATIBILITY = "BACKWARD"
DEFAULT_MODE = "READWRITE"


@dataclass
class Version:
    subject: str
    version: int
    id: int
    schema_type: str
    schema: str
    references: list = field(default_factory=list)
    deleted: bool = False

    def identity(self) -> tuple:
        """What makes two registrations the same schema (and so the same id)."""
        return (self.schema_type, self.schema, json.dumps(self.references, sort_keys=True))

    def to_json(self, with_subject: bool = True) -> dict:
        """The answer's form: schemaType and references only when there is something to say
        (Confluent leaves AVRO and empty references out)."""
        out = {"subject": self.subject, "version": self.version, "id": self.id} if \
            with_subject else {}
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = self.references
        out["schema"] = self.schema
        return out


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def schema_key(subject: str, version: int) -> bytes:
    return _dumps({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})


def schema_value(v: Version) -> bytes:
    out = {"subject": v.subject, "version": v.version, "id": v.id}
    if v.schema_type != "AVRO":
        out["schemaType"] = v.schema_type
    if v.references:
        out["references"] = v.references
    out["schema"] = v.schema
    out["deleted"] = v.deleted
    return _dumps(out)


def config_key(subject: str | None) -> bytes:
    return _dumps({"keytype": "CONFIG", "subject": subject, "magic": 0})


def mode_key(subject: str | None) -> bytes:
    return _dumps({"keytype": "MODE", "subject": subject, "magic": 0})


def delete_subject_key(subject: str) -> bytes:
    return _dumps({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0})


NOOP_KEY = _dumps({"keytype": "NOOP", "magic": 0})


class State:
    def __init__(self):
        self.subjects: dict[str, dict[int, Version]] = {}
        self.by_id: dict[int, Version] = {}  # the first live registration of each id
        self.ids: dict[tuple, int] = {}  # Version.identity() -> id
        self.configs: dict[str | None, dict] = {}  # CONFIG values: compatibilityLevel, normalize
        self.modes: dict[str | None, str] = {}
        self.max_id = 0

    # -- applying records ----------------------------------------------------------------
    def apply(self, key: bytes, value: bytes | None) -> None:
        """One ``_schemas`` record; records of unknown key types or bad JSON are skipped."""
        try:
            k = json.loads(key)
            v = json.loads(value) if value else None
        except ValueError:
            return
        if not isinstance(k, dict):
            return
        kind, subject = k.get("keytype"), k.get("subject")
        if kind == "SCHEMA":
            self._schema(subject, k.get("version"), v)
        elif kind == "CONFIG":
            self._setting(self.configs, subject, v if isinstance(v, dict) else None)
        elif kind == "MODE":
            self._setting(self.modes, subject, v and v.get("mode"))
        elif kind == "DELETE_SUBJECT" and v:
            for ver in self.subjects.get(subject, {}).values():
                if ver.version <= v.get("version", 0):
                    ver.deleted = True
        elif kind == "CLEAR_SUBJECT":
            for ver in list(self.subjects.get(subject, {}).values()):
                if ver.deleted:
                    self._remove(ver)

    @staticmethod
    def _setting(table: dict, subject, value):
        if value:
            table[subject] = value
        else:
            table.pop(subject, None)

    def _schema(self, subject, version, v):
        old = self.subjects.get(subject, {}).get(version)
        if v is None:
            if old:
                self._remove(old)
            return
        ver = Version(subject=v["subject"], version=v["version"], id=v["id"],
                      schema_type=v.get("schemaType") or "AVRO", schema=v["schema"],
                      references=v.get("references") or [], deleted=bool(v.get("deleted")))
        self.subjects.setdefault(subject, {})[version] = ver
        self.max_id = max(self.max_id, ver.id)
        self.ids.setdefault(ver.identity(), ver.id)
        if ver.id not in self.by_id or self.by_id[ver.id].deleted:
            self.by_id[ver.id] = ver

    def _remove(self, ver: Version):
        versions = self.subjects.get(ver.subject, {})
        versions.pop(ver.version, None)
        if not versions:
            self.subjects.pop(ver.subject, None)
        if self.by_id.get(ver.id) is ver:
            others = [o for vs in self.subjects.values() for o in vs.values() if o.id == ver.id]
            if others:
                self.by_id[ver.id] = others[0]
            else:
                del self.by_id[ver.id]
                self.ids.pop(ver.identity(), None)

    # -- questions ------------------------------------------------------------------------
    def versions(self, subject: str, deleted: bool = False) -> list[Version]:
        return sorted((v for v in self.subjects.get(subject, {}).values()
                       if deleted or not v.deleted), key=lambda v: v.version)

    def subject_names(self, deleted: bool = False) -> list[str]:
        return sorted(s for s in self.subjects if self.versions(s, deleted))

    def config(self, subject: str | None) -> dict:
        """The configuration in force for ``subject`` (the global one for None): the subject's
        fields over the global ones, the default compatibility level where neither has one."""
        return {"compatibilityLevel": DEFAULT_COMPATIBILITY, **self.configs.get(None, {}),
                **(self.configs.get(subject, {}) if subject is not None else {})}

    def compatibility(self, subject: str | None) -> str:
        return self.config(subject)["compatibilityLevel"]

    def normalize(self, subject: str | None) -> bool:
        return self.config(subject).get("normalize") is True

    def mode(self, subject: str | None) -> str:
        return self.modes.get(subject) or self.modes.get(None) or DEFAULT_MODE

    def referenced_by(self, subject: str, version: int) -> list[int]:
        out = set()
        for vs in self.subjects.values():
            for v in vs.values():
                if not v.deleted and any(r.get("subject") == subject and
                                         r.get("version") == version for r in v.references):
                    out.add(v.id)
        return sorted(out)
