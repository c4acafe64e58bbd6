"""The architecture, checked: the import rules the README states, no import cycles,
no module over ~500 lines without a stated reason, and no framework name in the
stages (everything framework-specific lives in rules/*.toml). Read statically
(the stdlib ast), like everything tracer reads."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import networkx as nx
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tracer"
MAX_LINES = 500
# Modules allowed past the bound, each with its reason.
LONG_MODULES: dict[str, str] = {
    # the runtime harness (tracer/verify) is measured apart: it runs the framework, not tracer's stages
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(path: Path, module: str, top_level_only: bool = False) -> set[str]:
    tree = ast.parse(path.read_text())
    # `if TYPE_CHECKING:` imports count: a cycle hidden there is still two modules that need
    # each other (type them against a Protocol in a module both may import instead)
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    names = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names.add(target)
            names.update(f"{target}.{alias.name}" for alias in node.names)
    return names


MODULES = _modules()


def _tracer_imports(module: str, top_level_only: bool = False) -> set[str]:
    found = set()
    for name in _imports(MODULES[module], module, top_level_only):
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and name != module and name.startswith("tracer"):
            found.add(name)
    return found


def test_plain_data_imports_nothing_else_of_tracer():
    for module in MODULES:
        if module.startswith("tracer.model"):
            bad = {m for m in _tracer_imports(module) if not m.startswith("tracer.model")}
            assert not bad, f"{module} imports {sorted(bad)}"


def test_presentation_never_imports_analysis():
    for module in MODULES:
        if module.startswith("tracer.present"):
            bad = {m for m in _tracer_imports(module) if m.startswith("tracer.analysis")}
            assert not bad, f"{module} imports {sorted(bad)}"


def test_only_the_cli_imports_click():
    for module, path in MODULES.items():
        if module.startswith("tracer.cli"):
            continue
        assert not any(n == "click" or n.startswith("click.") for n in _imports(path, module)), module


def test_no_import_cycles():
    """Between modules, counting every import: those that run at import time, a function-level
    import that breaks a cycle and an `if TYPE_CHECKING:` one (a cycle too), except the verify
    harness's lazy imports, which are how torch stays out of the static tool."""
    graph = nx.DiGraph()
    for module in MODULES:
        graph.add_node(module)
        for target in _tracer_imports(module, top_level_only=module.startswith("tracer.verify")):
            graph.add_edge(module, target)
    # a package's __init__ importing its own modules is not a cycle through them
    cycles = [c for c in nx.simple_cycles(graph) if not any(m + "." in other for m in c for other in c)]
    assert cycles == [], cycles[:5]


def test_no_cycles_between_stage_packages():
    graph = nx.DiGraph()
    for module in MODULES:
        source = ".".join(module.split(".")[:2])
        for target in _tracer_imports(module):
            target_package = ".".join(target.split(".")[:2])
            if target_package != source:
                graph.add_edge(source, target_package)
    assert list(nx.simple_cycles(graph)) == []


def test_a_name_another_module_imports_is_public():
    """No `from tracer.x import _name`: a name used by another module is part of its interface
    and is named as such (a private name stays inside its module)."""
    found = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tracer"):
                found += [f"{module}:{node.lineno}: from {node.module} import {alias.name}" for alias in node.names
                          if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert found == [], found


@pytest.mark.parametrize("module", [m for m in MODULES if not m.startswith("tracer.verify")])
def test_module_size(module):
    lines = MODULES[module].read_text().count("\n")
    assert lines <= MAX_LINES or module in LONG_MODULES, f"{module}: {lines} lines (bound {MAX_LINES})"


# Names that belong to one framework or protocol: they may appear in tracer/ only in
# comments and docstrings (as examples), never in code; the packs in rules/ hold them.
FRAMEWORK_WORDS = ("sglang", "vllm", "set_eagle3", "set_dflash", "eagle_aux_hidden", "capture_aux_hidden",
                   "EntryClass", "get_pp_indices", "self.pp_group", "dflash_config",
                   "lmdeploy", "AutoModelConfigBuilder", "MODULE_MAP", "get_outputs_cudagraph")


@pytest.mark.parametrize("module", [m for m in MODULES
                                    if not m.startswith(("tracer.verify", "tracer.checks", "tracer.cli.verify"))])
def test_no_framework_name_in_code(module):
    """(The catalogue's examples are SGLang-shaped trees by design: they are data. The runtime
    harness, tracer/verify and its command, runs one framework's model code: it names it.)"""
    path = MODULES[module]
    text = path.read_text()
    tree = ast.parse(text)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    doc_lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) in docstrings:
            doc_lines.update(range(node.lineno, node.end_lineno + 1))
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE) or token.start[0] in doc_lines:
            continue
        lowered = token.string.lower()
        found.extend(f"line {token.start[0]}: {token.string[:60]}" for word in FRAMEWORK_WORDS
                     if word.lower() in lowered)
    assert found == [], found


# One recogniser for the call shapes every engine must read alike (tracer/bind/syntax.py):
# nowhere else may code compare a name against "super" or "hasattr". Allowed elsewhere,
# each compared expression exactly as written, with its reason:
SHAPE_WORDS = ("super", "hasattr")
SHAPE_RECOGNISER = "tracer.bind.syntax"
SHAPE_COMPARES_ALLOWED = {
    ("tracer.callgraph.solve", "op == 'super'"),  # the solver's IR opcode, not a call shape
    ("tracer.callgraph.exprs", "'super' not in self.ns"),  # a module that rebinds the name: scope, not shape
}


