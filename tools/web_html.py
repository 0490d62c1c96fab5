"""HTML for the web console: small functions that return escaped page fragments."""
from __future__ import annotations

import json
from html import escape
from urllib.parse import quote

CSS = """
body{font-family:system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
nav{background:#1d2330;padding:.6em 1.2em}nav a{color:#fff;margin-right:1.4em;text-decoration:none}
nav b{color:#7fd1b9;margin-right:2em}main{padding:1em 1.6em}
table{border-collapse:collapse;background:#fff;margin:.6em 0 1.4em}
th,td{border:1px solid #d8dce3;padding:.25em .6em;text-align:left;font-size:.92em;vertical-align:top}
th{background:#eef0f4}pre{margin:0;white-space:pre-wrap;max-width:60em}
form.inline{display:inline-block;margin:.3em 1em .3em 0;padding:.5em;background:#fff;
border:1px solid #d8dce3}.flash{background:#e3f6ee;padding:.5em;border:1px solid #7fd1b9}
.error{background:#fde8e8;padding:.5em;border:1px solid #e08080}
.confirm{background:#fff4dd;padding:1em;border:1px solid #e0b050}
"""


def e(v) -> str:
    return escape("" if v is None else str(v))


def q(v) -> str:
    return quote(str(v), safe="")


def page(title: str, body: str, flash: str | None = None, error: str | None = None) -> str:
    notes = (f'<p class="flash" id="flash">{e(flash)}</p>' if flash else "") + \
            (f'<p class="error" id="error">{e(error)}</p>' if error else "")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)} - josefk"
            f"</title><style>{CSS}</style></head><body><nav><b>josefk console</b>"
            f"<a href='/'>Cluster</a><a href='/topics'>Topics</a><a href='/groups'>Groups</a>"
            f"<a href='/create-topic'>Create topic</a></nav><main><h1>{e(title)}</h1>{notes}"
            f"{body}</main></body></html>")


def table(headers, rows, table_id: str = "") -> str:
    """``rows`` hold already-escaped HTML cells."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    ident = f" id='{e(table_id)}'" if table_id else ""
    return f"<table{ident}><tr>{head}</tr>{body}</table>"


def link(href: str, text) -> str:
    return f"<a href='{e(href)}'>{e(text)}</a>"


def form(action: str, fields: str, button: str, form_id: str) -> str:
    return (f"<form class='inline' method='post' action='{e(action)}' id='{e(form_id)}'>"
            f"{fields} <button type='submit'>{e(button)}</button></form>")


def field(name: str, label: str, value="", kind: str = "text") -> str:
    return (f"<label>{e(label)} <input type='{kind}' name='{e(name)}' value='{e(value)}'>"
            f"</label> ")


def select(name: str, label: str, options, selected=None) -> str:
    opts = "".join(f"<option value='{e(v)}'{' selected' if str(v) == str(selected) else ''}>"
                   f"{e(text)}</option>" for v, text in options)
    return f"<label>{e(label)} <select name='{e(name)}'>{opts}</select></label> "


def confirmation(action: str, what: str, fields: dict) -> str:
    """A page asking to confirm ``what``; posting it again with confirm=yes does it."""
    hidden = "".join(f"<input type='hidden' name='{e(k)}' value='{e(v)}'>"
                     for k, v in fields.items())
    return (f"<div class='confirm'><p id='confirm-text'>{e(what)}</p>"
            f"<form method='post' action='{e(action)}'>{hidden}"
            f"<input type='hidden' name='confirm' value='yes'>"
            f"<button type='submit' id='confirm'>Confirm</button> "
            f"<a href='javascript:history.back()'>Cancel</a></form></div>")


def pretty(data: bytes | None) -> str:
    """A record's key or value: JSON pretty-printed when it is JSON, else text."""
    if data is None:
        return "<i>null</i>"
    text = bytes(data).decode("utf-8", "replace")
    try:
        return f"<pre class='json'>{e(json.dumps(json.loads(text), indent=2))}</pre>"
    except ValueError:
        return f"<pre>{e(text)}</pre>"


def lag_chart(samples, width: int = 600, height: int = 160) -> str:
    """An inline SVG line chart of (unix seconds, total lag) samples."""
    if len(samples) < 2:
        return "<p id='lag-chart'>The lag chart fills in as the console samples the group.</p>"
    t0, t1 = samples[0][0], samples[-1][0]
    top = max(v for _, v in samples) or 1
    pts = " ".join(f"{(t - t0) / max(t1 - t0, 1e-9) * width:.1f},"
                   f"{height - v / top * height:.1f}" for t, v in samples)
    return (f"<svg id='lag-chart' width='{width}' height='{height + 20}' "
            f"style='background:#fff;border:1px solid #d8dce3'><polyline fill='none' "
            f"stroke='#2a7de1' stroke-width='2' points='{pts}'/><text x='4' y='14' "
            f"font-size='12'>max {top}</text><text x='4' y='{height + 16}' font-size='12'>"
            f"last {int(t1 - t0)} s, {len(samples)} samples</text></svg>")
