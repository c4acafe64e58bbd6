"""What a user reads: the scan's text in a linter's shape, rule selection, colour and
progress on a terminal, the GitHub annotations (issue 17's proof)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ESCAPE = re.compile(r"\x1b\[")


def tracer(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tracer", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def on_terminal(*args: str, env: dict[str, str] | None = None, stdout_tty: bool = True) -> tuple[str, str]:
    """Run tracer with stderr (and stdout, unless told) on a pseudo-terminal: (what was piped,
    what the terminal got)."""
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "tracer", *args], stdin=subprocess.DEVNULL,
                               stdout=slave if stdout_tty else subprocess.PIPE, stderr=slave,
                               env={k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None})
    os.close(slave)
    terminal = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        terminal += chunk
    piped = process.stdout.read().decode() if process.stdout else ""
    process.wait(timeout=300)
    os.close(master)
    return piped, terminal.decode(errors="replace")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("output-cache"))


# -- colour -----------------------------------------------------------------------------------

def test_colour_on_a_terminal_and_its_controls(cache):
    tree = str(EXAMPLES / "broken-delegation")
    plain_env = {"NO_COLOR": None, "FORCE_COLOR": None, "TERM": "xterm-256color"}
    _, coloured = on_terminal("scan", tree, "--cache-dir", cache, "-q", env=plain_env)
    assert ESCAPE.search(coloured), coloured[:300]
    for env in ({**plain_env, "NO_COLOR": "1"}, {**plain_env, "TERM": "dumb"}):
        _, out = on_terminal("scan", tree, "--cache-dir", cache, "-q", env=env)
        assert "broken-delegation [error]" in out and not ESCAPE.search(out), (env, out[:300])
    _, never = on_terminal("scan", tree, "--cache-dir", cache, "-q", "--color", "never", env=plain_env)
    assert not ESCAPE.search(never)
    # piped: none, unless forced
    assert not ESCAPE.search(tracer("scan", tree, "--cache-dir", cache).stdout)
    assert ESCAPE.search(tracer("scan", tree, "--cache-dir", cache, env={"FORCE_COLOR": "1"}).stdout)
    assert ESCAPE.search(tracer("scan", tree, "--cache-dir", cache, "--color", "always").stdout)


# -- progress ---------------------------------------------------------------------------------

def test_progress_on_a_terminal_and_never_when_piped(tmp_path):
    tree = str(EXAMPLES / "broken-delegation")
    # a cold scan with one job lasts long enough to draw the bar at least once
    out, terminal = on_terminal("scan", tree, "--no-cache", "-j", "1", stdout_tty=False)
    assert "tracer: scanning broken-delegation" in terminal, terminal
    assert out.startswith("sglang/srt/models/") and "tracer: scanning" not in out
    piped = tracer("scan", tree, "--no-cache", "-j", "1")
    assert piped.stderr == "", piped.stderr
    _, quiet = on_terminal("scan", tree, "--no-cache", "-q", stdout_tty=False)
    assert "tracer: scanning" not in quiet


# -- rule selection ---------------------------------------------------------------------------

def test_select_ignore_extend_select_and_statistics(cache, tmp_path):
    tree = str(EXAMPLES / "call-order")
    every = tracer("scan", tree, "--cache-dir", cache).stdout
    assert "call-order [error]" in every and "ids-dropped [error]" in every
    only = tracer("scan", tree, "--cache-dir", cache, "--select", "call")
    assert "call-order [error]" in only.stdout and "ids-dropped" not in only.stdout and only.returncode == 1
    ignored = tracer("scan", tree, "--cache-dir", cache, "--ignore", "call-order,ids")
    assert "[error]" not in ignored.stdout and ignored.returncode == 0
    # the more specific selector wins, as in ruff
    kept = tracer("scan", tree, "--cache-dir", cache, "--ignore", "ids", "--extend-select", "ids-dropped").stdout
    assert "ids-dropped [error]" in kept
    stats = tracer("scan", tree, "--cache-dir", cache, "--statistics").stdout.splitlines()
    assert re.match(r"\s*1\s+call-order\s+\[error\]", stats[0]) and re.match(r"\s*1\s+ids-dropped", stats[1])
    assert not any(line.startswith("sglang/") for line in stats)
    unknown = tracer("scan", tree, "--cache-dir", cache, "--select", "no-such-rule")
    assert unknown.returncode == 2 and unknown.stderr.startswith("tracer: error: unknown rule selector 'no-such-rule'")
    # [tool.tracer] select/ignore, found from the scanned tree up, or named with --config
    config = tmp_path / "tracer.toml"
    config.write_text('ignore = ["ids-dropped"]\n')
    assert "ids-dropped" not in tracer("scan", tree, "--cache-dir", cache, "--config", str(config)).stdout


def test_info_findings_show_when_asked(cache):
    tree = str(EXAMPLES / "ok")
    default = tracer("scan", tree, "--cache-dir", cache).stdout
    assert "[info]" not in default and "1 info finding not shown" in default
    for args in (["--fail-on", "info"], ["--extend-select", "missing-setter"]):
        shown = tracer("scan", tree, "--cache-dir", cache, *args)
        assert "missing-setter [info]" in shown.stdout.splitlines()[0], (args, shown.stdout[:300])


# -- a real release, read as its user reads it ------------------------------------------------

@pytest.mark.real
def test_scan_of_0_5_23_reads_like_a_linter(sglang_release, cache):
    tree = str(sglang_release("0.5.23"))
    result = tracer("scan", tree, "--cache-dir", cache)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    # 35 findings in at most 60 lines: the 24 setters that fall back silently are one entry
    assert len(lines) <= 60, len(lines)
    assert lines[0].startswith("sglang/srt/models/qwen3_vl.py:1688:9: broken-delegation [error] sglang-dflash: "), \
        lines[0]
    findings = [line for line in lines if re.match(r"^\S+\.py:\d+:\d+: ", line)]
    assert findings and all(FINDING_LINE.match(line) and "sglang-" in line.split("]", 1)[1][:40] for line in findings)
    assert any(line.startswith("    and 23 more like it in sglang/srt/models/ (") for line in lines), lines
    verbose = tracer("scan", tree, "--cache-dir", cache, "-v").stdout
    assert verbose.count(" silent-fallback [warning] sglang-eagle3: ") >= 25 and "more like it" not in verbose
    selected = tracer("scan", tree, "--cache-dir", cache, "--select", "silent-fallback").stdout
    assert selected.count(" silent-fallback [warning] ") == 26
    summary = lines[lines.index(next(line for line in lines if line.startswith("Scanned "))):]
    assert summary[0].startswith("Scanned sglang 0.5.23 ")
    eagle3 = next(line for line in summary if line.strip().startswith("sglang-eagle3:"))
    assert "target models (" in eagle3 and "16 draft heads not judged (chains alone: 6 ok, 10 broken)" in eagle3
    assert "Draft heads are not judged: the runner never calls the setter on a draft worker" in result.stdout
    assert not any(line.split()[:1] == ["broken"] and "draft head" in line for line in lines)
    # 34: qwen3_5_text.py's one fallback is one finding (156), not also its num_layers line (155);
    # the runner's two silent fallbacks (spec_aux_hidden_state.py:195, dflash_utils.py:571, one line
    # for DFlash and DSpark) and 7 forwards with a branch that skips capture (#15)
    assert summary[-1].startswith("Found 1 error, 34 warnings.")
    assert not re.search(r"\b1 errors\b|\b(?!1 )\d+ warning\b|\b1 releases\b", result.stdout)
    # EAGLE-3 first among the verdicts that need attention; ok chains only with -v
    attention = [line for line in lines if line.endswith(":") and line.startswith("sglang-")]
    assert attention[0] == "sglang-eagle3:"
    assert "\nok      " not in result.stdout
    quiet = tracer("scan", tree, "--cache-dir", cache, "-q").stdout.splitlines()
    assert quiet[0] == lines[0] and not any(line.startswith("  unknown") for line in quiet)
    assert quiet == lines[:len(quiet)] and not any(line.startswith(("Scanned", "Found")) for line in quiet)
    stats = tracer("scan", tree, "--cache-dir", cache, "--statistics").stdout.splitlines()
    assert re.match(r"26  silent-fallback            \[warning\]  ", stats[0]), stats[0]
    assert len({line.index("[") for line in stats[:4]}) == 1


@pytest.mark.real
def test_github_annotations_of_0_5_23(sglang_release, cache):
    out = tracer("scan", str(sglang_release("0.5.23")), "--cache-dir", cache, "--format", "github").stdout
    annotations = [line for line in out.splitlines() if line.startswith(("::error", "::warning", "::notice file"))]
    levels = Counter(a.split()[0] for a in annotations)
    assert levels == {"::error": 1, "::warning": 10}, levels  # GitHub shows 10 per level
    assert "not annotated: 24 warnings (GitHub shows 10 per level)" in out.splitlines()[-1]
    assert annotations[0].startswith("::error file=sglang/srt/models/qwen3_vl.py,line=1688")
    places = [re.match(r"::\w+ (file=[^,]+,line=\d+,col=\d+)", a).group(1) for a in annotations]
    assert len(places) == len(set(places))
    assert out.splitlines()[-1].startswith("::notice title=tracer summary::sglang 0.5.23")


# -- errors and options -----------------------------------------------------------------------

def test_every_error_is_one_line_and_exit_2(tmp_path):
    for args in (["scan", str(EXAMPLES / "ok"), "--format", "xml"], ["scan"], ["nosuch"],
                 ["scan", str(EXAMPLES / "ok"), "--bogus"], ["scan", str(tmp_path / "nope")],
                 ["graph", str(EXAMPLES / "ok"), "--all", "--format", "svg"]):
        result = tracer(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith("tracer: error: ") and result.stderr.count("\n") == 1, (args, result.stderr)
        assert "Usage:" not in result.stderr and "Traceback" not in result.stderr


def test_graph_entry_names_its_protocol(tmp_path):
    out = tmp_path / "chain.dot"
    result = tracer("graph", str(EXAMPLES / "ok"), "--entry", "KimiK25ForConditionalGeneration", "--format", "dot",
                    "-o", str(out), "--no-cache")
    assert result.returncode == 0, result.stderr
    assert "· sglang-eagle3 · ok" in out.read_text()
    missing = tracer("graph", str(EXAMPLES / "ok"), "--entry", "KimiK25ForConditionalGeneration", "--format", "dot",
                     "-o", str(out), "--no-cache", "--protocol", "sglang-nope")
    assert missing.returncode == 2 and missing.stderr.startswith("tracer: error: unknown protocol sglang-nope")


def test_report_takes_the_rule_selection(tmp_path):
    result = tracer("report", str(EXAMPLES / "call-order"), "-o", str(tmp_path / "r"), "--no-cache",
                    "--ignore", "ids-dropped")
    assert result.returncode == 0, result.stderr
    # (the source pages show the example's own `# expect:` comments: the report's pages are what count)
    pages = "".join(p.read_text() for p in (tmp_path / "r").rglob("*.html") if p.parent.name != "source")
    assert "call-order" in pages and "ids-dropped" not in pages


# -- the conventions a linter user expects (issue 28) -----------------------------------------

FINDING_LINE = re.compile(r"^\S+\.py:\d+:\d+: [a-z-]+ \[(error|warning|info)\] (sglang-[\w-]+(, sglang-[\w-]+)*: )?\S")


def synthetic(findings: list[dict], **extra) -> object:
    from tracer.present.scan_json import from_json

    base = {"slug": "silent-fallback", "severity": "warning", "protocol": "sglang-eagle3", "entries": [],
            "col": 13, "hint": "Log a warning naming the fallback layers.", "chain": []}
    return from_json({"schema_version": 2, "root": "", "protocols": ["sglang-eagle3", "sglang-dflash"], "models": [],
                      "findings": [{**base, **f} for f in findings], **extra})


def fallback(name: str, file: str, line: int, **more) -> dict:
    return {"entry": f"pkg.models.{name}", "file": file, "line": line,
            "message": f"{name}.set_eagle3_layers_to_capture falls back to [2, num_layers // 2, num_layers - 3] "
                       "when layer_ids is None, and nothing is logged", **more}


def test_findings_of_one_shape_collapse_into_one_entry_and_each_names_its_protocol():
    from tracer.present.text import TextOptions, format_text

    same = [fallback(f"M{i}ForCausalLM", f"pkg/models/m{i}.py", 10 * i) for i in range(1, 7)]
    pair = [{"slug": "unresolved", "entry": "pkg.models.A", "file": "pkg/models/a.py", "line": 5, "hint": "Annotate it.",
             "message": f"cannot follow self.{attr}.set_eagle3_layers_to_capture: unknown class"} for attr in ("x", "y")]
    both = [{"slug": "capture-skipped-on-branch", "entry": f"pkg.models.{e}", "entries": [f"pkg.models.{e}"],
             "protocol": p, "file": "pkg/models/base.py", "line": 99, "hint": "Capture there too.",
             "message": "Base.forward: when `tbo`, layers run elsewhere"} for p, e in (("sglang-dflash", "D"),
                                                                                    ("sglang-eagle3", "E"))]
    errors = [{"slug": "broken-delegation", "severity": "error", "entry": f"pkg.models.W{i}", "hint": "Delegate.",
               "file": f"pkg/models/w{i}.py", "line": 7, "message": f"W{i}ForCausalLM delegates to self.x, a Y"}
              for i in range(3)]
    scan = synthetic(same + pair + both + errors)
    order = ("sglang-eagle3", "sglang-dflash")
    lines = format_text(scan, TextOptions(protocol_order=order, quiet=True)).splitlines()
    # errors of one shape still get a line each, first
    assert [line.split(":")[0] for line in lines[:6:2]] == [f"pkg/models/w{i}.py" for i in range(3)]
    lines = lines[6:]
    assert lines[0].startswith("pkg/models/a.py:5:13: unresolved [warning] sglang-eagle3: cannot follow self.x")
    assert lines[2].startswith("pkg/models/a.py:5:13: unresolved [warning] sglang-eagle3: cannot follow self.y")
    # one place found by two protocols: one finding naming both (EAGLE-3 first) and both entries
    assert lines[4] == ("pkg/models/base.py:99:13: capture-skipped-on-branch [warning] sglang-eagle3, sglang-dflash: "
                        "Base.forward: when `tbo`, layers run elsewhere")
    assert lines[5] == "    affects 2 entry classes: D, E"
    # six setters of one shape: the first in full, then the count and the first places
    assert lines[7].startswith("pkg/models/m1.py:10:13: silent-fallback [warning] sglang-eagle3: M1ForCausalLM.set_")
    assert lines[8] == ("    and 5 more like it in pkg/models/: m2.py:20, m3.py:30, m4.py:40, m5.py:50 and 1 more"
                        "  (-v or --select silent-fallback lists each)")
    assert lines[9] == "    hint: Log a warning naming the fallback layers."
    assert len(lines) == 10 and all(FINDING_LINE.match(line) for line in lines if not line.startswith(" "))
    expanded = format_text(scan, TextOptions(protocol_order=order, quiet=True, expand=True)).splitlines()
    assert sum(1 for line in expanded if " silent-fallback [warning] sglang-eagle3: " in line) == 6
    assert not any("more like it" in line for line in expanded)


def test_quiet_prints_the_findings_alone(cache):
    broken = tracer("scan", str(EXAMPLES / "broken-delegation"), "--cache-dir", cache, "-q")
    assert broken.returncode == 1
    lines = broken.stdout.splitlines()
    assert lines and all(FINDING_LINE.match(line) or line.startswith("    ") for line in lines), lines
    assert "Scanned" not in broken.stdout and "Found" not in broken.stdout
    clean = tracer("scan", str(EXAMPLES / "ok"), "--cache-dir", cache, "-q")
    assert clean.returncode == 0 and clean.stdout == ""


def test_statistics_with_every_format_in_aligned_columns(cache):
    import json

    from tracer.present.text import statistics_lines

    findings = synthetic([fallback("A", "a.py", 1), fallback("B", "b.py", 2),
                          {"slug": "broken-delegation", "severity": "error", "entry": "x.C", "file": "c.py", "line": 3,
                           "message": "m", "hint": "h"},
                          {"slug": "capture-skipped-on-branch", "entry": "x.D", "file": "d.py", "line": 4,
                           "message": "m", "hint": "h"}]).findings
    rows = statistics_lines(findings)
    assert [r.split()[:2] for r in rows] == [["2", "silent-fallback"], ["1", "broken-delegation"],
                                             ["1", "capture-skipped-on-branch"]]
    assert len({r.index("[") for r in rows}) == 1, rows  # the severity column
    summary_at = {len(r) - len(r[r.index("]") + 1:].lstrip()) for r in rows}
    assert len(summary_at) == 1, rows  # the summary column
    tree = str(EXAMPLES / "call-order")
    as_json = tracer("scan", tree, "--cache-dir", cache, "--statistics", "--format", "json")
    assert as_json.returncode == 1, as_json.stderr
    assert {(r["slug"], r["severity"], r["count"]) for r in json.loads(as_json.stdout)} == \
        {("call-order", "error", 1), ("ids-dropped", "error", 1)}
    for fmt in ("sarif", "github"):
        table = tracer("scan", tree, "--cache-dir", cache, "--statistics", "--format", fmt)
        assert table.returncode == 1 and re.match(r"1  call-order  +\[error\]  ", table.stdout), (fmt, table.stdout)


def test_output_format_is_an_alias_of_format(cache):
    tree = str(EXAMPLES / "call-order")
    named = tracer("scan", tree, "--cache-dir", cache, "--output-format", "sarif")
    assert named.returncode == 1 and named.stdout == tracer("scan", tree, "--cache-dir", cache, "--format", "sarif").stdout
    for command in ("scan", "lint", "explain", "graph", "verify"):
        assert "--output-format" in tracer(command, "--help").stdout, command


def test_mistyped_commands_and_options_get_suggestions():
    for args, said in ((["scna", "x"], "tracer: error: no such command 'scna' (did you mean 'scan'?)"),
                       (["expain"], "tracer: error: no such command 'expain' (did you mean 'explain'?)"),
                       (["scan", "x", "--fromat", "json"], "tracer: error: no such option '--fromat' "
                                                           "(did you mean '--format'?)")):
        result = tracer(*args)
        assert result.returncode == 2 and result.stderr.startswith(said), (args, result.stderr)
        assert result.stderr.count("\n") == 1


def test_help_gives_each_command_one_uncut_line():
    from tracer.cli import TracerGroup

    out = tracer("--help", env={"COLUMNS": "80"}).stdout.splitlines()
    listed = out[out.index("Commands:") + 1:]
    assert [line.split()[0] for line in listed] == sorted(TracerGroup.lazy_commands)
    assert all(len(line) <= 80 and not line.rstrip().endswith("...") for line in listed), listed
    assert set(TracerGroup.summaries) == set(TracerGroup.lazy_commands)


def test_github_annotations_are_capped_at_ten_per_level_with_a_notice_of_the_rest():
    from tracer.present.github import format_github

    def many(severity: str, count: int, slug: str) -> list[dict]:
        return [{"slug": slug, "severity": severity, "entry": f"x.C{i}", "file": f"{severity}{i:02}.py", "line": 1,
                 "message": "m", "hint": "h"} for i in range(count)]
    scan = synthetic(many("warning", 15, "silent-fallback") + many("error", 12, "broken-delegation")
                     + many("info", 12, "dead-write"))
    out = format_github(scan, show_info=True).splitlines()
    levels = [line.split()[0] for line in out]
    assert levels == ["::error"] * 10 + ["::warning"] * 10 + ["::notice"] * 10
    assert out[-1].startswith("::notice title=tracer summary::")
    assert "not annotated: 2 errors, 5 warnings, 3 info (GitHub shows 10 per level)" in out[-1]
    assert "--format sarif" in out[-1] and "--format text" in out[-1]
    few = format_github(synthetic(many("warning", 3, "silent-fallback"))).splitlines()
    assert len(few) == 4 and "not annotated" not in few[-1]


def test_files_are_created_under_the_umask_and_never_through_links(tmp_path):
    def run_with(umask: int, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tracer", *args], capture_output=True, text=True,
                              preexec_fn=lambda: os.umask(umask))
    tree = str(EXAMPLES / "broken-delegation")
    shared, private = tmp_path / "shared.txt", tmp_path / "private.txt"
    assert run_with(0o022, "scan", tree, "--no-cache", "-o", str(shared)).returncode == 1
    assert run_with(0o077, "scan", tree, "--no-cache", "-o", str(private)).returncode == 1
    assert (shared.stat().st_mode & 0o777, private.stat().st_mode & 0o777) == (0o644, 0o600)
    report = tmp_path / "report"
    assert run_with(0o002, "report", tree, "--no-cache", "-o", str(report)).returncode in (0, 2)
    modes = {p.stat().st_mode & 0o777 for p in report.rglob("*") if p.is_file()}
    assert modes == {0o664}, modes
    target = tmp_path / "elsewhere.txt"
    target.write_text("mine\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    refused = run_with(0o022, "scan", tree, "--no-cache", "-o", str(link))
    assert refused.returncode == 2 and "symbolic link" in refused.stderr and target.read_text() == "mine\n"


def test_a_picture_that_cannot_be_drawn_exits_2_with_the_reason(tmp_path):
    no_dot = {"PATH": str(tmp_path / "empty-bin")}  # no Graphviz on PATH
    picture = tmp_path / "graph.svg"
    drawn = tracer("graph", str(EXAMPLES / "ok"), "--no-cache", "--format", "svg", "-o", str(picture), env=no_dot)
    assert drawn.returncode == 2, drawn.stderr
    assert drawn.stderr.startswith(f"tracer: error: {picture} not drawn: Pictures need Graphviz")
    assert drawn.stderr.count("\n") == 1 and not picture.exists() and picture.with_suffix(".dot").is_file()
    report = tracer("report", str(EXAMPLES / "ok"), "--no-cache", "-o", str(tmp_path / "r"), env=no_dot)
    assert report.returncode == 2 and (tmp_path / "r" / "index.html").is_file()
    assert report.stderr.startswith("tracer: error: the pictures were not drawn: Pictures need Graphviz")


def test_a_file_written_for_a_newer_python_is_an_input_error_naming_it(tmp_path):
    import shutil

    from tracer.index.newer_syntax import needs_newer

    for source, what in (("type Ids = list[int]", "a `type` alias statement (PEP 695) needs Python 3.12"),
                         ("def first[T](xs: list[T]) -> T:", "a generic function (PEP 695) needs Python 3.12"),
                         ("class Box[T]:", "a generic class (PEP 695) needs Python 3.12"),
                         ("except ValueError, TypeError:", "several types without parentheses (PEP 758) needs "
                                                           "Python 3.14"),
                         ('x = t"{a}"', "a template string (PEP 750) needs Python 3.14")):
        assert what in needs_newer(source, 1, (3, 11)), source
        assert needs_newer(source, 1, (3, 14)) == ""
    assert needs_newer('x = "t" +', 1, (3, 11)) == "" and needs_newer("x = (", 1, (3, 11)) == ""
    tree = tmp_path / "tree"
    shutil.copytree(EXAMPLES / "ok", tree, ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "sglang/srt/models/generic.py").write_text(
        "class Holder[T]:\n    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
        "        self.layers_to_capture = layer_ids\n\n\nEntryClass = [Holder]\n")
    result = tracer("scan", str(tree), "--no-cache", "--format", "json")
    import json

    errors = [e for e in json.loads(result.stdout)["input_errors"] if e["file"].endswith("generic.py")]
    if sys.version_info < (3, 12):
        assert len(errors) == 1 and "a generic class (PEP 695) needs Python 3.12 or newer" in errors[0]["reason"]
        assert f"tracer runs on {sys.version_info[0]}.{sys.version_info[1]}" in errors[0]["reason"]
    else:
        assert errors == []
