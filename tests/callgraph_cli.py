"""What the call-graph tests share: ``tracer graph FOLDER --all`` as a user runs it (JSON, no cache)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tracer.cli import main

DATA = Path(__file__).resolve().parent / "data" / "callgraph"


def graph(folder: Path | str) -> dict:
    result = CliRunner().invoke(main, ["graph", str(folder), "--all", "--format", "json", "--no-cache"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)
