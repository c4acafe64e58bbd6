"""The interpreter's bounded value model (issue 29): a setter or config asking for a value
past the budget gets an Unknown naming the budget, within a bounded time and memory;
explain says so; a layer count past the bound is a one-line input error.

Each hostile case runs in a child process under a 2 GiB address-space limit and a wall-clock
limit, so a case that regressed ends as a failure naming it instead of hanging the suite."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OK = REPO / "examples" / "ok"
GOOD_WRITE = "self.model.layers_to_capture = [val + 1 for val in layer_ids]"

HOSTILE = {  # expression -> what the why must name
    "sum(range(10**12))": "range of 1,000,000,000,000 items",
    "max(range(10**12))": "range of 1,000,000,000,000 items",
    "sorted(range(10**12))": "range of",
    "list(range(10**9))": "range of",
    "7 ** 3000000000 % 97": "bits",
    "1 << 10**10": "bits",
    '"ab".join(["c"] * 10**8)': "budget",
    '"ab" * 10**9': "budget",
    '"%0999999999d" % 1': "width or precision",
    '"{:>999999999}".format(1)': "width or precision",
    "[[0] * 100000] * 100000": "budget",
    "[x for x in range(10**6)]": "range of",
    '("x" * 900000).replace("x", "yyyyyyyyyy")': "budget",
}

_CHILD = r'''
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from tracer.interp.evaluate import evaluate_function
out = {}
for expr in json.loads(sys.argv[1]):
    source = "def f(self):\n    self.model.value = " + expr + "\n"
    started = time.perf_counter()
    outcome = evaluate_function(source, args={}, env={})
    value = outcome.writes.get("self.model.value")
    out[expr] = [getattr(value, "why", repr(value)[:200]), time.perf_counter() - started]
print(json.dumps(out))
'''


def _evaluate_in_child(expressions: list[str], timeout: float = 120) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(expressions)], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_values_past_the_budget_are_unknown_and_bounded():
    results = _evaluate_in_child(list(HOSTILE))
    for expr, want in HOSTILE.items():
        why, seconds = results[expr]
        assert want in why, (expr, why)
        assert seconds < 20, (expr, seconds)  # the budget keeps each to milliseconds; this only catches a hang


def test_ordinary_values_keep_their_answers():
    from tracer.interp.evaluate import evaluate_function

    source = textwrap.dedent("""\
        def f(self, n=61):
            ids = [2, n // 2, n - 3] + [i for i in range(n) if i % 20 == 0]
            self.model.value = (sorted(set(ids)), sum(range(n)), max(range(n)), "-".join(str(i) for i in ids),
                                2 ** 64, "{:>4}".format(7), [0] * 1000 == [0] * 1000)
        """)
    value = evaluate_function(source, args={}, env={}).writes["self.model.value"]
    assert value == ([0, 2, 20, 30, 40, 58, 60], 1830, 60, "2-30-58-0-20-40-60", 2 ** 64, "   7", True)


def test_doubling_a_value_stops_at_the_budget():
    from tracer.interp.evaluate import evaluate_function

    source = textwrap.dedent("""\
        def f(self):
            x = [0]
            for _ in range(200):
                x = [x, x]
            self.model.value = x
        """)
    from tracer.interp.values import first_unknown

    outcome = evaluate_function(source, args={}, env={})
    # each doubling past the size budget is Unknown (and doubles again from there), until the
    # evaluation's work budget ends it: never 2**200 of anything
    value = outcome.writes.get("self.model.value")
    assert (not outcome.complete and "work budget" in outcome.stopped.why) or "budget" in first_unknown(value).why
    assert any("budget" in note.why for note in outcome.unknowns)


def test_a_config_value_past_the_budget_costs_only_its_key():
    from tracer.interp.evaluate import evaluate_function

    source = "def f(self):\n    self.model.value = (self.config.n, self.config.big)\n"
    env = {"self.config": {"n": 28, "big": list(range(300_000))}}
    n, big = evaluate_function(source, args={}, env=env).writes["self.model.value"]
    assert n == 28 and "budget" in big.why


def test_work_past_the_budget_stops_the_evaluation():
    from tracer.interp.evaluate import evaluate_function

    source = textwrap.dedent("""\
        def f(self):
            x = [0] * 40000
            total = 0
            for i in range(100000):
                total += x.count(i)
            self.model.value = total
        """)
    outcome = evaluate_function(source, args={}, env={})
    assert not outcome.complete and "work budget" in outcome.stopped.why


# -- end to end: explain and the config reader ----------------------------------------------------

def _tree(tmp_path: Path, write: str, layers: object = 28) -> tuple[Path, Path, Path]:
    root = tmp_path / "tree"
    shutil.copytree(OK, root, ignore=shutil.ignore_patterns("EXPECT.toml", "__pycache__"))
    model = root / "sglang" / "srt" / "models" / "qwen2.py"
    model.write_text(model.read_text().replace(GOOD_WRITE, write))
    target, draft = tmp_path / "t", tmp_path / "d"
    target.mkdir()
    draft.mkdir()
    text = json.dumps({"architectures": ["Qwen2ForCausalLM"], "num_hidden_layers": 1, "hidden_size": 64})
    (target / "config.json").write_text(text.replace('"num_hidden_layers": 1', f'"num_hidden_layers": {layers}'))
    (draft / "config.json").write_text(json.dumps(
        {"architectures": ["LlamaForCausalLMEagle3"], "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 13]}}))
    return root, target, draft


def _explain(root: Path, target: Path, draft: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tracer", "explain", str(root), "--target-config", str(target),
                           "--draft-config", str(draft), *extra], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=root.parent)


@pytest.mark.parametrize("expr", ["sum(range(10**12))", "7 ** 3000000000 % 97", '"ab".join(["c"] * 10**8)'])
def test_explain_says_the_value_is_past_the_budget(tmp_path, expr):
    root, target, draft = _tree(tmp_path, f"self.model.layers_to_capture = [val + 1 + len(str({expr})) for val in layer_ids]")
    done = _explain(root, target, draft)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert "Eager path captures the outputs of: unknown" in done.stdout
    assert "past the interpreter's budget" in done.stdout


@pytest.mark.parametrize("layers, words", [
    ("1000000000000", "more than 10,000"),
    (str(2 ** 63), "more than 10,000"),
    ("9" * 5000, "digits"),
])
def test_a_layer_count_past_the_bound_is_a_one_line_error(tmp_path, layers, words):
    root, target, draft = _tree(tmp_path, GOOD_WRITE, layers)
    for command in (["explain", str(root), "--target-config", str(target), "--draft-config", str(draft)],
                    ["scan", str(root), "--target-config", str(target), "--draft-config", str(draft)]):
        done = subprocess.run([sys.executable, "-m", "tracer", *command], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=tmp_path)
        assert done.returncode == 2, (command, done.stdout[-1000:], done.stderr[-2000:])
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("tracer: error: target config") and words in lines[0], lines


def test_a_function_past_the_source_budget_is_not_parsed():
    """A 1 MB setter literal cost ~90 s and 1 GB in explain (libcst parsed it three times);
    past 64 KiB the interpreter says so instead of parsing it at all."""
    from tracer.interp.evaluate import evaluate_function

    source = "def f(self):\n    self.model.value = [" + ", ".join(["1"] * 40_000) + "]\n"
    outcome = evaluate_function(source, args={}, env={})
    assert not outcome.complete and "past the interpreter's budget of 64 KiB" in outcome.stopped.why
    assert outcome.writes == {}


def test_a_helper_spends_the_budget_of_the_evaluation_that_calls_it():
    from tracer.interp.capture import captured_indices

    helper = ("def _helper(self, i):\n    x = [0] * 40000\n    for j in range(100):\n        x.count(j)\n"
              "    return i\n")
    forward = ("def forward(self, x):\n    for i in range(len(self.layers)):\n        self._helper(i)\n"
               "        if i in self.layers_to_capture:\n            x = x\n    return x\n")
    result = captured_indices(forward, [1, 2], state_path="self.layers_to_capture",
                              env={"self.layers": list(range(40))}, helpers={"_helper": (helper, 1)})
    assert not result.complete
    assert any("work budget" in note.why for note in result.unknowns), result.unknowns


# -- random compositions of big values ------------------------------------------------------------

_FUZZ_CHILD = r'''
import json, random, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from tracer.interp.evaluate import evaluate_function
rng = random.Random(int(sys.argv[1]))
atoms = ["10**12", "2**4000", "-(2**4000)", "[0] * 90000", "'ab' * 400000", "'%0999d'", "'{:>9999}'", "range(99999)",
         "[[1] * 300] * 300", "{'a': [0] * 50000}", "(1, 2) * 40000", "3.5", "'x'", "7", "[]", "10**100"]
forms = ["list({})", "sorted({})", "sum({})", "max({})", "str({})", "len({})", "set({})", "'-'.join({})",
         "'-'.join(str(i) for i in {})", "{}.split()", "[x * 3 for x in {}]", "int({})", "{} + {}", "{} * {}",
         "{} ** 3", "{} << 3000", "{} % 97", "{} ** {}", "{}.format(1)", "{} % 5", "list(enumerate({}))",
         "list(zip({}, {}))", "{}.replace('a', 'bbbbbbbbbbbbb')", "{}.count(0)", "{} == {}", "{} in {}", "[{}] * 9",
         "[{}, {}]", "{{'k': {}}}", "f'{{{}}}'", "{}[::-1]", "float({})"]
def expr(depth):
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(atoms)
    form = rng.choice(forms)
    return "(" + form.format(*["(" + expr(depth - 1) + ")" for _ in range(form.count("{}"))]) + ")"
worst = [0.0, ""]
for _ in range(int(sys.argv[2])):
    e = expr(4)
    source = "def f(self):\n    x = " + e + "\n    for i in range(50):\n        x = " + e + "\n    self.model.value = x\n"
    started = time.process_time()
    evaluate_function(source, args={}, env={})
    spent = time.process_time() - started
    if spent > worst[0]:
        worst = [spent, e]
# VmHWM is this process's own peak: ru_maxrss keeps the forking pytest worker's across exec (Linux),
# so a worker grown by earlier tests failed this child's bound in CI
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"worst": worst, "rss_mib": hwm >> 10}))
'''


@pytest.mark.parametrize("seed", [1, 2])
def test_random_compositions_of_big_values_stay_within_the_budget(seed):
    """Compositions four deep of ranges, repetition, joins, formats, big integers and nested
    lists, each evaluated 51 times in a loop: no exception, and (in CPU time, not wall time,
    so a loaded machine does not move it) each evaluation ends well within seconds (measured
    worst 1.2 s), the whole child under 2 GiB of address space (measured peak ~50 MiB)."""
    done = subprocess.run([sys.executable, "-c", _FUZZ_CHILD, str(seed), "25"], capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["worst"][0] < 10, report
    assert report["rss_mib"] < 1024, report
