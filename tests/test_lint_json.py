"""The lint documents present/lint_json.py owns: the baseline file a team commits (its exact
shape is an interface: diffs of it are reviewed), the records the lint cache keeps, and what
a broken file tells the user."""

from __future__ import annotations

import json

import pytest

from tracer.lint.baseline import baseline_identities
from tracer.lint.fingerprint import Identity
from tracer.model.errors import UsageError
from tracer.present.lint_json import BaselineEntry, baseline_bytes, record_bytes, record_from_bytes

ENTRY = BaselineEntry("ids-dropped", "sglang-eagle3", "pkg.models.m.Wrapper", "pkg/models/m.py:Wrapper.set",
                      "0123abcd", "pkg/models/m.py", 53, "drops the ids")


def test_the_baseline_file_lists_each_entry_in_reading_order():
    data = baseline_bytes([ENTRY])
    assert data.endswith(b"\n") and data.startswith(b'{\n "tool": "tracer",\n "version": 2,\n')
    doc = json.loads(data)
    assert list(doc) == ["tool", "version", "comment", "findings"]
    assert doc["findings"] == [{"slug": "ids-dropped", "protocol": "sglang-eagle3", "entry": "pkg.models.m.Wrapper",
                                "anchor": "pkg/models/m.py:Wrapper.set", "fingerprint": "0123abcd",
                                "file": "pkg/models/m.py", "line": 53, "message": "drops the ids"}]
    assert list(doc["findings"][0]) == list(BaselineEntry._fields)


def test_lint_reads_back_what_baseline_wrote_and_a_version_1_file():
    assert baseline_identities(baseline_bytes([ENTRY])) == [
        Identity("ids-dropped", "sglang-eagle3", "pkg.models.m.Wrapper", "pkg/models/m.py:Wrapper.set", "0123abcd")]
    old = json.dumps({"tool": "tracer", "version": 1,
                      "findings": [{"slug": "dead-write", "entry": None, "fingerprint": "ff"}]}).encode()
    assert baseline_identities(old) == [Identity("dead-write", "", "", "", "ff")]  # no anchor: fingerprint alone
    assert baseline_identities(b"") == []


@pytest.mark.parametrize("data", [b"not json", b"[]", b'{"findings": [{"slug": "x"}]}', b'{"tool": "tracer"}'])
def test_a_broken_baseline_is_a_usage_error_that_says_so(data):
    with pytest.raises(UsageError, match="baseline file is not a tracer baseline"):
        baseline_identities(data)


def test_cache_records_round_trip_and_anything_else_is_no_record():
    record = {"version": 3, "scan": {"findings": [{"slug": "ids-dropped", "line": 53}]}, "commit": "abc"}
    data = record_bytes(record)
    assert b" " not in data  # compact: a base record of a large tree is megabytes
    assert record_from_bytes(data) == record
    for other in (None, b"", b"[1, 2]", b"{truncated", b"[" * 100_000):
        assert record_from_bytes(other) is None
