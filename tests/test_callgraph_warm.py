"""`tracer graph --all` without networkx, its document kept in the cache: the text writer
(tracer/present/graph_text.py) writes the bytes the networkx path writes (json, dot, graphml),
cold and warm; a changed file, another format or another option is never answered by a stored
document; a corrupt stored document is ignored."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner

from tracer.callgraph.build import graph_of, whole_call_graph
from tracer.callgraph.store import Store, document_key
from tracer.cli import main
from tracer.index.cache import SummaryCache
from tracer.present import callgraph_view, graph_text, graphs

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REPO = Path(__file__).resolve().parent.parent

PROGRAM = {
    "pkg/__init__.py": "",
    "pkg/a.py": """\
        from pkg.b import Helper

        def run(x):
            h = Helper()
            f = lambda y: h.go(y)
            return f(x)
        """,
    "pkg/b.py": """\
        class Base:
            def go(self, y):
                return y

        class Helper(Base):
            def go(self, y):
                return super().go(y)
        """,
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root / "pkg"


def networkx_text(g: nx.DiGraph, stats: dict, fmt: str) -> str:
    if fmt == "dot":
        return graphs.graph_to_dot(g)
    if fmt == "graphml":
        return callgraph_view.graph_to_graphml(g)
    return graphs.graph_json_text(g, stats)


def trees(tmp_path: Path) -> list[Path]:
    small = [p for p in (EXAMPLES / "forward-override", EXAMPLES / "call-order", EXAMPLES / "dead-write") if p.is_dir()]
    return [write_tree(tmp_path / "prog", PROGRAM), *small]


@pytest.mark.parametrize("fmt", ["json", "dot", "graphml"])
def test_cold_and_warm_documents_are_the_networkx_bytes(tmp_path, fmt):
    for i, root in enumerate(trees(tmp_path)):
        cache = SummaryCache(tmp_path / f"cache{i}")
        cold, cold_stats, n_nodes, n_edges = graph_text.whole_call_document(root, cache, fmt, jobs=1)
        warm, warm_stats, *_ = graph_text.whole_call_document(root, cache, fmt, jobs=1)
        g, _ = whole_call_graph(root, SummaryCache(None), jobs=1)
        assert (n_nodes, n_edges) == (len(g), g.number_of_edges())
        assert cold == networkx_text(g, cold_stats, fmt)
        assert warm == networkx_text(g, warm_stats, fmt)
        assert not cold_stats["answer_cached"] and warm_stats["answer_cached"]
        if fmt != "json":
            assert warm == cold
        else:
            assert json.loads(warm)["edges"] == json.loads(cold)["edges"]


def test_the_program_edges(tmp_path):
    text, *_ = graph_text.whole_call_document(write_tree(tmp_path, PROGRAM), SummaryCache(None), "json", jobs=1)
    data = json.loads(text)
    assert data["edge_kinds"] == {"a.run->a.run.<lambda1>": "call", "a.run.<lambda1>->b.Helper.go": "call",
                                  "b.Helper.go->b.Base.go": "super"}
    assert ["a.run", "b.Base.go"] not in data["edges"]  # only through super(), from Helper.go
    assert "nodes" in data and data["stats"]["files_total"] == 3


def test_writers_on_awkward_names_match_networkx():
    """Quotes, ampersands, angle brackets, a newline; two full names of one short name (the
    DiGraph keeps one node and the last edge's attributes); an assumed edge."""
    nodes = ["p.a", "p.<lambda>", 'p.q"&\n', "a", "p.z"]
    edges = [("p.a", "p.<lambda>", "call"), ("p.<lambda>", 'p.q"&\n', "callback"), ("a", "p.z", "call"),
             ("p.a", "p.z", "implicit")]
    stats = {"edges_assumed": [("p.<lambda>", 'p.q"&\n', "entry-classes")]}

    def short(n: str) -> str:
        return n[2:] if n.startswith("p.") else n

    g = graph_of(nodes, edges, stats, short)
    adj = graph_text.adjacency(nodes, edges, stats, short)
    assert ("a", "z") in g.edges and g.edges["a", "z"]["kind"] == "implicit"
    for fmt in ("json", "dot", "graphml"):
        text = graph_text.document(adj, fmt)
        if fmt == "json":
            text = graph_text.json_with_stats(text, {"x": [1, {"y": 2}]})
        assert text == networkx_text(g, {"x": [1, {"y": 2}]}, fmt), fmt
    assert graph_text.json_with_stats(graph_text.json_head(adj), None) == graphs.graph_json_text(g)


def test_empty_graphs_match_networkx():
    for nodes in ([], ["m"]):
        g = graph_of(nodes, [], {})
        adj = graph_text.adjacency(nodes, [], {})
        for fmt in ("dot", "graphml"):
            assert graph_text.document(adj, fmt) == networkx_text(g, {}, fmt)
        assert graph_text.json_with_stats(graph_text.json_head(adj), {}) == graphs.graph_json_text(g, {})


def test_a_changed_file_is_not_answered_by_the_stored_document(tmp_path):
    root = write_tree(tmp_path, PROGRAM)
    cache = SummaryCache(tmp_path / "cache")
    graph_text.whole_call_document(root, cache, "dot", jobs=1)
    (root / "b.py").write_text("class Helper:\n    def go(self, y):\n        return y\n")
    text, stats, *_ = graph_text.whole_call_document(root, cache, "dot", jobs=1)
    assert stats["files_parsed"] == 1 and not stats["answer_cached"]
    assert '"b.Helper.go" -> "b.Base.go"' not in text
    assert '"a.run.<lambda1>" -> "b.Helper.go" [label="call"];' in text


def test_another_format_or_option_writes_its_own_document(tmp_path, monkeypatch):
    root = write_tree(tmp_path, PROGRAM)
    cache = SummaryCache(tmp_path / "cache")
    written: list[str] = []
    real = graph_text.document
    monkeypatch.setattr(graph_text, "document", lambda adj, fmt: written.append(fmt) or real(adj, fmt))
    graph_text.whole_call_document(root, cache, "json", jobs=1)
    graph_text.whole_call_document(root, cache, "json", jobs=1)
    assert written == ["json"]  # the second: the stored document
    dot, *_ = graph_text.whole_call_document(root, cache, "dot", jobs=1)
    assert written == ["json", "dot"] and dot.startswith("digraph tracer {")
    graph_text.whole_call_document(root, cache, "json", jobs=1, module_calls=("forward",))
    assert written == ["json", "dot", "json"]
    graph_text.whole_call_document(root, SummaryCache(None), "json", jobs=1)  # --no-cache: nothing stored
    assert written == ["json", "dot", "json", "json"]


def test_a_corrupt_stored_document_is_ignored(tmp_path):
    root = write_tree(tmp_path, PROGRAM)
    cache = SummaryCache(tmp_path / "cache")
    good, *_ = graph_text.whole_call_document(root, cache, "graphml", jobs=1)
    entries = sorted((tmp_path / "cache" / "callgraph").rglob("*"), key=lambda p: p.stat().st_mtime)
    newest = [p for p in entries if p.is_file()][-1]  # the document: written last
    newest.write_bytes(newest.read_bytes()[:-7] + b"garbage")  # its HMAC no longer matches
    again, *_ = graph_text.whole_call_document(root, cache, "graphml", jobs=1)
    assert again == good
    # an entry of ours (its HMAC right) of another shape
    from tracer.callgraph.build import Tree

    tree = Tree(root, cache, None, (), (), ())
    key = document_key(tree.key, "graphml", graph_text._writer_fingerprint())
    Store(cache.directory).store_value(key, ("graph-doc1", 3, {}, 0, 0, 0))
    again, *_ = graph_text.whole_call_document(root, cache, "graphml", jobs=1)
    assert again == good
    Store(cache.directory).store_value(key, ("graph-doc1", "x", [], 0, 0, 0))
    out = tmp_path / "g.graphml"
    result = CliRunner().invoke(main, ["graph", str(root), "--all", "--format", "graphml", "--cache-dir",
                                       str(tmp_path / "cache"), "-j", "1", "-o", str(out)])
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert out.read_text() == good


def test_the_cli_writes_the_networkx_bytes_and_a_warm_run_imports_no_heavy_module(tmp_path):
    root = write_tree(tmp_path, PROGRAM)
    g, _ = whole_call_graph(root, SummaryCache(None), jobs=1)
    args = [sys.executable, "-X", "importtime", "-m", "tracer", "graph", str(root), "--all", "--format", "dot",
            "-j", "1", "--cache-dir", str(tmp_path / "cache"), "-o", str(tmp_path / "g.dot")]
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    runs = [subprocess.run(args, capture_output=True, text=True, env=env, check=True) for _ in range(2)]

    def heavy(run: subprocess.CompletedProcess[str]) -> set[str]:
        return set(re.findall(r"\|\s+(networkx|pydot|libcst|jedi|click)$", run.stderr, re.M))

    assert heavy(runs[1]) == {"click"}, runs[1].stderr[-2000:]  # click: the check sees a top-level import
    assert (tmp_path / "g.dot").read_text() == graphs.graph_to_dot(g)


def test_the_tree_reader_keeps_the_reading_rule(tmp_path):
    """Each file read as read_regular_bytes reads it: a link leaving the root (the file, or a
    folder on its way) refused, one staying inside followed, a FIFO and a missing file refused."""
    import os

    from tracer.index.source import read_regular_bytes
    from tracer.safeio import TreeReader

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("SECRET = 1\n")
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("A = 1\n")
    (root / "sub" / "b.py").write_text("B = 2\n")
    (root / "inner.py").symlink_to(root / "sub" / "b.py")
    (root / "leak.py").symlink_to(outside / "secret.py")
    (root / "away").symlink_to(outside)
    os.mkfifo(root / "pipe.py")
    reader = TreeReader(root)
    names = ["a.py", "sub/b.py", "inner.py", "leak.py", "away/secret.py", "pipe.py", "missing.py", "sub/../a.py"]
    got = {n: reader.read_or_none(root / n, 99, cut=True) for n in names}
    assert got == {n: read_regular_bytes(root / n, 100, root) for n in names}
    assert got == {"a.py": b"A = 1\n", "sub/b.py": b"B = 2\n", "inner.py": b"B = 2\n", "leak.py": None,
                   "away/secret.py": None, "pipe.py": None, "missing.py": None, "sub/../a.py": b"A = 1\n"}


def test_errors_of_modules_imported_late_are_still_one_line(tmp_path, monkeypatch):
    """The CLI no longer imports scan_json and the configs up front: their errors, raised by a
    command that imported them, are still one line and exit status 2, never 'internal error'."""
    from tracer.effective.configs import ConfigError
    from tracer.present.scan_json import ScanJsonError

    root = write_tree(tmp_path, PROGRAM)
    for error in (ScanJsonError("not a tracer scan JSON (x)"), ConfigError("bad config (y)")):
        def fail(*args, error=error, **kwargs):
            raise error
        monkeypatch.setattr(graph_text, "whole_call_document", fail)
        result = CliRunner().invoke(main, ["graph", str(root), "--all", "--no-cache"])
        assert result.exit_code == 2 and result.output == f"tracer: error: {error}\n", result.output
