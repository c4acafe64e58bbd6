"""The report's offline view of the scanned source: one page per file that a hop, a
call site or a finding points at (``source/<file>.html``, every line an anchor
``#L<n>``), so each file:line of the report is a link to its line.

Files are read through :class:`Excerpts` (inside the source root, regular files,
bounded); without a source root there are no source pages and no links. The
support matrix's own rows (``missing-setter``: every model without the setter)
get no page: they would add every model file for a line that says only "no
setter here".
"""

from __future__ import annotations

from collections.abc import Iterable

from tracer.model.results import ScanResult
from tracer.present.graphs import location, page_name
from tracer.present.report_pages import Excerpts, escape_html

FOLDER = "source"


def source_page(file: str) -> str:
    """The page of a scanned file, relative to the report's folder (one flat, file-safe name)."""
    return f"{FOLDER}/{page_name(file.replace('/', '.'))}"


def referenced_files(scan: ScanResult) -> list[str]:
    files: set[str] = set()
    for model in scan.models:
        if model.verdict != "missing":
            files.add(model.file)
        for hop in model.chain:
            files.update((hop.file, hop.call_file))
    files.update(f.file for f in scan.findings if f.slug != "missing-setter")
    files.update(s.file for s in scan.call_sites)
    return sorted(f for f in files if f and not f.startswith("/") and ".." not in f.split("/"))


class SourceLinks:
    """file:line -> a link to its line, for the files that have a source page."""

    def __init__(self, files: Iterable[str] = ()):
        self.files = set(files)

    def where(self, file: str | None, line: int | None, base: str = "") -> str:
        """file:line, allowed to break after each slash, linked to the source line when it has a page."""
        text = escape_html(location(file, line)).replace("/", "/<wbr>")
        if not file or file not in self.files:
            return text
        target = f"{base}{source_page(file)}" + (f"#L{line}" if line else "")
        return f'<a class="src" href="{escape_html(target)}" title="open {escape_html(location(file, line))}">{text}</a>'


def source_html(file: str, lines: list[str]) -> str:
    """The <main> of a source page: the path, then every line numbered and anchored."""
    rows = "".join(f'<span id="L{n}"><a class="ln" href="#L{n}">{n}</a>{escape_html(text)}</span>'
                   for n, text in enumerate(lines, 1))
    return (f"<h1>{escape_html(file.rsplit('/', 1)[-1])} <small>{escape_html(file)}</small></h1>"
            f'<p class="sub">{len(lines)} lines, as scanned (read, never imported or run).</p>'
            f'<pre class="source">{rows}</pre>')


def write_sources(scan: ScanResult, excerpts: Excerpts) -> dict[str, str]:
    """file -> the <main> of its page, for each referenced file the source root holds."""
    pages = {}
    for file in referenced_files(scan):
        lines = excerpts.lines(file)
        if lines is not None:
            pages[file] = source_html(file, lines)
    return pages
