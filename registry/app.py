"""Confluent's Schema Registry REST API (content type ``application/vnd.schemaregistry.v1+json``)
over the state of ``_schemas``. Reads are answered by any instance; writes by the primary, to
which the other instances forward them."""
from __future__ import annotations

import asyncio
import json
import logging

import aiohttp
from aiohttp import web

from josefk.httpd.server import HttpError, json_response, parse_json, read_json
from josefk.registry import state as records
from josefk.registry.avro_schema import AvroSchema
from josefk.registry.json_schema import JsonSchema
from josefk.registry.kafkastore import KafkaStore, StoreError
from josefk.registry.protobuf_schema import ProtobufSchema
from josefk.registry.schema import AVRO, JSON, LEVELS, PROTOBUF, InvalidSchema, incompatibilities
from josefk.registry.state import State, Version

log = logging.getLogger("josefk.registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
BODY_TYPES = ("application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
              "application/json", "application/octet-stream")
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
MAX_VERSION = 2**31 - 1
PARSED_CACHE = 10_000


def _ok(body, status: int = 200) -> web.Response:
    return json_response(body, status, CONTENT_TYPE)


def _flag(request, name: str, default: bool = False) -> bool:
    return request.query.get(name, str(default)).lower() == "true"


def subject_not_found(subject):
    return HttpError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version):
    return HttpError(404, 40402, f"Version {version} not found.")


def schema_not_found(what=""):
    return HttpError(404, 40403, f"Schema {what}not found".replace("  ", " "))


def invalid_schema(message):
    return HttpError(422, 42201, message)


def not_permitted(message):
    return HttpError(422, 42205, message)


def _normalized_references(references: list) -> list:
    """References sorted and without repeats, as Confluent normalizes them."""
    unique = {json.dumps(r, sort_keys=True): r for r in references}
    return [unique[k] for k in sorted(unique)]


