"""HTML for the web console: small functions that return escaped page fragments, one stylesheet
and one script, both inline (the console serves pages that need nothing from elsewhere).

Times travel as milliseconds since the epoch (``data-ms``) with a UTC rendering; the script
rewrites them in the viewer's time zone."""
from __future__ import annotations

import datetime
import json
import math
import re
from html import escape
from urllib.parse import quote

CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2937;
background:#f3f4f6}
a{color:#1d4ed8;text-decoration:none}a:hover{text-decoration:underline}
header{background:#111827;display:flex;align-items:stretch;padding:0 24px;height:48px}
header .brand{color:#fff;font-weight:600;font-size:15px;display:flex;align-items:center;
gap:8px;margin-right:32px}
header .brand i{display:inline-block;width:14px;height:14px;border-radius:3px;
background:linear-gradient(135deg,#34d399,#3b82f6)}
header nav{display:flex}
header nav a{color:#d1d5db;padding:0 14px;display:flex;align-items:center;
border-bottom:3px solid transparent}
header nav a:hover{color:#fff;text-decoration:none}
header nav a.active{color:#fff;border-bottom-color:#34d399}
main{padding:20px 28px 40px}
.crumbs{color:#6b7280;font-size:13px;margin-bottom:4px}.crumbs a{color:#6b7280}
.crumbs span+span:before{content:"/";margin:0 6px;color:#9ca3af}
h1{font-size:22px;font-weight:600;margin:0 0 16px;word-break:break-all}
h2{font-size:15px;font-weight:600;margin:0 0 12px}
.card{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:16px 18px;
margin-bottom:18px;overflow-x:auto}
.stats{display:flex;flex-wrap:wrap;gap:12px;margin-bottom:18px}
.stat{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:10px 16px;
min-width:140px}
.stat>b{display:block;font-size:20px;font-weight:600}.stat>span{color:#6b7280;font-size:12px}
table{border-collapse:collapse;width:100%}
th{text-align:left;font-size:12px;font-weight:600;color:#4b5563;background:#f9fafb;
padding:7px 10px;border-bottom:1px solid #e5e7eb;white-space:nowrap}
td{padding:7px 10px;border-bottom:1px solid #f0f1f3;vertical-align:top;
overflow-wrap:anywhere}
tr:hover td{background:#f9fafb}td.none{text-align:left!important}
#messages{table-layout:fixed;font-size:13px}#messages td{padding:4px 8px;overflow:hidden}
#messages th{white-space:normal}#messages td:nth-child(3){white-space:nowrap}
#messages th:nth-child(1){width:6em}#messages th:nth-child(2){width:6.5em}
#messages th:nth-child(3){width:14.5em}#messages th:nth-child(4){width:16%}
#messages th:nth-child(6){width:14%}
.line{display:block;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
details.rec>summary{list-style:none;cursor:pointer}
details.rec>summary::-webkit-details-marker{display:none}
details.rec>summary .line:before{content:"\\25B8  ";color:#9ca3af}
details.rec[open]>summary .line:before{content:"\\25BE  "}
details.rec[open]>summary .line{color:#9ca3af}
.json.line .k,.json.line .s,.json.line .n,.json.line .b{white-space:nowrap}
#configs td:nth-child(n+3){white-space:nowrap;overflow-wrap:normal;font-size:12px;
color:#4b5563}tr.override td{background:#fffbeb}
tr.override td:first-child{box-shadow:inset 3px 0 #f59e0b}
tr.uncommitted td:nth-child(3),tr.uncommitted td:nth-child(5){color:#b45309}
.pager{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;margin-top:10px}
.filterbox{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;margin-bottom:10px}
.subnav{display:flex;gap:6px;margin-bottom:14px}
.subnav a{padding:4px 12px;border-radius:6px;background:#e5e7eb;color:#374151}
.subnav a.active{background:#111827;color:#fff}
textarea{font:12.5px/1.4 ui-monospace,"DejaVu Sans Mono",Menlo,monospace;padding:5px 8px;
border:1px solid #d1d5db;border-radius:6px}
.actions{display:grid;grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:12px}
.action{border:1px solid #e5e7eb;border-radius:6px;padding:10px 12px}
.action h3{font-size:13px;font-weight:600;margin:0 0 8px;color:#374151}
pre,code{font:12.5px/1.45 ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace}
pre{margin:0;white-space:pre-wrap;word-break:break-all;max-width:80em}
pre.block{background:#f9fafb;border:1px solid #e5e7eb;border-radius:6px;padding:10px 12px;
max-height:32em;overflow:auto}
.json .k{color:#7c3aed}.json .s{color:#047857}.json .n{color:#1d4ed8}.json .b{color:#b45309}
.proto .kw{color:#7c3aed;font-weight:600}.proto .c{color:#6b7280}
.badge{display:inline-block;font-size:11px;font-weight:600;border-radius:10px;padding:1px 8px;
background:#e5e7eb;color:#374151;margin-right:6px}
.badge.AVRO{background:#dbeafe;color:#1e40af}.badge.JSON{background:#d1fae5;color:#065f46}
.badge.PROTOBUF{background:#ede9fe;color:#5b21b6}.badge.ok{background:#d1fae5;color:#065f46}
.badge.bad{background:#fee2e2;color:#991b1b}.badge.held{background:#fef3c7;color:#92400e}
.schema-of{font-size:12px;color:#4b5563;margin-bottom:4px}
.muted{color:#6b7280}.note{font-size:12px;color:#92400e;margin-bottom:4px}
details.raw summary{font-size:12px;color:#6b7280;cursor:pointer;margin-top:4px}
form.bar{display:flex;flex-wrap:wrap;align-items:flex-end;gap:10px 14px}
form.bar label{display:flex;flex-direction:column;font-size:12px;color:#4b5563;gap:3px}
input,select{font:inherit;padding:5px 8px;border:1px solid #d1d5db;border-radius:6px;
background:#fff}
button,.button{font:inherit;font-weight:600;padding:6px 14px;border-radius:6px;border:0;
background:#2563eb;color:#fff;cursor:pointer;display:inline-block}
.button:hover,button:hover{text-decoration:none;background:#1d4ed8}
button.small{padding:2px 10px;font-size:12px}form.inline{margin:0}
button.danger{background:#dc2626}button.danger:hover{background:#b91c1c}
.toolbar{display:flex;justify-content:space-between;align-items:flex-end;gap:12px;
margin-bottom:12px}
.flash,.error,.confirm{padding:10px 14px;border-radius:8px;margin-bottom:16px}
.flash{background:#d1fae5;border:1px solid #6ee7b7}
.error{background:#fee2e2;border:1px solid #fca5a5}
.confirm{background:#fef3c7;border:1px solid #fcd34d}
svg.chart{max-width:100%;height:auto}
@media (max-width:900px){header{padding:0 12px}header .brand{margin-right:12px}
header nav a{padding:0 8px}main{padding:14px 12px 30px}.card{padding:12px}
.stat{min-width:110px;padding:8px 12px}#messages th:nth-child(6){width:12%}}
@media (max-width:640px){header .brand b{display:none}}
svg.chart text{font:11px system-ui,sans-serif;fill:#4b5563}
svg.chart .axis{stroke:#6b7280;shape-rendering:crispEdges}
svg.chart .grid{stroke:#e5e7eb;shape-rendering:crispEdges}
svg.chart .line{fill:none;stroke:#2563eb;stroke-width:2}
svg.chart .area{fill:#2563eb;fill-opacity:.12;stroke:none}
"""

# Rewrites every [data-ms] element as a date in the viewer's time zone (data-fmt "time" or
# "minute" for chart ticks), names that zone in every .tz, ties each datetime-local input
# (data-ms-target) to the field that carries its time in milliseconds and each [data-seek]
# field to the browser's seek choice, filters the rows of a .filterbox's table, and reloads
# a [data-live] element from the page's own address every data-live milliseconds.
SCRIPT = """
(function(){
const p=(n,w)=>String(n).padStart(w||2,'0');
function fmt(d,kind){
  const day=d.getFullYear()+'-'+p(d.getMonth()+1)+'-'+p(d.getDate());
  const hm=p(d.getHours())+':'+p(d.getMinutes()), hms=hm+':'+p(d.getSeconds());
  if(kind==='time')return hms;
  if(kind==='minute')return p(d.getMonth()+1)+'-'+p(d.getDate())+' '+hm;
  return day+' '+hms+'.'+p(d.getMilliseconds(),3);
}
const local=d=>d.getFullYear()+'-'+p(d.getMonth()+1)+'-'+p(d.getDate())+'T'+p(d.getHours())+
  ':'+p(d.getMinutes())+':'+p(d.getSeconds());
const zone=Intl.DateTimeFormat().resolvedOptions().timeZone;
function times(root){
  root.querySelectorAll('[data-ms]').forEach(el=>{
    const d=new Date(Number(el.dataset.ms));el.textContent=fmt(d,el.dataset.fmt);
    if(!el.dataset.fmt)el.setAttribute('title',d.toISOString()+' ('+el.dataset.ms+' ms)');
  });
  root.querySelectorAll('.tz').forEach(el=>{el.textContent=zone;});
}
times(document);
document.querySelectorAll('input[data-ms-target]').forEach(inp=>{
  const target=inp.form.elements[inp.dataset.msTarget];
  if(target.value)inp.value=local(new Date(Number(target.value)));
  inp.addEventListener('change',()=>{
    target.value=inp.value?String(new Date(inp.value).getTime()):'';});
});
document.querySelectorAll('[data-seek]').forEach(inp=>{
  inp.addEventListener('input',()=>{inp.form.elements.seek.value=inp.dataset.seek;});
  inp.addEventListener('change',()=>{inp.form.elements.seek.value=inp.dataset.seek;});
});
document.querySelectorAll('.filterbox').forEach(box=>{
  const rows=document.querySelectorAll('#'+box.dataset.table+' tbody tr');
  const text=box.querySelector('input[type=search]'),only=box.querySelector('input[type=checkbox]');
  const count=box.querySelector('.shown');
  function apply(){
    const needle=text.value.toLowerCase();let n=0;
    rows.forEach(r=>{const show=r.textContent.toLowerCase().includes(needle)&&
      (!only.checked||r.classList.contains('override'));r.hidden=!show;n+=show;});
    count.textContent=n+' of '+rows.length;
  }
  text.addEventListener('input',apply);only.addEventListener('change',apply);apply();
});
const live=document.querySelector('[data-live]');
if(live){setInterval(()=>{fetch(location.href).then(r=>r.text()).then(t=>{
  const got=new DOMParser().parseFromString(t,'text/html').getElementById(live.id);
  if(got){live.innerHTML=got.innerHTML;times(live);}});},Number(live.dataset.live));}
})();
"""

SECTIONS = (("cluster", "/", "Cluster"), ("topics", "/topics", "Topics"),
            ("groups", "/groups", "Consumer groups"), ("security", "/acls", "Security"),
            ("schemas", "/schemas", "Schema Registry"), ("connect", "/connect", "Connect"))


def e(v) -> str:
    return escape("" if v is None else str(v))


def q(v) -> str:
    return quote(str(v), safe="")


def page(title: str, body: str, section: str = "", crumbs=(), flash: str | None = None,
         error: str | None = None) -> str:
    """A whole page: the navigation (``section`` marked), breadcrumbs ``crumbs`` as
    (text, href) pairs leading to it, ``title``, notes, then ``body``."""
    nav = "".join(f"<a href='{href}'{' class=active' if name == section else ''}>{text}</a>"
                  for name, href, text in SECTIONS)
    trail = "".join(f"<span>{link(href, text)}</span>" for text, href in crumbs)
    notes = (f'<p class="flash" id="flash">{e(flash)}</p>' if flash else "") + \
            (f'<p class="error" id="error">{e(error)}</p>' if error else "")
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
            f"<title>{e(title)} - josefk console</title><style>{CSS}</style></head><body>"
            f"<header><a class='brand' href='/'><i></i><b>josefk console</b></a><nav>{nav}</nav>"
            f"</header><main>{f'<div class=crumbs>{trail}</div>' if trail else ''}"
            f"<h1>{e(title)}</h1>{notes}{body}</main><script>{SCRIPT}</script></body></html>")


def card(title: str, body: str) -> str:
    return f"<section class='card'>{f'<h2>{e(title)}</h2>' if title else ''}{body}</section>"


def stats(items, ident: str = "stats") -> str:
    """Tiles of (label, already-escaped value)."""
    tiles = "".join(f"<div class='stat'><b>{v}</b><span>{e(k)}</span></div>" for k, v in items)
    return f"<div class='stats' id='{e(ident)}'>{tiles}</div>"


def table(headers, rows, table_id: str, num=(), classes=None) -> str:
    """``rows`` hold already-escaped HTML cells; columns whose index is in ``num`` are
    numbers (right-aligned, by one rule for the table rather than a class on every cell);
    ``classes``, one per row, mark rows."""
    head = "".join(f"<th>{h if h.startswith('<') else e(h)}</th>" for h in headers)
    marks = (f" class='{e(c)}'" if c else "" for c in classes or [""] * len(rows))
    body = "".join(f"<tr{m}>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>"
                   for r, m in zip(rows, marks)) or \
        f"<tr><td class='muted none' colspan='{len(headers)}'>none</td></tr>"
    style = ""
    if num:
        cols = ",".join(f"#{table_id} {c}:nth-child({i + 1})" for i in sorted(num)
                        for c in ("td", "th"))
        style = f"<style>{cols}{{text-align:right;font-variant-numeric:tabular-nums}}</style>"
    return f"{style}<table id='{e(table_id)}'><thead><tr>{head}</tr></thead><tbody>{body}" \
           f"</tbody></table>"


def link(href: str | None, text) -> str:
    return f"<a href='{e(href)}'>{e(text)}</a>" if href else e(text)


def badge(text: str, kind: str = "") -> str:
    return f"<span class='badge {e(kind)}'>{e(text)}</span>"


def form(action: str, fields: str, button: str, form_id: str, danger: bool = False) -> str:
    """A form posting ``fields``; ``danger``: what it does cannot be undone."""
    return (f"<form class='bar' method='post' action='{e(action)}' id='{e(form_id)}'>"
            f"{fields}<button type='submit'{' class=danger' if danger else ''}>{e(button)}"
            f"</button></form>")


def actions(items) -> str:
    """(title, form) pairs side by side, as many a row as fit."""
    return "<div class='actions'>" + "".join(
        f"<div class='action'><h3>{e(title)}</h3>{body}</div>" for title, body in items) + \
        "</div>"


def hidden_form(action: str, fields: dict, button: str, danger: bool = True) -> str:
    """A button posting ``fields`` (to be confirmed, as every change is); ``danger``: what it
    does cannot be undone."""
    hidden = "".join(f"<input type='hidden' name='{e(k)}' value='{e(v)}'>"
                     for k, v in fields.items())
    return (f"<form method='post' action='{e(action)}' class='inline'>{hidden}"
            f"<button type='submit' class='{'danger ' if danger else ''}small'>{e(button)}"
            f"</button></form>")


def field(name: str, label: str, value="", kind: str = "text", size: int = 14,
          extra: str = "") -> str:
    return (f"<label>{e(label)}<input type='{kind}' name='{e(name)}' value='{e(value)}' "
            f"size='{size}'{extra}></label>")


def textarea(name: str, label: str, rows: int = 3, cols: int = 40) -> str:
    return (f"<label>{e(label)}<textarea name='{e(name)}' rows='{rows}' cols='{cols}'>"
            f"</textarea></label>")


def filter_box(table_id: str) -> str:
    """A text filter of ``table_id``'s rows, and a box to show only its marked (override)
    rows; the page's script applies both as they change."""
    return (f"<div class='filterbox' data-table='{e(table_id)}' id='{e(table_id)}-filter'>"
            f"<input type='search' placeholder='Filter' size='24' aria-label='Filter'>"
            f"<label><input type='checkbox'> overrides only</label>"
            f"<span class='shown muted'></span></div>")


def select(name: str, label: str, options, selected=None) -> str:
    opts = "".join(f"<option value='{e(v)}'{' selected' if str(v) == str(selected) else ''}>"
                   f"{e(text)}</option>" for v, text in options)
    return f"<label>{e(label)}<select name='{e(name)}'>{opts}</select></label>"


def confirmation(action: str, what: str, fields: dict) -> str:
    """A page asking to confirm ``what``; posting it again with confirm=yes does it."""
    hidden = "".join(f"<input type='hidden' name='{e(k)}' value='{e(v)}'>"
                     for k, v in fields.items())
    return (f"<div class='confirm'><p id='confirm-text'>{e(what)}</p>"
            f"<form method='post' action='{e(action)}'>{hidden}"
            f"<input type='hidden' name='confirm' value='yes'>"
            f"<button type='submit' id='confirm'>Confirm</button> "
            f"<a href='javascript:history.back()'>Cancel</a></form></div>")


def timestamp(ms: int) -> str:
    """A record's time: UTC here, the viewer's zone once the script ran."""
    if ms is None or ms < 0:
        return "<span class='muted'>none</span>"
    utc = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return (f"<time data-ms='{ms}' datetime='{utc.isoformat(timespec='milliseconds')}'>"
            f"{utc:%Y-%m-%d %H:%M:%S}.{ms % 1000:03d} UTC</time>")


def size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


_JSON_TOKEN = re.compile(r'("(?:\\.|[^"\\])*")(\s*:)?|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)'
                         r'|\b(true|false|null)\b')


def json_block(value, css: str = "") -> str:
    """``value`` (JSON data) indented, keys, strings, numbers and literals coloured."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return f"<pre class='json {css}'>{_json_marked(text)}</pre>"


def json_line(value) -> str:
    """``value`` (JSON data) on one line, coloured, its first ``LINE_CHARS`` characters."""
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return f"<code class='json line'>{_json_marked(text[:LINE_CHARS])}</code>"


def _json_marked(text: str) -> str:
    out, pos = [], 0
    for m in _JSON_TOKEN.finditer(text):
        out.append(e(text[pos:m.start()]))
        string, colon, number, literal = m.groups()
        if string:
            out.append(f"<span class='{'k' if colon else 's'}'>{e(string)}</span>{colon or ''}")
        elif number:
            out.append(f"<span class='n'>{number}</span>")
        else:
            out.append(f"<span class='b'>{literal}</span>")
        pos = m.end()
    out.append(e(text[pos:]))
    return "".join(out)


_PROTO_TOKEN = re.compile(r"(//[^\n]*)|\b(syntax|package|import|option|message|enum|oneof|map|"
                          r"repeated|optional|required|reserved|service|rpc|returns|stream|"
                          r"extensions|to|max|public|weak)\b")


def proto_block(text: str) -> str:
    """``.proto`` text with its keywords and comments marked."""
    out, pos = [], 0
    for m in _PROTO_TOKEN.finditer(text):
        out.append(e(text[pos:m.start()]))
        comment, keyword = m.groups()
        out.append(f"<span class='c'>{e(comment)}</span>" if comment else
                   f"<span class='kw'>{keyword}</span>")
        pos = m.end()
    out.append(e(text[pos:]))
    return f"<pre class='proto block'>{''.join(out)}</pre>"


LINE_CHARS = 400  # of a record's key or value on its one line
SHORT_TEXT = 80  # text this short and on one line has nothing more to open


def record(data: bytes | None) -> str:
    """A record's key or value on one line, opening onto all of it: JSON objects and arrays
    compact, then pretty-printed; other UTF-8 text as text; any other bytes (or text with
    control characters) in hex."""
    if data is None:
        return "<i class='muted'>null</i>"
    data = bytes(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or _CONTROL.search(text):
        return expandable(f"<span class='line muted'>{len(data)} bytes: "
                          f"{e(data[:LINE_CHARS // 3].hex(' '))}</span>", hexdump(data))
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    if isinstance(value, (dict, list)):
        return json_value(value)
    if len(text) <= SHORT_TEXT and "\n" not in text:
        return f"<span class='line'>{e(text)}</span>"
    return expandable(f"<span class='line'>{e(text[:LINE_CHARS])}</span>", f"<pre>{e(text)}</pre>")


def json_value(value, more: str = "") -> str:
    """A decoded value (JSON data) on one line, opening onto it pretty-printed and ``more``."""
    if not isinstance(value, (dict, list)) and not more:
        return json_line(value)
    return expandable(json_line(value), json_block(value) + more)


def expandable(line: str, full: str) -> str:
    """``line`` (a one-line preview), showing ``full`` when clicked."""
    return f"<details class='rec'><summary>{line}</summary>{full}</details>"


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def hexdump(data: bytes) -> str:
    lines = (data[i:i + 16].hex(" ") for i in range(0, len(data), 16))
    return (f"<div class='muted'>{len(data)} bytes</div>"
            f"<pre class='hex'>{e(chr(10).join(lines))}</pre>")


# -- the lag chart ---------------------------------------------------------------------------
TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600,
              43200, 86400)


def nice_ticks(top: float, count: int = 4) -> list[int]:
    """0 and whole multiples of a 1, 2 or 5 x 10^k step up to the first at or above ``top``."""
    raw_step = max(top / count, 1)
    mag = 10 ** math.floor(math.log10(raw_step))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw_step)
    return [i * step for i in range(int(math.ceil(top / step)) + 1)] if top > 0 else [0, 1]


def compact(n: float) -> str:
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.3g}{unit}"
    return f"{n:g}"


def lag_chart(samples, width: int = 760, height: int = 260) -> str:
    """An SVG line chart of (unix seconds, total lag) samples, with a lag axis in messages and
    a time axis in the viewer's zone."""
    if len(samples) < 2:
        return "<p id='lag-chart'>The lag chart fills in as the console samples the group.</p>"
    left, right, top, bottom = 64, 20, 14, 46
    pw, ph = width - left - right, height - top - bottom
    t0, t1 = samples[0][0], samples[-1][0]
    span = max(t1 - t0, 1e-9)
    yticks = nice_ticks(max(v for _, v in samples))
    ymax = yticks[-1]

    def x(t):
        return left + (t - t0) / span * pw

    def y(v):
        return top + ph - v / ymax * ph

    parts = []
    for v in yticks:
        parts.append(f"<line class='grid' x1='{left}' x2='{left + pw}' y1='{y(v):.1f}' "
                     f"y2='{y(v):.1f}'/><text x='{left - 8}' y='{y(v) + 4:.1f}' "
                     f"text-anchor='end'>{compact(v)}</text>")
    step = next((s for s in TIME_STEPS if s >= span / 6), TIME_STEPS[-1])
    fmt = "time" if span < 86400 else "minute"
    for t in range(int(math.ceil(t0 / step) * step), int(t1) + 1, step):
        utc = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
        parts.append(f"<line class='axis' x1='{x(t):.1f}' x2='{x(t):.1f}' y1='{top + ph}' "
                     f"y2='{top + ph + 5}'/><text x='{x(t):.1f}' y='{top + ph + 18}' "
                     f"text-anchor='middle' data-ms='{t * 1000}' data-fmt='{fmt}'>"
                     f"{utc:%H:%M:%S}</text>")
    pts = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in samples)
    area = f"{x(t0):.1f},{y(0):.1f} {pts} {x(t1):.1f},{y(0):.1f}"
    last = samples[-1][1]
    return (f"<svg id='lag-chart' class='chart' width='{width}' height='{height}' "
            f"viewBox='0 0 {width} {height}' role='img' aria-label='total lag over time'>"
            f"{''.join(parts)}"
            f"<line class='axis' x1='{left}' x2='{left}' y1='{top}' y2='{top + ph}'/>"
            f"<line class='axis' x1='{left}' x2='{left + pw}' y1='{top + ph}' y2='{top + ph}'/>"
            f"<polygon class='area' points='{area}'/><polyline class='line' points='{pts}'/>"
            f"<circle cx='{x(t1):.1f}' cy='{y(last):.1f}' r='3.5' fill='#2563eb'/>"
            f"<text transform='translate(14 {top + ph / 2}) rotate(-90)' text-anchor='middle'>"
            f"lag (messages)</text><text x='{left + pw / 2}' y='{height - 6}' "
            f"text-anchor='middle'>time (<tspan class='tz'>UTC</tspan>), {len(samples)} "
            f"samples over {_duration(span)}; now {last:,} messages behind</text></svg>")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
