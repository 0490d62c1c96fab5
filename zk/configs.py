"""Dynamic config entities in ZooKeeper, as Kafka's AdminZkClient keeps them: the overrides of
one entity in ``/config/<type>/<name>`` (topics, and brokers by id or ``<default>`` for the
cluster-wide default), and a sequential ``/config/changes/config_change_<seq>`` notification
after every write, which every broker watches to reload that entity."""
from __future__ import annotations

from kazoo.exceptions import NoNodeError, NodeExistsError

from josefk.zk import znodes as zn

DEFAULT_BROKER = "<default>"


def read_entity(k, entity_type: str, name: str) -> dict:
    try:
        return zn.decode_config(k.get(zn.config_entity_path(entity_type, name))[0])
    except NoNodeError:
        return {}


def read_entities(k, entity_type: str) -> dict[str, dict]:
    """Every entity of ``entity_type``: {name: overrides}."""
    try:
        names = k.get_children(zn.config_entity_type_path(entity_type))
    except NoNodeError:
        return {}
    return {name: read_entity(k, entity_type, name) for name in names}


def write_entity(k, entity_type: str, name: str, configs: dict) -> None:
    """Replace the entity's overrides, then announce the change."""
    path = zn.config_entity_path(entity_type, name)
    data = zn.encode_config(configs)
    try:
        k.set(path, data)
    except NoNodeError:
        try:
            k.create(path, data, makepath=True)
        except NodeExistsError:
            k.set(path, data)
    k.create(zn.config_change_path(), zn.encode_config_change(entity_type, name),
             sequence=True, makepath=True)


def read_change(k, child: str) -> tuple[str, str] | None:
    """The (type, name) a notification child announces, or None if it is gone."""
    try:
        return zn.decode_config_change(k.get(f"{zn.CONFIG_CHANGES}/{child}")[0])
    except NoNodeError:
        return None
