"""The seam between the handlers and the process wiring: handlers get a `Services` object
(broker/handlers/services.py), `app.Broker` is one, and no handler reaches past it."""
from __future__ import annotations

import ast
import inspect
import re

import pytest

from josefk.broker.app import Broker
from josefk.broker.config import BrokerConfig
from josefk.broker.handlers.services import Services
from josefk.wire.apis import ALL_APIS
from testkit.layers import REPO

MEMBERS = set(Services.__annotations__) | {
    n for n, v in vars(Services).items()
    if not n.startswith("_") and (inspect.isfunction(v) or isinstance(v, property))}


def _handler_functions():
    """(module, function) of every function of broker/handlers/ with a ``broker`` parameter."""
    for path in sorted((REPO / "broker" / "handlers").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.args \
                    and node.args.args[0].arg == "broker":
                yield path.stem, node


@pytest.fixture
def broker(tmp_path):
    b = Broker(BrokerConfig({"log.dirs": str(tmp_path)}))
    yield b
    b.logs.close()


def test_the_broker_is_the_handlers_services(broker):
    assert len(MEMBERS) > 20
    missing = {name for name in MEMBERS if not hasattr(broker, name)}
    assert not missing, f"app.Broker lacks what handlers are promised: {missing}"


@pytest.mark.parametrize("props", [{}, {"zookeeper.connect": "127.0.0.1:1",
                                        "josefk.metrics.port": "0"}], ids=["single", "cluster"])
def test_no_room_holds_the_broker(tmp_path, props):
    """The rooms below the wiring get their collaborators, never the broker object."""
    b = Broker(BrokerConfig({"log.dirs": str(tmp_path), **props}))
    try:
        rooms = [b.share, b.share_persister, b.group_configs, b.dynamic, b.faults,
                 b.txn.write_markers]
        if props:
            rooms += [b.cluster, b.cluster.controller, b.metrics]
        for room in rooms:
            held = [k for k, v in vars(room).items() if v is b]
            assert not held, f"{type(room).__name__} holds the broker as {held}"
        assert b.share.replicas is b.replicas and b.dynamic.groups is b.group_configs.groups
    finally:
        b.logs.close()


def test_every_handler_takes_services_and_reaches_nothing_else():
    seen = 0
    for module, fn in _handler_functions():
        first = fn.args.args[0]
        assert isinstance(first.annotation, ast.Name) and first.annotation.id == "Services", \
            f"{module}.{fn.name}: its broker parameter is not typed as Services"
        used = {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name) and n.value.id == "broker"}
        assert used <= MEMBERS, f"{module}.{fn.name} reaches past Services: {used - MEMBERS}"
        seen += 1
    assert seen > 60


def test_every_api_handler_names_its_typed_request():
    """``handle_<api>(broker: Services, ctx, req: <Api>Request)``: an editor knows the fields."""
    by_name = {re.sub(r"(?<!^)(?=[A-Z])", "_", api.name).lower(): api for api in ALL_APIS}
    typed = 0
    for module, fn in _handler_functions():
        api = by_name.get(fn.name.removeprefix("handle_"))
        if fn.name.startswith("handle_") and api is not None:
            req = fn.args.args[2].annotation
            assert isinstance(req, ast.Name) and req.id == api.Request.__name__, \
                f"{module}.{fn.name}: req is not typed {api.Request.__name__}"
            typed += 1
    assert typed >= 68