def _shape_words_in(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in SHAPE_WORDS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_shape_words_in(e) for e in node.elts)
    return False


def test_super_and_hasattr_are_recognised_in_one_place():
    found = []
    for module, path in MODULES.items():
        if module == SHAPE_RECOGNISER:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(_shape_words_in(n) for n in [node.left, *node.comparators]):
                if (module, ast.unparse(node)) not in SHAPE_COMPARES_ALLOWED:
                    found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.MatchValue) and _shape_words_in(node.value):
                found.append(f"{module}:{node.lineno}: case {ast.unparse(node.value)}")
    assert found == [], found


def test_the_recogniser_reads_both_forms():
    from tracer.bind.syntax import hasattr_test, super_call, super_method

    plain, explicit = ast.parse("super().f").body[0].value, ast.parse("super(C, self).f").body[0].value
    assert super_method(plain) == "f" and super_call(plain.value) == (None, None)
    two = super_call(explicit.value)
    assert two is not None and two.explicit and ast.unparse(two.cls) == "C" and ast.unparse(two.obj) == "self"
    assert super_call(ast.parse("sup()").body[0].value) is None
    assert super_method(ast.parse("self.f").body[0].value) is None
    tested = hasattr_test(ast.parse("hasattr(self.model, 'set_x')").body[0].value)
    assert tested is not None and ast.unparse(tested.receiver) == "self.model" and tested.name == "set_x"
    for other in ("hasattr(x, name)", "hasattr(x)", "getattr(x, 'a')", "obj.hasattr(x, 'a')"):
        assert hasattr_test(ast.parse(other).body[0].value) is None, other


# JSON is a format of the outside world: read and written where a document is (de)serialised,
# never inside the stages that pass typed results. Every module that may import json, and why:
JSON_ALLOWED = {
    "tracer.present": "the documents tracer writes and reads back: scan/lint/explain/graph JSON, SARIF, "
                      "the lint records and the baseline file",
    "tracer.index.cache": "the summary cache's entries",
    "tracer.safeio": "the reading rule for JSON inputs (config.json, safetensors headers)",
    "tracer.sweep": "release indexes and the sweep's history file",
    "tracer.verify": "the runtime harness's job records and reports (it runs the framework, not the stages)",
    "tracer.fix.codemods": "writes a JSON-escaped string literal into generated Python (no document)",
}


def test_json_is_read_and_written_only_where_documents_are():
    bad = []
    for module, path in MODULES.items():
        if any(module == allowed or module.startswith(allowed + ".") for allowed in JSON_ALLOWED):
            continue
        names = _imports(path, module)
        if "json" in names or any(n.startswith("json.") for n in names):
            bad.append(module)
    assert bad == [], f"import json outside {sorted(JSON_ALLOWED)}: {bad}"


# effective/ and lint/ pass typed results: no public function returns an untyped dict
# (``dict``, ``dict[str, Any]``, or a container of them). Those that still do, each with why;
# the list only shrinks (an entry that no longer returns one fails the test too).
UNTYPED_DICT = re.compile(r"\bdict\b(?!\[)|\bdict\[str, Any\]|\bDict\b")
UNTYPED_RETURNS_LEFT = {
    # explain's result: a JSON-shaped document built key by key (present/explain_text.py reads it)
    "tracer.effective.annotate.explain": "explain's result document",
    "tracer.effective.annotate.scan_says": "a part of explain's result document",
    "tracer.effective.explain.explain_model": "explain's result document",
    "tracer.effective.explain.capture_on": "a part of explain's result document (nested function)",
    "tracer.effective.findings.effective_findings": "findings as explain's document holds them",
    "tracer.effective.findings.Facts.final_run": "a run of explain's document",
    # the draft and target config.json as read, and a safetensors header: the user's documents
    "tracer.effective.configs.read_config_json": "the config.json as read",
    "tracer.effective.configs.read_safetensors_header": "the safetensors header as read",
    "tracer.effective.configs.TargetConfig.config_for": "the config.json values the interpreter runs on",
    # lint's records and results are scan JSON (present/scan_json.py) with lint's keys
    "tracer.lint.base.base_record": "the base's scan record",
    "tracer.lint.records.empty_record": "the base's scan record",
    "tracer.lint.records.scan_with_dependencies": "the base's scan record",
    "tracer.lint.retrace.retrace": "the head's scan record",
    "tracer.lint.retrace.full_head": "the head's scan record",
    "tracer.lint.lint.lint": "lint's result document",
    "tracer.lint.lint.compare": "lint's result document",
    "tracer.lint.verdicts.verdict_changes": "scan-JSON findings",
    "tracer.lint.suppress.apply_to_json": "a scan-JSON document",
}


def _public_functions(tree: ast.Module, module: str):
    def walk(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                yield f"{prefix}.{node.name}", node
                yield from walk(node.body, prefix)  # a public helper defined inside
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                yield from walk(node.body, f"{prefix}.{node.name}")
    yield from walk(tree.body, module)


def test_effective_and_lint_return_typed_results():
    found = set()
    for module, path in MODULES.items():
        if not module.startswith(("tracer.effective", "tracer.lint")):
            continue
        for name, node in _public_functions(ast.parse(path.read_text()), module):
            if node.returns is not None and UNTYPED_DICT.search(ast.unparse(node.returns)):
                found.add(name)
    assert sorted(found - set(UNTYPED_RETURNS_LEFT)) == [], "new public functions returning an untyped dict"
    assert sorted(set(UNTYPED_RETURNS_LEFT) - found) == [], "typed now: take them off UNTYPED_RETURNS_LEFT"
