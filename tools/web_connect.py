"""The web console's Connect page: a blocking client of Kafka Connect's REST API (``--connect-url``,
the workers of one Connect cluster tried in order; ``http://user:password@host:8083`` for basic
authentication), the connectors with their type, state and tasks (worker, trace), each
connector's config, topics and offsets, and the actions Connect offers: restart (the connector,
with its tasks, or only what failed), pause, resume, stop, delete, a task's restart and the
reset of a stopped connector's offsets. Only HTTP: nothing of josefk's Connect is imported."""
from __future__ import annotations

import argparse
import ssl
from urllib.parse import urlencode, urlsplit

from josefk.httpd.client import AnswerError, Unreachable, request_json, split_credentials
from josefk.tools import web_html as h

TIMEOUT = 10.0
STATE_KINDS = {"RUNNING": "ok", "FAILED": "bad", "PAUSED": "held", "STOPPED": "held",
               "UNASSIGNED": "", "RESTARTING": ""}
RESTART_MODES = {"connector": (False, False), "all": (True, False), "failed": (True, True)}


class ConnectError(Exception):
    """Connect's error answer (``status``, its message), or no answer (``status`` None)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message, self.status = message, status


class ConnectClient:
    """Requests to a Connect cluster's REST API, to the first of ``urls`` that answers."""

    def __init__(self, urls: list[str], timeout: float = TIMEOUT):
        self.urls = urls
        self.url = split_credentials(urls[0])[0]
        self.timeout = timeout
        self.ssl = ssl.create_default_context()

    def request(self, method: str, path: str, body=None, **query):
        """The JSON answer (None for an empty one) to ``method`` ``path`` (segments already
        quoted)."""
        target = path + ("?" + urlencode(query, doseq=True) if query else "")
        try:
            return request_json(self.urls, target, method=method, body=body,
                                headers={"Accept": "application/json"}, timeout=self.timeout,
                                context=self.ssl)
        except AnswerError as err:
            message = err.body.get("message") if isinstance(err.body, dict) else None
            text = message or err.raw.decode(errors="replace").strip() or err.reason
            raise ConnectError(f"{err.status}: {text}", err.status) from None
        except Unreachable as err:
            raise ConnectError(f"Connect at {self.url} unreachable: {err}") from None

    def get(self, path: str, **query):
        return self.request("GET", path, **query)


def connect_urls(option: str) -> list[str]:
    """A ``--connect-url`` value (argparse's type): one URL or a comma-separated list."""
    urls = [u.strip() for u in option.split(",") if u.strip()]
    if not urls:
        raise argparse.ArgumentTypeError("no URL given")
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise argparse.ArgumentTypeError(f"{url!r} is not an http(s)://host:port URL")
    return urls


def connect_client(options: list[list[str]]) -> ConnectClient | None:
    """The client of the ``--connect-url`` options given, if any."""
    urls = [u for option in options for u in option]
    return ConnectClient(urls) if urls else None


# -- pages ------------------------------------------------------------------------------------------
NO_CONNECT = ("<section class='card' id='no-connect'><p>No Kafka Connect cluster is configured."
              "</p><p class='muted'>Start the console with <code>--connect-url URL</code> (a "
              "worker's REST API, e.g. <code>http://localhost:8083</code>; repeat it or give a "
              "comma-separated list for several workers of the cluster).</p></section>")


def state_badge(state: str) -> str:
    return h.badge(state, f"state {STATE_KINDS.get(state, '')}")


def _flash(query) -> str | None:
    return (query.get("done") or [None])[0]


def connect_page(data, query) -> str:
    """The connectors of the Connect cluster (``data.connect``; None: none configured)."""
    connect = data.connect
    if connect is None:
        return h.page("Connect", NO_CONNECT, "connect")
    server = connect.get("/")
    connectors = connect.get("/connectors", expand=["status", "info"])
    rows, failed_tasks, running = [], 0, 0
    for name in sorted(connectors):
        status, info = connectors[name].get("status", {}), connectors[name].get("info", {})
        state = status.get("connector", {}).get("state", "UNASSIGNED")
        tasks = status.get("tasks", [])
        failed = sum(t["state"] == "FAILED" for t in tasks)
        failed_tasks += failed
        running += state == "RUNNING"
        rows.append((h.link(f"/connect/{h.q(name)}", name),
                     h.badge(status.get("type") or info.get("type") or "unknown"),
                     state_badge(state),
                     f"{sum(t['state'] == 'RUNNING' for t in tasks)}/{len(tasks)}"
                     + (f" {h.badge(f'{failed} failed', 'state bad')}" if failed else ""),
                     h.e(status.get("connector", {}).get("worker_id", "")),
                     h.e(info.get("config", {}).get("connector.class", ""))))
    tiles = [("connectors", len(connectors)), ("running", running),
             ("failed tasks", failed_tasks),
             ("Kafka cluster", h.e(server.get("kafka_cluster_id"))),
             ("Connect version", h.e(server.get("version")))]
    table = h.table(["Connector", "Type", "State", "Tasks running", "Worker", "Class"], rows,
                    "connectors")
    return h.page("Connect", f"<p class='muted' id='connect-url'>Workers at "
                  f"<b>{h.e(connect.url)}</b></p>{h.stats(tiles)}"
                  f"<div id='connect-live' data-live='3000'>{h.card('Connectors', table)}</div>",
                  "connect", flash=_flash(query))


def _trace(trace: str | None) -> str:
    if not trace:
        return ""
    first = trace.strip().splitlines()[0] if trace.strip() else trace
    return h.expandable(f"<span class='line'>{h.e(first[:h.LINE_CHARS])}</span>",
                        f"<pre>{h.e(trace)}</pre>")


