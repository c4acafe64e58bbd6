"""What a user reads: the scan's text in a linter's shape, rule selection, colour and
progress on a terminal, the GitHub annotations (issue 17's proof)."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
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
    assert len(lines) < 120, len(lines)
    assert lines[0].startswith("sglang/srt/models/qwen3_vl.py:1688:9: broken-delegation [error]"), lines[0]
    summary = lines[lines.index(next(line for line in lines if line.startswith("Scanned "))):]
    assert summary[0].startswith("Scanned sglang 0.5.23 ")
    eagle3 = next(line for line in summary if line.strip().startswith("sglang-eagle3:"))
    assert "target models (" in eagle3 and "draft heads (" in eagle3 and "10 broken" in eagle3
    # 25: qwen3_5_text.py's one fallback is one finding (156), not also its num_layers line (155)
    assert summary[-1].startswith("Found 1 error, 25 warnings.")
    assert not re.search(r"\b1 errors\b|\b(?!1 )\d+ warning\b|\b1 releases\b", result.stdout)
    # EAGLE-3 first among the verdicts that need attention; ok chains only with -v
    attention = [line for line in lines if line.endswith(":") and line.startswith("sglang-")]
    assert attention[0] == "sglang-eagle3:"
    assert "\nok      " not in result.stdout
    quiet = tracer("scan", tree, "--cache-dir", cache, "-q").stdout.splitlines()
    assert quiet[0] == lines[0] and not any(line.startswith("  unknown") for line in quiet)


@pytest.mark.real
def test_github_annotations_of_0_5_23(sglang_release, cache):
    out = tracer("scan", str(sglang_release("0.5.23")), "--cache-dir", cache, "--format", "github").stdout
    annotations = [line for line in out.splitlines() if line.startswith(("::error", "::warning", "::notice file"))]
    assert len(annotations) < 50, len(annotations)
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
