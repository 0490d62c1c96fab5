"""SCRAM credentials in ZooKeeper, where Kafka keeps them: ``/config/users/<user>`` holds
``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,iterations=N"}}``
and every change is announced with a ``/config/changes`` notification. Brokers read a user's
credentials when the user authenticates, so a change is seen at the next authentication."""
from __future__ import annotations

from kazoo.exceptions import NoNodeError

from zk import znodes as zn

USERS = "users"
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


def _write(k, user: str, credentials: dict) -> None:
    path = zn.config_entity_path(USERS, user)
    config = {m: v for m, v in _read(k, user).items() if m not in SCRAM_KEYS}
    config.update(credentials)
    k.ensure_path(path)
    k.set(path, zn.encode_config(config))
    k.create(zn.config_change_path(), zn.encode_config_change(USERS, user), sequence=True,
             makepath=True)


class ZkCredentialStore:
    def __init__(self, zk):
        self.zk = zk

    async def get(self, user: str) -> dict:
        return _scram(await self.zk.run(_read, user))

    async def all_users(self) -> dict:
        return {u: c for u, c in (await self.zk.run(_read_all)).items() if c}

    async def put(self, user: str, credentials: dict) -> None:
        await self.zk.run(_write, user, credentials)
