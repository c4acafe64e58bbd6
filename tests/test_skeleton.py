"""The outline parses a module's skeleton (function bodies blanked): the outline of the
skeleton must be the outline of the module, shape by shape and on every file of real
releases; a body that does not parse must still make its module an input error."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tracer.index.outline import outline_summary
from tracer.index.skeleton import skeleton

REPO = Path(__file__).resolve().parent.parent

SHAPES = {
    "docstring at column 0": '''
        class A(Base):
            def f(self):
                """Example:
        class Fake(Other):
            def g(self): pass
        """
                return 1

            def h(self):
                pass
        ''',
    "black-style header": '''
        class A:
            def f(
                self,
                x: dict[str, int] = {"a": (1, 2)},
            ) -> "A":
                return self

            g = f
        ''',
    "bare string after a method belongs to the class": '''
        class A:
            def f(self):
                return 1

            """a string statement of the class body"""

            def g(self):
                return 2
        ''',
    "imports under try/except and if/else in a body": '''
        def f():
            try:
                from a import X
            except ImportError:
                from b import X
            if X:
                import c.d
            else:
                import e as c
            from .f import (
                g,
                h,
            )
            import i, \\
                j
            return X
        ''',
    "nested defs and classes": '''
        class A:
            def f(self):
                def inner():
                    import k
                    class Hidden(Base):
                        def m(self): ...
                    return Hidden
                return inner

            class Nested(A):
                def n(self):
                    return 1
        ''',
    "a dedented line inside brackets": '''
        class A:
            def f(self):
                x = call(
        1,
                )
                return x

            def g(self):
                return 2
        ''',
    "backslash continuation at column 0": '''
        def f():
            x = 1 + \\
        2
            return x
        def g():
            return 3
        ''',
    "brackets and quotes inside strings and comments": '''
        class A:
            def f(self):
                s = "(" + '[' + "{"  # ) ] } '"""
                t = """ ( """
                return s

            def g(self):
                return ")"
        ''',
    "one-line defs and a decorated def": '''
        class A:
            def f(self): return 1
            @property
            @cache(
                size=2,
            )
            def g(self):
                return 2
            async def h(self):
                await x
        ''',
    "module __getattr__ keeps its lazy imports": '''
        def __getattr__(name):
            if name == "Model":
                from .models import Model
                return Model
            if HAS_X:
                from .x import Other
            raise AttributeError(name)

        def helper():
            from .y import Z
            return Z
        ''',
    "the same method twice (the later one runs)": '''
        class A:
            def f(self):
                return 1

            def f(self, ids):
                self.ids = ids
        ''',
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_skeleton_outline_is_the_module_outline(shape):
    text = textwrap.dedent(SHAPES[shape]).lstrip("\n")
    reduced = skeleton(text)
    assert reduced is not None, "every shape has a body to blank"
    assert reduced.count("\n") == text.count("\n"), "lines keep their numbers"
    ast.parse(reduced)
    assert outline_summary(reduced, "m", "m.py", False) == outline_summary(text, "m", "m.py", False)


def test_skeleton_blanks_the_bodies():
    text = textwrap.dedent(SHAPES["docstring at column 0"]).lstrip("\n")
    reduced = skeleton(text)
    assert "Fake" not in reduced and "return 1" not in reduced
    assert "class A(Base):" in reduced and "    def h(self):" in reduced


def test_what_the_skeleton_will_not_judge_is_parsed_whole():
    assert skeleton("def f():\n\treturn 1\n") is None  # tabs
    assert skeleton("X = 1\n") is None  # nothing to blank
    assert skeleton("def f(:\n    pass\n") is None  # a header that never ends
    assert skeleton("def f():\n    x = (\n") is None  # a body whose brackets never close


def test_a_body_that_does_not_parse_is_its_module_input_error(tmp_path):
    """The skeleton hides a syntax error inside a body; once a chain reads that body the
    module is an input error at the whole module's error line, as when it was parsed whole,
    and its models are not judged from its outline (the trace starts again without it)."""
    tree = tmp_path / "tree"
    import shutil

    shutil.copytree(REPO / "examples" / "ok", tree)
    model = tree / "sglang" / "srt" / "models" / "qwen2.py"
    text = model.read_text()
    start = text.index("def set_eagle3_layers_to_capture")
    body = text.index("\n", text.index(":\n", start) + 2) + 1
    model.write_text(text[:body] + "        x = = 1\n" + text[body:])
    line = text[:body].count("\n") + 1
    done = subprocess.run([sys.executable, "-m", "tracer", "scan", str(tree), "--no-cache", "--format", "json"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    errors = [(e["file"], e["line"]) for e in result["input_errors"]]
    assert errors == [("sglang/srt/models/qwen2.py", line)], result["input_errors"]
    assert [f["line"] for f in result["findings"] if f["slug"] == "input-error"] == [line]
    entries = {m["entry"] for m in result["models"]}
    assert "sglang.srt.models.qwen2.Qwen2ForCausalLM" not in entries, "judged from a module that does not parse"
    assert "sglang.srt.models.llama.LlamaForCausalLM" in entries


RELEASES = [("sglang", "0.5.23", "sglang/srt/models"), ("vllm", "0.33.0", "vllm/model_executor/models")]


@pytest.mark.real
@pytest.mark.parametrize("package,version,folder", RELEASES)
def test_skeleton_outlines_match_on_a_real_release(package, version, folder):
    sys.path.insert(0, str(REPO / "tests"))
    from releases import release_dir

    root = release_dir(version, package=package) / folder
    compared = 0
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        reduced = skeleton(text)
        if reduced is None:
            continue
        assert outline_summary(reduced, "m", str(path), False) == outline_summary(text, "m", str(path), False), path
        compared += 1
    assert compared > 150, compared
