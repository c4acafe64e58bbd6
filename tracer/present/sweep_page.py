"""The sweep's HTML grid (index.html): one row per model, one column per release."""

from __future__ import annotations

import html


def real_changes(model: dict) -> list[dict]:
    return [c for c in model["changes"] if "absent" not in (c["from"], c["to"])]


_real_changes = real_changes


_GRID_CSS = """
.grid { border-collapse: collapse; font-size: 12px; }
.grid th, .grid td { border: 1px solid var(--line); padding: 2px 4px; }
.grid thead th { position: sticky; top: 0; background: #fff; writing-mode: vertical-rl; transform: rotate(180deg);
  font-weight: 500; white-space: nowrap; height: 90px; }
.grid th.model { writing-mode: horizontal-tb; transform: none; text-align: left; font-weight: 400;
  white-space: nowrap; position: sticky; left: 0; background: #fff; }
.grid td { width: 18px; height: 18px; text-align: center; cursor: default; }
.grid td.c-ok { background: var(--ok-bg); color: var(--ok); }
.grid td.c-broken { background: var(--broken-bg); color: var(--broken); }
.grid td.c-unknown { background: var(--unknown-bg); color: var(--unknown); }
.grid td.c-missing { background: var(--missing-bg); color: var(--missing); }
.grid td.c-draft { background: #e8f0fe; color: #1967d2; }
.grid td.c-absent { background: #fff; color: #bdc1c6; }
.grid td.change { box-shadow: inset 3px 0 0 var(--ink); font-weight: 700; }
.filters { margin: 10px 0; display: flex; gap: 14px; flex-wrap: wrap; align-items: center; }
.changes li { margin: 2px 0; }
.scroll { overflow: auto; max-height: 80vh; border: 1px solid var(--line); }
"""

_GRID_JS = """
document.querySelectorAll('input[name=rows]').forEach(function (box) {
  box.addEventListener('change', function () {
    var mode = document.querySelector('input[name=rows]:checked').value;
    document.querySelectorAll('tr.row').forEach(function (tr) {
      var show = mode === 'all' || (mode === 'changed' && tr.dataset.changed === '1')
        || (mode === 'supported' && tr.dataset.supported === '1');
      tr.style.display = show ? '' : 'none';
    });
  });
});
"""


def history_html(history: dict) -> str:
    try:
        from importlib import resources

        base_css = resources.files("tracer._reports").joinpath("report.css").read_text(encoding="utf-8")
    except Exception:  # pragma: no cover - the stylesheet ships with the package
        base_css = ""
    esc = html.escape
    versions = history["releases"]
    symbol = {"ok": "✓", "broken": "✗", "unknown": "?", "missing": "·", "draft": "d", "absent": ""}
    rows = []
    for model in history["models"]:
        changed_at = {c["release"]: c for c in _real_changes(model)}
        supported = any(v not in ("missing", "absent", "draft") for v in model["verdicts"].values())
        cells = []
        for version in versions:
            verdict = model["verdicts"].get(version, "absent")
            title = f"{version}: {verdict}"
            reason = model["reasons"].get(version, "")
            if reason:
                title += f" — {reason}"
            change = changed_at.get(version)
            if change:
                title += f"\n(changed from {change['from']} in {change['previous_release']})"
                for f in change["findings_appeared"]:
                    title += f"\n+ {f['slug']} {f['file']}:{f['line']}"
                for f in change["findings_disappeared"]:
                    title += f"\n- {f['slug']} {f['file']}:{f['line']}"
            cls = f"c-{verdict}" + (" change" if change else "")
            cells.append(f'<td class="{cls}" title="{esc(title)}">{symbol.get(verdict, "")}</td>')
        short = model["entry"].rsplit(".", 1)[-1]
        rows.append(
            f'<tr class="row" data-changed="{1 if _real_changes(model) else 0}" data-supported="{1 if supported else 0}">'
            f'<th class="model" title="{esc(model["entry"])}">{esc(short)} <span class="tag">{esc(model["protocol"])}</span></th>'
            + "".join(cells) + "</tr>")
    head = "".join(f"<th>{esc(v)}</th>" for v in versions)
    changes = []
    for model in history["models"]:
        for c in model["changes"]:
            if c["from"] == "absent" or c["to"] == "absent":
                continue
            items = "".join(f"<li><code>+ {esc(f['slug'])}</code> {esc(f['file'])}:{f['line']} {esc(f['message'])}</li>"
                            for f in c["findings_appeared"])
            items += "".join(f"<li><code>- {esc(f['slug'])}</code> {esc(f['file'])}:{f['line']}</li>"
                             for f in c["findings_disappeared"])
            changes.append(
                f'<li><b>{esc(model["entry"].rsplit(".", 1)[-1])}</b> <span class="tag">{esc(model["protocol"])}</span> '
                f'{esc(c["previous_release"])} → {esc(c["release"])}: '
                f'<span class="badge v-{esc(c["from"])}">{esc(c["from"])}</span> → '
                f'<span class="badge v-{esc(c["to"])}">{esc(c["to"])}</span>'
                + (f"<ul>{items}</ul>" if items else "") + "</li>")
    failed = "".join(f"<li>{esc(f['release'])}: {esc(f['stage'])} failed — {esc(f['reason'])}</li>"
                     for f in history["failed"])
    n_changed = sum(1 for m in history["models"] if _real_changes(m))
    span = f"{versions[0]} … {versions[-1]}" if versions else "no release"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>tracer sweep — {esc(history['package'])} {esc(span)}</title>
<style>{base_css}{_GRID_CSS}</style></head>
<body><div class="top"><div class="wrap"><span class="brand">tracer</span><span class="crumbs">sweep</span></div></div>
<div class="wrap">
<h1>{esc(history['package'])} <small>{len(versions)} releases, {esc(span)}</small></h1>
<p class="sub">Verdict of every entry class × protocol in every release. A bold left edge marks the release
where the verdict changed; hover a cell for the reason and the findings that appeared or disappeared.
✓ ok · ✗ broken · ? unknown · · missing (no setter) · blank: not in that release.</p>
{f'<div class="notice bad"><b>Releases not scanned</b><ul>{failed}</ul></div>' if failed else ''}
<div class="filters"><b>Rows</b>
<label><input type="radio" name="rows" value="changed" checked> changed ({n_changed})</label>
<label><input type="radio" name="rows" value="supported"> supported in some release</label>
<label><input type="radio" name="rows" value="all"> all ({len(history['models'])})</label></div>
<div class="scroll"><table class="grid"><thead><tr><th class="model">entry class</th>{head}</tr></thead>
<tbody>{''.join(rows)}</tbody></table></div>
<h2>Verdict changes</h2><ul class="changes">{''.join(changes) or '<li>none</li>'}</ul>
<div class="foot">tracer sweep · scan {history['stats'].get('scan_seconds')} s with {history['stats'].get('workers')} workers</div>
</div><script>{_GRID_JS}
document.querySelector('input[name=rows]:checked').dispatchEvent(new Event('change'));</script></body></html>
"""
