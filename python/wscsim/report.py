"""An HTML page per results folder (`report.html`): what ran, the headline figures, the
checks, every plot, and links to every table and capture, readable offline (no scripts,
no network; plots are the folder's own image files). A sweep's page also has one row per
point, linking to each point's own page. The same summary renders a Result in a notebook.
"""

from __future__ import annotations

import html
import json
import shlex
from pathlib import Path

from .folder_tables import table_shape
from .terminal import column_format, fmt_value, headline_keys, points_columns

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
.bad { color: #b00; font-weight: bold; } .ok { color: #070; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; }
.scroll { overflow-x: auto; max-width: 100%; } .scroll table { margin: 0.5em 0; }
"""


def _e(v) -> str:
    return html.escape(str(v))


def _rows(pairs) -> str:
    return "".join(f"<tr><th class=l>{_e(k)}</th><td>{_e(fmt_value(v))}</td></tr>" for k, v in pairs)


def _with_ci(value, ci: dict, key: str):
    """A mean over seeds as `mean ± half-width` of its 95% interval; any other value as is."""
    return f"{fmt_value(value)} \u00b1 {fmt_value(ci[key])}" if ci.get(key) is not None else value


def _seeds_note(summary: dict) -> str:
    seeds = summary.get("seeds")
    if not seeds:
        return ""
    return f"<p>Mean over {len(seeds['seeds'])} seeds ({_e(fmt_value(seeds['seeds']))}) \u00b1 the {_e(seeds['interval'])}.</p>"


def _seed_means(summary: dict) -> str:
    """A sweep with several seeds: each combination of the other swept values, its headline
    figures as mean ± 95% interval over the seeds."""
    means = summary.get("seed_means") or []
    if not means or summary.get("headline_ci95") is not None:
        return ""
    keys = [k for k in means[0] if k not in ("seeds", "mean", "ci95")]
    heads = headline_keys(means[0]["mean"])
    header = "".join(f"<th class=l>{_e(k)}</th>" for k in keys) + "<th>seeds</th>" + "".join(f"<th>{_e(h)}</th>" for h in heads)
    rows = ["<tr>" + "".join(f"<td class=l>{_e(fmt_value(m[k]))}</td>" for k in keys) + f"<td>{m['seeds']}</td>"
            + "".join(f"<td>{_e(_with_ci(m['mean'][h], m['ci95'], h) if h in m['mean'] else '')}</td>" for h in heads) + "</tr>" for m in means]
    return f"<h2>Means over seeds</h2>{_seeds_note(summary)}<table><tr>{header}</tr>{''.join(rows)}</table>"


def summary_html(summary: dict) -> str:
    """The run's facts and headline as HTML tables (also a Result's notebook view)."""
    sc = summary.get("scenario", {})
    facts = [("scenario", sc.get("name", "")), ("seed", summary.get("seed", sc.get("seed", ""))), ("wscsim", summary.get("version", ""))]
    if isinstance(summary.get("points"), int):
        facts += [("points", summary["points"]), ("wall seconds", round(summary.get("wall_seconds", 0), 2))]
    else:
        facts += [(k.replace("_", " "), summary[k]) for k in ("simulated_seconds", "wall_seconds", "events", "packet_hops") if k in summary]
    head = summary.get("headline", {})
    inv = summary.get("invariants", {})
    ok = inv.get("ok", True)
    out = [f"<table>{_rows(facts)}</table>"]
    if head:
        ci = summary.get("headline_ci95") or {}
        shown = ((k, _with_ci(head[k], ci, k)) for k in headline_keys(head))
        out.append(f"<h2>Headline</h2>{_seeds_note(summary)}<table>{_rows(shown)}</table>")
    out.append(_seed_means(summary))
    verdict = '<span class=ok>all hold</span>' if ok else '<span class=bad>FAILED: see summary.json</span>'
    out.append(f"<p>Invariants (packets conserved, no buffer overrun, time monotone): {verdict}</p>")
    return "\n".join(out)


def _table_links(folder: Path, tables: dict) -> str:
    items = []
    for name in sorted(tables):
        rows, columns = table_shape(tables, name)  # a sweep's tables are not read for this
        cols = ", ".join(map(str, columns))
        items.append(f"<tr><td class=l><a href='{_e(name)}.parquet'>{_e(name)}.parquet</a></td><td>{rows:,}</td><td class=l>{_e(cols)}</td></tr>")
    caps = sorted((folder / "capture").glob("*.pcap")) if (folder / "capture").is_dir() else []
    for p in caps:
        items.append(f"<tr><td class=l><a href='capture/{_e(p.name)}'>capture/{_e(p.name)}</a></td><td></td><td class=l>pcap (tshark, Wireshark)</td></tr>")
    return "<table><tr><th class=l>file</th><th>rows</th><th class=l>columns</th></tr>" + "".join(items) + "</table>"


def _points_table(tables: dict, width: int) -> str:
    pts = tables.get("points")
    if pts is None or pts.empty:
        return ""
    swept, heads = points_columns(pts)
    header = "<tr><th>point</th>" + "".join(f"<th class=l>{_breakable(c)}</th>" for c in swept) + "".join(f"<th>{_breakable(h)}</th>" for h in heads) + "</tr>"
    rows = []
    fmt = {c: column_format(list(pts[c])) for c in swept + [f"headline_{h}" for h in heads]}  # one format per column
    for _, r in pts.iterrows():
        link = f"<a href='points/{int(r['point']):0{width}d}/report.html'>{int(r['point'])}</a>"
        cells = "".join(f"<td class=l>{_e(fmt[c](r[c]))}</td>" for c in swept) + "".join(f"<td>{_e(fmt['headline_' + h](r['headline_' + h]))}</td>" for h in heads)
        rows.append(f"<tr><td>{link}</td>{cells}</tr>")
    # Headers may break after underscores; a table still wider than the page scrolls in its own box.
    return "<h2>Points</h2><div class=scroll><table>" + header + "".join(rows) + "</table></div>"


def _breakable(name: str) -> str:
    """A column name that a browser may break after its underscores."""
    return _e(name).replace("_", "_<wbr>")


def _provenance_html(summary: dict) -> str:
    """Where the result came from (summary.json's "provenance"): command, build, machine, date."""
    prov = summary.get("provenance")
    if not isinstance(prov, dict):
        return ""
    git = prov.get("git") or {}
    build = git.get("commit", "not run from a git checkout")
    if git.get("dirty"):
        build += " (with uncommitted changes)"
    plat = prov.get("platform") or {}
    cores = plat.get("cores")
    if plat.get("cores_usable") not in (None, cores):
        cores = f"{cores} ({plat['cores_usable']} usable)"
    command = prov.get("command_line")
    rows = [("command", shlex.join(command) if command else "run from Python"), ("wscsim", prov.get("wscsim_version")),
            ("commit", build), ("date (UTC)", prov.get("date_utc")), ("CPU", plat.get("cpu")), ("cores", cores),
            ("OS", " / ".join(x for x in (plat.get("os"), plat.get("os_release")) if x)), ("Python", plat.get("python"))]
    if plat.get("rustc"):
        rows.append(("Rust", plat["rustc"]))
    return "<h2>Provenance</h2><table>" + "".join(f"<tr><th class=l>{_e(k)}</th><td class=l>{_e(v)}</td></tr>" for k, v in rows) + "</table>"


def write_html(folder: Path, summary: dict, tables: dict, points_width: int = 3, page: Path | None = None) -> None:
    """Writes `folder/report.html` (or `page`) from the folder's summary, tables, plots and
    captures."""
    name = summary.get("scenario", {}).get("name", "run")
    plots = [p for p in summary.get("plots", []) if p.endswith(".png")]
    body = [f"<h1>{_e(name)}</h1>", summary_html(summary), _points_table(tables, points_width)]
    cut = str(summary.get("plots_status", "")).startswith("incomplete")
    if plots or cut:
        note = "<p class=bad>Plots incomplete: the run was interrupted while they were drawn; these are the ones finished.</p>" if cut else ""
        body.append("<h2>Plots</h2>" + note + "".join(f"<p><img src='{_e(p)}' alt='{_e(p)}'></p>" for p in plots))
    body.append("<h2>Tables</h2>" + _table_links(folder, tables))
    body.append(_provenance_html(summary))
    scenario = json.dumps(summary.get("scenario", {}), indent=2, sort_keys=True)
    body.append(f"<details><summary>Scenario as run, every default filled in</summary><pre>{_e(scenario)}</pre></details>")
    body.append("<p><a href='summary.json'>summary.json</a></p>")
    html_text = f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(name)}: wscsim</title><style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n"
    (page or folder / "report.html").write_text(html_text)
