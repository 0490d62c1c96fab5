"""User and client configs in ZooKeeper, where Kafka keeps them: SCRAM credentials and quotas.

``/config/users/<user>`` holds ``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,
server_key=...,iterations=N","producer_byte_rate":"1024"}}``; client-id quotas live under
``/config/clients/<client-id>`` and ``/config/users/<user>/clients/<client-id>`` (``<default>``
for the defaults). Every change is announced with a ``/config/changes`` notification. Brokers
read a user's credentials when the user authenticates, and reload quotas on notifications."""
from __future__ import annotations

import asyncio

from kazoo.exceptions import NoNodeError

from josefk.broker.security.quotas import CLIENT, KEYS as QUOTA_KEYS, USER

from josefk.zk import znodes as zn

USERS = "users"  # the children of /config
SCRAM_KEYS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def _read(k, user: str) -> dict:
    try:
        return zn.decode_config(k.get(zn.config_entity_path(USERS, user))[0])
    except NoNodeError:
        return {}


def _read_all(k) -> dict:
    try:
        users = k.get_children(zn.config_entity_type_path(USERS))
    except NoNodeError:
        return {}
    return {u: _scram(_read(k, u)) for u in users}


def _scram(config: dict) -> dict:
    return {m: v for m, v in config.items() if m in SCRAM_KEYS}


def _write(k, entity_path: str, keys, values: dict) -> None:
    """Replace the ``keys`` of ``/config/<entity_path>`` by ``values``, keeping its other
    configs, and announce the change."""
    path = f"{zn.CONFIG}/{entity_path}"
    try:
        config = zn.decode_config(k.get(path)[0])
    except NoNodeError:
        config = {}
    config = {n: v for n, v in config.items() if n not in keys}
    config.update(values)
    k.ensure_path(path)
    k.set(path, zn.encode_config(config))
    entity_type, _, name = entity_path.partition("/")
    k.create(zn.config_change_path(), zn.encode_config_change(entity_type, name),
             sequence=True, makepath=True)


class ZkCredentialStore:
    def __init__(self, zk):
        self.zk = zk

    async def get(self, user: str) -> dict:
        return _scram(await self.zk.run(_read, user))

    async def all_users(self) -> dict:
        return {u: c for u, c in (await self.zk.run(_read_all)).items() if c}

    async def put(self, user: str, credentials: dict) -> None:
        await self.zk.run(_write, f"{USERS}/{user}", SCRAM_KEYS, credentials)


def _quota_path(entity: tuple) -> str:
    names = dict(entity)
    if USER in names:
        path = f"{USERS}/{names[USER]}"
        return f"{path}/clients/{names[CLIENT]}" if CLIENT in names else path
    return f"clients/{names[CLIENT]}"


def _children(k, path) -> list[str]:
    try:
        return k.get_children(path)
    except NoNodeError:
        return []


def _read_quotas(k) -> dict:
    out = {}

    def add(entity, path):
        try:
            config = zn.decode_config(k.get(path)[0])
        except NoNodeError:
            return
        values = {n: float(v) for n, v in config.items() if n in QUOTA_KEYS}
        if values:
            out[entity] = values
    for user in _children(k, f"{zn.CONFIG}/{USERS}"):
        add(((USER, user),), f"{zn.CONFIG}/{USERS}/{user}")
        for client in _children(k, f"{zn.CONFIG}/{USERS}/{user}/clients"):
            add(((USER, user), (CLIENT, client)), f"{zn.CONFIG}/{USERS}/{user}/clients/{client}")
    for client in _children(k, f"{zn.CONFIG}/clients"):
        add(((CLIENT, client),), f"{zn.CONFIG}/clients/{client}")
    return out


class ZkQuotaStore:
    def __init__(self, zk):
        self.zk = zk

    async def load(self) -> dict:
        return await self.zk.run(_read_quotas)

    async def save(self, entity: tuple, values: dict) -> None:
        await self.zk.run(_write, _quota_path(entity), QUOTA_KEYS,
                          {n: repr(v) for n, v in values.items()})

    async def watch(self, reload) -> None:
        """Call ``reload()`` (a coroutine function) on every config change notification."""
        await self.zk.watch_children(zn.CONFIG_CHANGES,
                                     lambda _children: asyncio.ensure_future(reload()))
