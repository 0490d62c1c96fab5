"""``josefk quotas``: client quotas, as ``kafka-configs.sh --entity-type users|clients``
manages them:

    josefk quotas --alter --bootstrap-server B --user alice --client-id app \
        --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
    josefk quotas --alter --bootstrap-server B --user-default --delete-config request_percentage
    josefk quotas --describe --bootstrap-server B [--user alice] [--client-id app]

(or ``josefk quotas alter ...``, ``josefk quotas describe ...``).
"""
from __future__ import annotations

import sys

from josefk.tools.actions import add_actions
from josefk.tools.client import Client, KafkaError
from josefk.broker.security.quotas import CLIENT, USER
from josefk.wire import errors
from josefk.wire.apis import ALTER_CLIENT_QUOTAS, DESCRIBE_CLIENT_QUOTAS

EXACT, DEFAULT_MATCH, ANY_NAME = 0, 1, 2


def add_commands(sub, common):
    q = common(sub.add_parser("quotas", help="alter and describe client quotas (like "
                                             "kafka-configs.sh --entity-type users|clients)"))
    add_actions(q, {"alter": (quotas_alter, "set or delete quotas of the user and/or client"),
                    "describe": (quotas_describe, "the quotas of the user and/or client, or "
                                                  "every quota")})
    q.add_argument("--user", help="the user principal's name")
    q.add_argument("--user-default", action="store_true", help="the default of every user")
    q.add_argument("--client-id", help="the client id")
    q.add_argument("--client-default", action="store_true",
                   help="the default of every client id")
    q.add_argument("--add-config", default="", metavar="KEY=VALUE[,KEY=VALUE]",
                   help="--alter: producer_byte_rate, consumer_byte_rate, request_percentage, "
                        "controller_mutation_rate")
    q.add_argument("--delete-config", default="", metavar="KEY[,KEY]",
                   help="--alter: the quotas to delete")


def _entity(args) -> list[tuple[str, str | None]]:
    out = []
    if args.user is not None or args.user_default:
        out.append((USER, None if args.user_default else args.user))
    if args.client_id is not None or args.client_default:
        out.append((CLIENT, None if args.client_default else args.client_id))
    return out


def quotas_alter(args) -> int:
    R = ALTER_CLIENT_QUOTAS.Request
    entity = _entity(args)
    if not entity:
        print("Error: name a --user/--user-default and/or --client-id/--client-default",
              file=sys.stderr)
        return 1
    ops = []
    for kv in filter(None, (s.strip() for s in args.add_config.split(","))):
        k, _, v = kv.partition("=")
        ops.append(R.EntryData.OpData(key=k.strip(), value=float(v), remove=False))
    ops += [R.EntryData.OpData(key=k.strip(), value=0.0, remove=True)
            for k in args.delete_config.split(",") if k.strip()]
    with Client.from_args(args) as c:
        resp = c.request(ALTER_CLIENT_QUOTAS, entries=[R.EntryData(
            entity=[R.EntryData.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            ops=ops)])
    e = resp.entries[0]
    if e.error_code:
        print(f"Error: {errors.name(e.error_code)}: {e.error_message}", file=sys.stderr)
        return 1
    print(f"Completed updating config for {entity_text(entity)}.")
    return 0


def quotas_describe(args, any_of=(), strict=False) -> int:
    """The quotas of the entities ``args`` name, and of any name of the ``any_of`` entity types;
    ``strict``: of entities with no other part (kafka-configs.sh's way), else of every entity
    that has these parts."""
    Q = DESCRIBE_CLIENT_QUOTAS.Request
    components = [Q.ComponentData(entity_type=t, match_type=DEFAULT_MATCH if n is None
                                  else EXACT, match=n) for t, n in _entity(args)]
    components += [Q.ComponentData(entity_type=t, match_type=ANY_NAME, match=None)
                   for t in any_of]
    with Client.from_args(args) as c:
        resp = c.request(DESCRIBE_CLIENT_QUOTAS, components=components, strict=strict)
    if resp.error_code:
        raise KafkaError(resp.error_code, resp.error_message)
    for e in resp.entries or []:
        values = ", ".join(f"{v.key}={int(v.value) if v.value.is_integer() else v.value}"
                           for v in e.values)
        print(f"Quota configs for {entity_text([(d.entity_type, d.entity_name) for d in e.entity])}"
              f" are {values}")
    return 0


def entity_text(entity) -> str:
    label = {USER: "user-principal", CLIENT: "client-id"}
    return " and ".join(f"the default {label[t]}" if n is None else f"{label[t]} '{n}'"
                        for t, n in entity)
