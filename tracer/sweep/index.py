"""Where a source distribution comes from: the indexes pip itself is configured with.

pip never gets an sdist (preparing one runs its setup.py), so the sweep fetches the file
itself, but from where pip would: ``pip config list`` (files and ``PIP_*`` variables, as
pip merges them) gives the index URL, extra index URLs, find-links, trusted hosts, the
proxy, the CA bundle and ``no-index``. An index is read by the Simple Repository API
(PEP 691 JSON, else the PEP 503 HTML page); a mirror-only or air-gapped CI never asks
pypi.org, and a ``no-index`` one asks nothing.
"""

from __future__ import annotations

import html
import json
import os
import re
import ssl
import subprocess
import sys
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_INDEX = "https://pypi.org/simple"
_LINE = re.compile(r"^([^.=]*|:env:)\.([a-z0-9-]+)='(.*)'$")
_SECTIONS = (":env:", "download", "global")  # most binding first, as pip reads them for `pip download`
_ANCHOR = re.compile(r"<a\s[^>]*?href\s*=\s*[\"']([^\"']+)[\"'][^>]*>(.*?)</a>", re.I | re.S)


@dataclass(frozen=True)
class PipSettings:
    index_urls: tuple[str, ...] = (DEFAULT_INDEX,)
    find_links: tuple[str, ...] = ()
    trusted_hosts: frozenset[str] = field(default_factory=frozenset)
    proxy: str | None = None
    cert: str | None = None
    no_index: bool = False
    timeout: float = 60.0


def parse_pip_config(text: str) -> PipSettings:
    """PipSettings from ``pip config list`` output (``section.key='value'`` lines)."""
    values: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if match:
            values.setdefault(match.group(2), {})[match.group(1)] = match.group(3)

    def get(key: str) -> str | None:
        for section in _SECTIONS:
            if section in values.get(key, {}):
                return values[key][section]
        return None

    def words(key: str) -> tuple[str, ...]:
        return tuple((get(key) or "").split())

    index = get("index-url") or DEFAULT_INDEX
    no_index = (get("no-index") or "").lower() in ("1", "true", "yes", "on")
    try:
        timeout = float(get("timeout") or get("default-timeout") or 60)
    except ValueError:
        timeout = 60.0
    return PipSettings(index_urls=(index, *words("extra-index-url")), find_links=words("find-links"),
                       trusted_hosts=frozenset(h.split(":")[0] for h in words("trusted-host")),
                       proxy=get("proxy"), cert=get("cert"), no_index=no_index, timeout=timeout)


def pip_command(*args: str) -> list[str]:
    """``python -m pip ARGS`` that never imports a module of the working folder: ``-P`` where the
    running Python has it (3.11+), isolated mode (``-I``: no working folder, no PYTHON* variables;
    pip's own PIP_* settings still apply) on 3.10, whose ``-P`` is an unknown option."""
    guard = "-P" if sys.version_info >= (3, 11) else "-I"
    return [sys.executable, guard, "-m", "pip", *args]


def pip_settings() -> PipSettings:
    """pip's configuration as ``pip download`` would use it (pip runs with -P: no module of
    the working folder); pip's defaults when pip cannot say."""
    cmd = pip_command("config", "list", "--disable-pip-version-check")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return PipSettings()
    return parse_pip_config(done.stdout if done.returncode == 0 else "")


def _opener(url: str, settings: PipSettings) -> urllib.request.OpenerDirector:
    handlers: list[urllib.request.BaseHandler] = []
    if settings.proxy:
        handlers.append(urllib.request.ProxyHandler({"http": settings.proxy, "https": settings.proxy}))
    host = urllib.parse.urlsplit(url).hostname or ""
    if url.startswith("https:"):
        if host in settings.trusted_hosts:
            context = ssl._create_unverified_context()  # noqa: S323 - pip's trusted-host: the user's choice
        else:
            context = ssl.create_default_context(cafile=settings.cert if settings.cert and os.path.isfile(settings.cert) else None)
        handlers.append(urllib.request.HTTPSHandler(context=context))
    return urllib.request.build_opener(*handlers)


def read_url(url: str, settings: PipSettings, limit: int, accept: str = "*/*") -> tuple[bytes, str, str]:
    """(bytes, content type, final URL) of ``url`` (http, https or file), at most ``limit`` bytes.
    A file: URL naming a folder gives its index.html, else a page listing its files."""
    if url.startswith("file:"):
        path = Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))
        if path.is_dir():
            page = path / "index.html"
            if page.is_file():
                return page.read_bytes()[:limit], "text/html", page.as_uri()
            links = "".join(f'<a href="{urllib.parse.quote(p.name)}">{html.escape(p.name)}</a>\n'
                            for p in sorted(path.iterdir()) if p.is_file())
            return links.encode(), "text/html", path.as_uri() + "/"
    request = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": "tracer-sweep"})
    with _opener(url, settings).open(request, timeout=settings.timeout) as response:  # noqa: S310 - pip's own index
        data = response.read(limit + 1)
        if len(data) > limit:
            raise ValueError(f"{url}: larger than {limit >> 20} MiB")
        return data, response.headers.get("Content-Type", ""), response.geturl()


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _files_of_page(data: bytes, content_type: str, page_url: str) -> list[tuple[str, str, str | None]]:
    """(file name, absolute URL, sha256 or None) of every file a Simple API page lists."""
    found = []
    if "json" in content_type:
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            return []
        for item in doc.get("files", []) if isinstance(doc, dict) else []:
            if isinstance(item, dict) and isinstance(item.get("url"), str) and isinstance(item.get("filename"), str):
                hashes = item.get("hashes")
                sha = hashes.get("sha256") if isinstance(hashes, dict) else None
                found.append((item["filename"], urllib.parse.urljoin(page_url, item["url"]), sha))
        return found
    for href, text in _ANCHOR.findall(data.decode("utf-8", "replace")):
        url = urllib.parse.urljoin(page_url, html.unescape(href))
        path, _, fragment = url.partition("#")
        name = urllib.parse.unquote(path.rstrip("/").rsplit("/", 1)[-1]) or html.unescape(text).strip()
        sha = fragment.partition("sha256=")[2] or None if "sha256=" in fragment else None
        found.append((name, path, sha))
    return found


def sdist_candidates(package: str, version: str, settings: PipSettings) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    """(candidates, problems): the release's .tar.gz / .zip on each configured index and
    find-links location, in pip's order; why a location gave nothing."""
    wanted = {f"{stem}-{version}{ext}" for stem in {package, package.replace("-", "_"), _normalise(package).replace("-", "_")}
              for ext in (".tar.gz", ".zip")}
    wanted_lower = {w.lower() for w in wanted}
    pages = [] if settings.no_index else [url.rstrip("/") + "/" + _normalise(package) + "/" for url in settings.index_urls]
    locations = pages + [link if "://" in link else Path(link).resolve().as_uri() for link in settings.find_links]
    candidates, problems = [], []
    if not locations:
        problems.append("pip is configured with no index and no find-links")
    for location in locations:
        try:
            data, kind, final = read_url(location, settings, 32 * 1024 * 1024,
                                         "application/vnd.pypi.simple.v1+json, text/html;q=0.1")
        except (OSError, ValueError) as exc:
            problems.append(f"{location}: {exc}")
            continue
        for name, url, sha in _files_of_page(data, kind, final):
            if name.lower() in wanted_lower and "/" not in name:
                candidates.append((name, url, sha))
    return candidates, problems
