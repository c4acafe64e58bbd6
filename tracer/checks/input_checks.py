"""Checks on the input itself: files that cannot be read, suppressions that match nothing."""

from __future__ import annotations

from tracer.checks import Check, example
from tracer.checks.trees import model, model_file

INPUT_ERROR = Check(
    slug="input-error", severity="error", stage="index",
    summary="a file could not be read or parsed",
    what="Reports files that are not valid Python (syntax errors, NUL bytes, bad encodings), unreadable, too "
         "large, or links that loop or leave the root.",
    why="Models defined in such files get no verdict from them; every other file's results stay complete.",
    example="def broken(:\n    pass",
    fix="Fix the file, or exclude it.",
    messages={"": "{reason}"},
    hints={"": "Fix the file or exclude it; other results stand."},
    fires=(example(model_file("foo", model()), ("sglang/srt/models/bad.py", "def broken(:  # expect: input-error\n    pass\n")),),
    quiet=(example(model_file("foo", model())),),
)

UNUSED_SUPPRESSION = Check(
    slug="unused-suppression", severity="info", stage="suppressions",
    summary="a `# tracer: ignore` comment suppresses no finding",
    what="Reports inline suppressions (`# tracer: ignore[slug]` or `# tracer: ignore`) on lines where the scan "
         "reports no finding of that slug.",
    why="A stale suppression hides the next real finding on that line, and tells readers a problem exists where "
        "there is none (ruff's RUF100, mypy's warn_unused_ignores).",
    example="self.model.layers_to_capture = ids  # tracer: ignore[dead-write]   (the write is read now)",
    fix="Remove the comment, or correct the slug.",
    messages={"": "{what} suppresses no finding on this line{unknown}"},
    hints={"": "Remove the comment, or correct the slug."},
    fires=(example(model_file("foo", model().replace(
        "self.model.layers_to_capture = [val + 1 for val in layer_ids]",
        "self.model.layers_to_capture = [val + 1 for val in layer_ids]  # tracer: ignore[dead-write]  "
        "# expect: unused-suppression"))),),
    quiet=(example(model_file("foo", model())),),
)

CHECKS = (INPUT_ERROR, UNUSED_SUPPRESSION)