def _optional(connect: ConnectClient, path: str):
    """An answer a connector may not have (topic tracking off, offsets of a connector type
    that keeps none): the answer, or Connect's message."""
    try:
        return connect.get(path), None
    except ConnectError as e:
        if e.status is None:
            raise
        return None, e.message


def connector_page(data, query, name: str) -> str:
    connect = data.connect
    if connect is None:
        return h.page("Connect", NO_CONNECT, "connect")
    base = f"/connectors/{h.q(name)}"
    info, status = connect.get(base), connect.get(base + "/status")
    offsets, offsets_error = _optional(connect, base + "/offsets")
    topics, _topics_error = _optional(connect, base + "/topics")
    here = f"/connect/{h.q(name)}"
    state = status["connector"]["state"]
    tasks = h.table(["Task", "State", "Worker", "Trace", ""], [
        (t["id"], state_badge(t["state"]), h.e(t.get("worker_id", "")), _trace(t.get("trace")),
         h.hidden_form(f"{here}/tasks/{t['id']}/restart", {}, "Restart", danger=False))
        for t in status.get("tasks", [])], "tasks", num={0})
    config = h.table(["Setting", "Value"], [(h.e(k), h.e(v)) for k, v in
                                            sorted(info["config"].items())], "config")
    offset_rows = [(h.json_line(o.get("partition")), h.json_line(o.get("offset")))
                   for o in (offsets or {}).get("offsets", [])]
    offsets_html = (h.table(["Partition", "Offset"], offset_rows, "offsets") if offsets_error
                    is None else f"<p class='muted' id='offsets-error'>{h.e(offsets_error)}</p>")
    offsets_html += h.hidden_form(f"{here}/reset-offsets", {}, "Reset offsets") + \
        "<p class='muted'>Offsets are reset (or altered) only while the connector is " \
        "STOPPED.</p>"
    actions = h.actions([
        ("Restart", h.form(f"{here}/restart", h.select("mode", "What", [
            ("connector", "the connector"), ("all", "the connector and its tasks"),
            ("failed", "what failed")]), "Restart", "restart")),
        ("Pause", h.form(f"{here}/pause", "", "Pause", "pause")),
        ("Resume", h.form(f"{here}/resume", "", "Resume", "resume")),
        ("Stop", h.form(f"{here}/stop", "", "Stop", "stop", danger=True)),
        ("Delete", h.form(f"{here}/delete", "", "Delete", "delete", danger=True))])
    tiles = [("type", h.e(info.get("type"))), ("state", f"<span id='state'>{state_badge(state)}"
                                                        f"</span>"),
             ("worker", h.e(status["connector"].get("worker_id", ""))),
             ("tasks", len(status.get("tasks", []))),
             ("topics", h.e(", ".join(topics[name]["topics"]) if topics else "-"))]
    connector_trace = status["connector"].get("trace")
    trace = h.card("Connector trace", f"<pre id='connector-trace'>{h.e(connector_trace)}</pre>") \
        if connector_trace else ""
    return h.page(name, h.stats(tiles) + trace +
                  f"<div id='tasks-live' data-live='3000'>{h.card('Tasks', tasks)}</div>" +
                  h.card("Actions", actions) + h.card("Offsets", offsets_html) +
                  h.card("Config", config), "connect", [("Connect", "/connect")], flash=_flash(query))


# -- actions: (what it does, how, where to go after) -------------------------------------------------
def _action(data, name: str, what: str, method: str, path: str,
            done: str, back: str | None = None, **query):
    connect = data.connect
    if connect is None:
        raise ConnectError("no Kafka Connect cluster is configured (--connect-url)")

    def run(_cluster):
        connect.request(method, f"/connectors/{h.q(name)}{path}", **query)
    return what, run, (back or f"/connect/{h.q(name)}") + "?done=" + h.q(done)


def restart_action(data, form, name):
    mode = form.get("mode", "connector")
    if mode not in RESTART_MODES:
        raise ValueError(f"restart mode {mode!r}: connector, all or failed")
    include_tasks, only_failed = RESTART_MODES[mode]
    scope = {"connector": "", "all": " and its tasks", "failed": " (only what failed)"}[mode]
    return _action(data, name, f"Restart connector {name}{scope}?", "POST", "/restart",
                   f"Restarting {name}{scope}", includeTasks=str(include_tasks).lower(),
                   onlyFailed=str(only_failed).lower())


def pause_action(data, _form, name):
    return _action(data, name, f"Pause connector {name} and its tasks?", "PUT", "/pause",
                   f"Pausing {name}")


def resume_action(data, _form, name):
    return _action(data, name, f"Resume connector {name}?", "PUT", "/resume",
                   f"Resuming {name}")


def stop_action(data, _form, name):
    return _action(data, name, f"Stop connector {name}? Its tasks are shut down (its "
                   "config is kept).", "PUT", "/stop", f"Stopped {name}")


def delete_action(data, _form, name):
    return _action(data, name, f"Delete connector {name}? This cannot be undone.", "DELETE",
                   "", f"Deleted {name}", back="/connect")


def reset_connector_offsets_action(data, _form, name):
    return _action(data, name, f"Reset every offset of connector {name}? It must be "
                   "STOPPED; it starts from scratch when resumed.", "DELETE", "/offsets",
                   f"Offsets of {name} reset")


def restart_task_action(data, _form, name, task):
    if not task.isdigit():
        raise ValueError(f"task {task!r} is not a task number")
    return _action(data, name, f"Restart task {task} of connector {name}?", "POST",
                   f"/tasks/{task}/restart", f"Restarting task {task} of {name}")
