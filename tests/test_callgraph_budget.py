"""A whole-tree solve stays proportional where one helper is called from many sites with a dict
of different keys each: SGLang's ``set_weight_attrs(weight, attrs)`` (hundreds of callers, ``for
k, v in attrs.items(): setattr(weight, k, v)``). When a ``d.items()`` pair's first element was any
literal's constant key, every caller's key met every caller's value: ``graph --all`` of sglang
0.5.23 ``sglang/srt`` ran for minutes past 1.7 GB (fixed in 415490a). This synthetic stand-in is
the guard the real tree is too slow to be in the suite: before the fix it held 210,375 solver
facts at 100 callers (and 10,100 edges, every ``weight_loader`` call bound to every layer's
loader); after, 5,051 facts and none of those impossible edges."""

from __future__ import annotations

from pathlib import Path

from tests.callgraph_cli import graph
from tracer.callgraph.compile import compile_module
from tracer.callgraph.solve import Solver
from tracer.index.gcpause import paused_gc

WEIGHTS = """\
def set_weight_attrs(weight, attrs):
    for k, v in attrs.items():
        setattr(weight, k, v)


class Param:
    pass
"""


def layer(i: int) -> str:
    return f"""\
from pkg.weights import set_weight_attrs, Param


class Layer{i}:
    def loader{i}(self, p, x):
        return p

    def create(self):
        w = Param()
        set_weight_attrs(w, {{"weight_loader": self.loader{i}, "input_dim": {i}, "output_dim": "o{i}", "k{i}": Layer{i}}})
        w.weight_loader(w, 1)
        return w.k{i}, w.input_dim, w.output_dim
"""


def sources(n: int) -> dict[str, str]:
    return {"pkg.weights": WEIGHTS, **{f"pkg.layer{i}": layer(i) for i in range(n)}}


def test_many_callers_dict_parameter_keeps_solver_facts_proportional() -> None:
    irs = [compile_module(m, m.replace(".", "/") + ".py", False, src) for m, src in sources(100).items()]
    solver = Solver(irs, "pkg")
    with paused_gc():
        solver.solve()
    facts = sum(len(v) if isinstance(v, (tuple, dict)) else 1 for v in solver.pts if v is not None)
    # 5,051 today, 210,375 with the regression: a bound with room for real gains, far from the blow-up
    assert facts < 25_000, facts


def test_many_callers_dict_parameter_binds_no_other_layers_loader(tmp_path: Path) -> None:
    n = 12
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for module, src in sources(n).items():
        (pkg / (module.split(".")[1] + ".py")).write_text(src)
    edges = {(u, v) for u, v in graph(tmp_path)["edges"]}
    for i in range(n):
        create = f"pkg.layer{i}.Layer{i}.create"
        assert (create, "pkg.weights.set_weight_attrs") in edges
        wrong = {(create, f"pkg.layer{j}.Layer{j}.loader{j}") for j in range(n) if j != i}
        assert not wrong & edges, sorted(wrong & edges)