class Registry:
    def __init__(self, store: KafkaStore, state: State, identity: dict, forward_ssl=None):
        self.store, self.state, self.identity = store, state, identity
        self.primary: dict | None = None  # the elected primary's identity
        self.primary_ready = False  # this instance is primary and has read all of _schemas
        self.write_lock = asyncio.Lock()
        self.parsed: dict = {}
        self.forward_ssl = forward_ssl
        self.session: aiohttp.ClientSession | None = None

    # -- primary ----------------------------------------------------------------------------
    def set_primary(self, identity: dict | None) -> None:
        """From the election (on the event loop): who is primary now."""
        self.primary = identity
        self.primary_ready = False
        if identity == self.identity:
            asyncio.ensure_future(self._become_primary(identity))

    async def _become_primary(self, identity):
        try:
            await self.store.caught_up()
        except StoreError as e:
            log.error("primary cannot read %s: %s", self.store.topic, e)
            return
        if self.primary is identity:
            self.primary_ready = True
            log.info("this instance is the primary")

    async def _forward(self, request: web.Request, body: bytes) -> web.Response:
        from josefk.registry.election import identity_url

        primary = self.primary
        if primary is None or primary == self.identity:
            raise HttpError(500, 50004, "Leader not known.") if primary is None else \
                HttpError(500, 50002, "The primary is still reading the schemas topic; retry")
        headers = {k: v for k, v in request.headers.items()
                   if k in ("Content-Type", "Accept", "Authorization")}
        try:
            async with self.session.request(request.method, identity_url(primary) +
                                            request.path_qs, data=body, headers=headers,
                                            ssl=self.forward_ssl) as resp:
                return web.Response(body=await resp.read(), status=resp.status,
                                    content_type=resp.content_type)
        except (aiohttp.ClientError, asyncio.TimeoutError) as e:
            raise HttpError(500, 50003, f"Error while forwarding the request to the leader: "
                                        f"{e}") from None

    def writer(handler):
        """Run a write handler on the primary; elsewhere forward the request to it."""

        async def run(self, request: web.Request):
            body = await request.read()
            if self.primary == self.identity and self.primary_ready:
                async with self.write_lock:
                    try:
                        return await handler(self, request, body)
                    except StoreError as e:
                        raise HttpError(500, e.code, str(e)) from None
            return await self._forward(request, body)

        return run

    # -- parsing ------------------------------------------------------------------------
    def parse(self, schema_type: str, text: str, references: list, depth: int = 0):
        key = (schema_type, text, repr(references))
        parsed = self.parsed.get(key)
        if parsed is not None:
            return parsed
        if depth > 32:
            raise invalid_schema("Invalid schema: references nest too deeply")
        refs = {}
        for ref in references:
            if not isinstance(ref, dict) or not {"name", "subject", "version"} <= ref.keys():
                raise invalid_schema(f"Invalid schema: a reference needs name, subject and "
                                     f"version: {ref}")
            target = self.state.subjects.get(ref["subject"], {}).get(ref["version"])
            if ref["version"] == -1:
                live = self.state.versions(ref["subject"])
                target = live[-1] if live else None
            if target is None or target.deleted:
                raise invalid_schema(f"Invalid schema: reference {ref['name']} to subject "
                                     f"{ref['subject']} version {ref['version']} not found")
            refs[ref["name"]] = self.parse(target.schema_type, target.schema, target.references,
                                           depth + 1)
        try:
            if schema_type == AVRO:
                parsed = AvroSchema(text, list(refs.values()))
            elif schema_type == JSON:
                parsed = JsonSchema(text, refs)
            elif schema_type == PROTOBUF:
                parsed = ProtobufSchema(text, refs)
            else:
                raise InvalidSchema(f"Invalid schema type {schema_type}")
        except InvalidSchema as e:
            raise invalid_schema(str(e)) from None
        if len(self.parsed) >= PARSED_CACHE:
            self.parsed.clear()
        self.parsed[key] = parsed
        return parsed

    def _parse_body(self, body, normalize: bool = False) -> tuple[Version, object, dict]:
        """The schema a request body names, as the version it would register (subject, version
        and id still 0), its parsed form and the body. ``normalize``: the text and references
        in Confluent's normalized form (``normalize=true``)."""
        if not isinstance(body, dict):
            raise HttpError(422, 422, "Unrecognized request body: expected a JSON object")
        text = body.get("schema")
        if not isinstance(text, str) or not text.strip():
            raise invalid_schema("Invalid schema: empty or missing 'schema'")
        schema_type = (body.get("schemaType") or AVRO).upper()
        references = body.get("references") or []
        if not isinstance(references, list):
            raise invalid_schema("Invalid schema: 'references' must be a list")
        parsed = self.parse(schema_type, text, references)
        if normalize:
            references = _normalized_references(references)
        return (Version("", 0, 0, schema_type, parsed.normalized() if normalize else
                        parsed.canonical, references), parsed, body)

    def _normalize(self, request, subject: str) -> bool:
        """``normalize=true``, or the subject's configuration says so."""
        return _flag(request, "normalize") or self.state.normalize(subject)

    def _live_parsed(self, subject: str) -> list:
        return [self.parse(v.schema_type, v.schema, v.references)
                for v in self.state.versions(subject)]

    def _version(self, subject: str, version: str, deleted: bool = False) -> Version:
        versions = self.state.versions(subject, deleted=True)
        if not versions:
            raise subject_not_found(subject)
        if not deleted and not any(not v.deleted for v in versions):
            raise subject_not_found(subject)
        if version in ("latest", "-1"):
            live = [v for v in versions if deleted or not v.deleted]
            return live[-1]
        try:
            n = int(version)
        except ValueError:
            n = 0
        if not 1 <= n <= MAX_VERSION:
            raise HttpError(422, 42202, f"The specified version '{version}' is not a valid "
                                        "version id. Allowed values are between [1, 2^31-1] "
                                        "and the string \"latest\"")
        found = self.state.subjects[subject].get(n)
        if found is None or (found.deleted and not deleted):
            raise version_not_found(n)
        return found

    def _schema_text(self, v: Version, fmt: str | None) -> str:
        if fmt == "serialized" and v.schema_type == PROTOBUF:
            return self.parse(v.schema_type, v.schema, v.references).serialized()
        return v.schema

    # -- reads ----------------------------------------------------------------------------
    async def root(self, request):
        return _ok({})

    async def schema_types(self, request):
        return _ok([JSON, PROTOBUF, AVRO])

    async def contexts(self, request):
        return _ok(["."])

    async def list_schemas(self, request):
        prefix = request.query.get("subjectPrefix", "")
        deleted, latest = _flag(request, "deleted"), _flag(request, "latestOnly")
        out = []
        for subject in self.state.subject_names(deleted):
            if subject.startswith(prefix):
                versions = self.state.versions(subject, deleted)
                out += [v.to_json() for v in (versions[-1:] if latest else versions)]
        return _ok(out)

    def _by_id(self, request) -> Version:
        try:
            schema_id = int(request.match_info["id"])
        except ValueError:
            raise schema_not_found() from None
        v = self.state.by_id.get(schema_id)
        if v is None:
            raise schema_not_found(f"{schema_id} ")
        return v

    async def schema_by_id(self, request):
        v = self._by_id(request)
        out = v.to_json(with_subject=False)
        out["schema"] = self._schema_text(v, request.query.get("format"))
        return _ok(out)

    async def raw_schema_by_id(self, request):
        v = self._by_id(request)
        return web.Response(text=self._schema_text(v, request.query.get("format")),
                            content_type=CONTENT_TYPE)

    def _uses_of(self, schema_id: int, deleted: bool) -> list[Version]:
        return sorted((v for vs in self.state.subjects.values() for v in vs.values()
                       if v.id == schema_id and (deleted or not v.deleted)),
                      key=lambda v: (v.subject, v.version))

    async def subjects_by_id(self, request):
        v = self._by_id(request)
        return _ok(sorted({u.subject for u in self._uses_of(v.id, _flag(request, "deleted"))}))

    async def versions_by_id(self, request):
        v = self._by_id(request)
        return _ok([{"subject": u.subject, "version": u.version}
                    for u in self._uses_of(v.id, _flag(request, "deleted"))])

    async def list_subjects(self, request):
        prefix = request.query.get("subjectPrefix", "")
        if _flag(request, "deletedOnly"):
            names = [s for s in self.state.subject_names(True)
                     if s not in self.state.subject_names(False)]
        else:
            names = self.state.subject_names(_flag(request, "deleted"))
        return _ok([s for s in names if s.startswith(prefix)])

    async def list_versions(self, request):
        subject = request.match_info["subject"]
        versions = self.state.versions(subject, _flag(request, "deleted"))
        if not versions:
            raise subject_not_found(subject)
        return _ok([v.version for v in versions])

    async def get_version(self, request):
        v = self._version(request.match_info["subject"], request.match_info["version"],
                          _flag(request, "deleted"))
        out = v.to_json()
        out["schema"] = self._schema_text(v, request.query.get("format"))
        return _ok(out)

    async def get_version_schema(self, request):
        v = self._version(request.match_info["subject"], request.match_info["version"],
                          _flag(request, "deleted"))
        return web.Response(text=self._schema_text(v, request.query.get("format")),
                            content_type=CONTENT_TYPE)

    async def referenced_by(self, request):
        v = self._version(request.match_info["subject"], request.match_info["version"], True)
        return _ok(self.state.referenced_by(v.subject, v.version))

    async def lookup(self, request):
        subject = request.match_info["subject"]
        body = await read_json(request)
        versions = self.state.versions(subject, _flag(request, "deleted"))
        if not versions:
            raise subject_not_found(subject)
        normalize = self._normalize(request, subject)
        wanted, _parsed, _body = self._parse_body(body, normalize)
        for v in reversed(versions):
            if self._same(v, wanted, normalize):
                return _ok(v.to_json())
        raise schema_not_found()

    def _same(self, v: Version, wanted: Version, normalize: bool) -> bool:
        """Whether registered version ``v`` is the schema ``wanted``; with ``normalize``, also
        when their normalized forms are the same."""
        if v.schema_type != wanted.schema_type:
            return False
        if v.schema == wanted.schema and v.references == wanted.references:
            return True
        if not normalize:
            return False
        return self.parse(v.schema_type, v.schema, v.references).normalized() == \
            wanted.schema and _normalized_references(v.references) == wanted.references

    def _own_setting(self, request, table: dict, code: int, what: str) -> str | None:
        """The subject a GET of /config or /mode names (None: the global setting), which must
        have a setting of its own in ``table`` unless the request asks ``defaultToGlobal``."""
        subject = request.match_info.get("subject")
        if subject is None or subject in table or _flag(request, "defaultToGlobal"):
            return subject
        raise HttpError(404, code, f"Subject '{subject}' does not have subject-level {what} "
                                   "configured")

    def _deleted_setting(self, request, table: dict) -> str | None:
        """The subject a DELETE of /config or /mode names: 40401 when it has no setting."""
        subject = request.match_info.get("subject")
        if subject is not None and subject not in table:
            raise subject_not_found(subject)
        return subject

    async def get_config(self, request):
        subject = self._own_setting(request, self.state.configs, 40408, "compatibility")
        if subject is None or _flag(request, "defaultToGlobal"):
            return _ok(self.state.config(subject))
        return _ok(self.state.configs[subject])

    async def get_mode(self, request):
        subject = self._own_setting(request, self.state.modes, 40409, "mode")
        return _ok({"mode": self.state.mode(subject)})

    async def check_compatibility(self, request):
        subject = request.match_info["subject"]
        version = request.match_info.get("version")
        body = await read_json(request)
        _v, parsed, _b = self._parse_body(body)
        level = self.state.compatibility(subject)
        if version is None:
            previous = self._live_parsed(subject)
        elif version in ("latest", "-1"):
            self._version(subject, version)
            previous = self._live_parsed(subject)
        else:
            v = self._version(subject, version)
            previous = [self.parse(v.schema_type, v.schema, v.references)]
            level = level.removesuffix("_TRANSITIVE")
        problems = incompatibilities(level, parsed, previous)
        out = {"is_compatible": not problems}
        if _flag(request, "verbose"):
            out["messages"] = problems
        return _ok(out)

    # -- writes (on the primary) -------------------------------------------------------------
    def _check_writable(self, subject: str):
        if self.state.mode(subject) in ("READONLY", "READONLY_OVERRIDE"):
            raise not_permitted(f"Subject {subject} is in read-only mode")

    @writer
    async def register(self, request, raw: bytes):
        subject = request.match_info["subject"]
        normalize = self._normalize(request, subject)
        candidate, parsed, body = self._parse_body(parse_json(raw), normalize)
        candidate.subject = subject
        self._check_writable(subject)
        importing = self.state.mode(subject) == "IMPORT"
        wanted_id, wanted_version = body.get("id"), body.get("version")
        if (wanted_id is not None or wanted_version not in (None, 0, -1)) and not importing:
            raise not_permitted("Subject is not in import mode: a schema id or version can "
                                "only be given in IMPORT mode")
        live = self.state.versions(subject)
        for v in live:
            if self._same(v, candidate, normalize) and wanted_id in (None, v.id):
                return _ok({"id": v.id})
        if not importing:
            problems = incompatibilities(self.state.compatibility(subject), parsed,
                                         self._live_parsed(subject))
            if problems:
                raise HttpError(409, 409, f"Schema being registered is incompatible with an "
                                          f"earlier schema for subject \"{subject}\", details: "
                                          f"{problems}")
        existing_id = self.state.ids.get(candidate.identity())
        if wanted_id is not None:
            other = self.state.by_id.get(wanted_id)
            if other is not None and other.identity() != candidate.identity():
                raise not_permitted(f"Overwrite new schema with id {wanted_id} is not "
                                    "permitted.")
            candidate.id = wanted_id
        else:
            candidate.id = existing_id if existing_id is not None else self.state.max_id + 1
        everything = self.state.versions(subject, deleted=True)
        candidate.version = wanted_version if wanted_version not in (None, 0, -1) else \
            (everything[-1].version + 1 if everything else 1)
        await self.store.write(records.schema_key(subject, candidate.version),
                               records.schema_value(candidate))
        return _ok({"id": candidate.id})

    @writer
    async def delete_subject(self, request, raw: bytes):
        subject = request.match_info["subject"]
        permanent = _flag(request, "permanent")
        everything = self.state.versions(subject, deleted=True)
        if not everything:
            raise subject_not_found(subject)
        self._check_writable(subject)
        live = [v for v in everything if not v.deleted]
        for v in everything:
            self._check_unreferenced(v)
        if permanent:
            if live:
                raise HttpError(404, 40405, f"Subject '{subject}' was not deleted first "
                                            "before being permanently deleted")
            for v in everything:
                await self.store.write(records.schema_key(subject, v.version), None)
            return _ok([v.version for v in everything])
        if not live:
            raise HttpError(404, 40404, f"Subject '{subject}' was soft deleted. Set "
                                        "permanent=true to delete permanently")
        await self.store.write(records.delete_subject_key(subject), records._dumps(
            {"subject": subject, "version": live[-1].version}))
        return _ok([v.version for v in live])

    def _check_unreferenced(self, v: Version):
        if self.state.referenced_by(v.subject, v.version):
            raise HttpError(422, 42206, f"One or more references exist to the schema "
                                        f"{{magic=1,keytype=SCHEMA,subject={v.subject},"
                                        f"version={v.version}}}.")

    @writer
    async def delete_version(self, request, raw: bytes):
        subject = request.match_info["subject"]
        permanent = _flag(request, "permanent")
        version = request.match_info["version"]
        v = self._version(subject, version, deleted=permanent or version not in ("latest", "-1"))
        self._check_writable(subject)
        self._check_unreferenced(v)
        if permanent:
            if not v.deleted:
                raise HttpError(404, 40407, f"Subject '{subject}' Version {v.version} was not "
                                            "deleted first before being permanently deleted")
            await self.store.write(records.schema_key(subject, v.version), None)
        else:
            if v.deleted:
                raise HttpError(404, 40406, f"Subject '{subject}' Version {v.version} was soft "
                                            "deleted. Set permanent=true to delete permanently")
            gone = Version(v.subject, v.version, v.id, v.schema_type, v.schema, v.references,
                           deleted=True)
            await self.store.write(records.schema_key(subject, v.version),
                                   records.schema_value(gone))
        return _ok(v.version)

    @writer
    async def put_config(self, request, raw: bytes):
        """Confluent's ConfigUpdateRequest: ``compatibility`` and/or ``normalize``; fields not
        given keep their value."""
        subject = request.match_info.get("subject")
        self._check_writable(subject)
        body = parse_json(raw)
        if not isinstance(body, dict):
            raise HttpError(422, 422, "Unrecognized request body: expected a JSON object")
        level, normalize = body.get("compatibility"), body.get("normalize")
        if level is not None and (not isinstance(level, str) or level.upper() not in LEVELS) \
                or level is None and normalize is None:
            raise HttpError(422, 42203, "Invalid compatibility level. Valid values are none, "
                                        "backward, forward, full, backward_transitive, "
                                        "forward_transitive, and full_transitive")
        if normalize is not None and not isinstance(normalize, bool):
            raise HttpError(422, 422, "normalize must be true or false")
        config = dict(self.state.configs.get(subject, {}))
        if level is not None:
            config["compatibilityLevel"] = level.upper()
        if normalize is not None:
            config["normalize"] = normalize
        await self.store.write(records.config_key(subject), records._dumps(config))
        return _ok({"compatibility" if k == "compatibilityLevel" else k: v
                    for k, v in config.items()})

    @writer
    async def delete_config(self, request, raw: bytes):
        subject = self._deleted_setting(request, self.state.configs)
        old = self.state.configs.get(subject) or self.state.config(None)
        await self.store.write(records.config_key(subject), None)
        return _ok(old)

    @writer
    async def put_mode(self, request, raw: bytes):
        subject = request.match_info.get("subject")
        body = parse_json(raw)
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise HttpError(422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, "
                                        "READONLY_OVERRIDE and IMPORT")
        mode = mode.upper()
        if mode == "IMPORT" and not _flag(request, "force"):
            existing = self.state.versions(subject) if subject else self.state.subject_names()
            if existing:
                raise not_permitted("Cannot import since found existing subjects")
        await self.store.write(records.mode_key(subject), records._dumps({"mode": mode}))
        return _ok({"mode": mode})

    @writer
    async def delete_mode(self, request, raw: bytes):
        subject = self._deleted_setting(request, self.state.modes)
        old = self.state.mode(subject)
        await self.store.write(records.mode_key(subject), None)
        return _ok({"mode": old})

    del writer

    def routes(self) -> list:
        g, po, pu, d = web.get, web.post, web.put, web.delete
        s = "/subjects/{subject}"
        return [
            g("/", self.root), g("/schemas/types", self.schema_types),
            g("/contexts", self.contexts), g("/schemas", self.list_schemas),
            g("/schemas/ids/{id}", self.schema_by_id),
            g("/schemas/ids/{id}/schema", self.raw_schema_by_id),
            g("/schemas/ids/{id}/subjects", self.subjects_by_id),
            g("/schemas/ids/{id}/versions", self.versions_by_id),
            g("/subjects", self.list_subjects),
            po(s, self.lookup), d(s, self.delete_subject),
            g(s + "/versions", self.list_versions), po(s + "/versions", self.register),
            g(s + "/versions/{version}", self.get_version),
            d(s + "/versions/{version}", self.delete_version),
            g(s + "/versions/{version}/schema", self.get_version_schema),
            g(s + "/versions/{version}/referencedby", self.referenced_by),
            g("/config", self.get_config), pu("/config", self.put_config),
            d("/config", self.delete_config),
            g("/config/{subject}", self.get_config), pu("/config/{subject}", self.put_config),
            d("/config/{subject}", self.delete_config),
            g("/mode", self.get_mode), pu("/mode", self.put_mode),
            g("/mode/{subject}", self.get_mode), pu("/mode/{subject}", self.put_mode),
            d("/mode/{subject}", self.delete_mode),
            po("/compatibility/subjects/{subject}/versions", self.check_compatibility),
            po("/compatibility/subjects/{subject}/versions/{version}", self.check_compatibility),
        ]

