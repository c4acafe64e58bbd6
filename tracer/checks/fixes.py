"""The fixes of the catalogue: for a slug with one obvious repair, the codemod that makes it.

A fix names its codemod (``tracer/fix/codemods.py`` holds the functions, so the catalogue
stays plain data), the message variants it repairs, whether it is safe (applied by
``--fix``) or unsafe (only with ``--unsafe-fixes``: it changes what the code does beyond
the finding), a before/after shown by ``tracer rules SLUG``, and which of the check's
must-fire examples it repairs (``tests/test_fix.py`` applies it to each of them: the fixed
example must be quiet and its chain ``ok``; on the others the fix must decline).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Fix:
    slug: str
    codemod: str  # name of the function in tracer.fix.codemods
    safe: bool
    title: str  # what the edit does, one line, lower case
    variants: tuple[str, ...]  # message variants of the check it repairs
    before: str
    after: str
    repairs: tuple[int, ...]  # indices of the check's must-fire examples it repairs


FIXES: Mapping[str, Fix] = MappingProxyType({fix.slug: fix for fix in (
    Fix("dead-write", "rename_write", True, "write the attribute the decoder loop reads (the near-miss spelling)",
        ("near-miss",),
        "self.model.layers_to_captur = [val + 1 for val in layer_ids]",
        "self.model.layers_to_capture = [val + 1 for val in layer_ids]", (1,)),
    Fix("broken-delegation", "rename_call", True,
        "call the method the receiver's class defines (the did-you-mean name)", ("",),
        "self.language_model.set_eagle3_layer_to_capture(layer_ids)",
        "self.language_model.set_eagle3_layers_to_capture(layer_ids)", (1,)),
    Fix("silent-fallback", "log_fallback", True,
        "log a warning naming the fallback layers, right after they are chosen (in a runner's `except`: "
        "first in the handler)", ("", "runner-branch", "runner-except"),
        "if layer_ids is None:\n    self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]",
        "if layer_ids is None:\n    self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]\n"
        "    logger.warning(\"no layer ids given; using the fallback layers %s\", self.model.layers_to_capture)",
        (0,)),
    Fix("offset-mismatch", "shift_ids", False,
        "store val + 1 where the loop tests an id before the layer runs (and drop the shift where it tests "
        "after); unsafe: it changes which layers are captured", ("loop", "scan"),
        "self.model.layers_to_capture = list(layer_ids)",
        "self.model.layers_to_capture = [val + 1 for val in layer_ids]", (0, 1, 2)),
    Fix("call-order", "move_before_capture", False,
        "move the setter call up to just after the statements it needs, before the capture (one method only); "
        "unsafe: it reorders start-up", ("",),
        "ids = self.server_args.ids\nself.init_device_graphs()\nself.model.set_layers_to_capture(ids)",
        "ids = self.server_args.ids\nself.model.set_layers_to_capture(ids)\nself.init_device_graphs()", (0,)),
)})


def fix_text(fix: Fix | None) -> str:
    """The section `tracer rules SLUG` prints about the slug's fix."""
    if fix is None:
        return "## Fix\nNone: the repair needs a person (`--fix` reports the finding as not fixable automatically)."
    kind = "safe: --fix applies it" if fix.safe else "unsafe: applied only with --unsafe-fixes"
    return "\n".join([f"## Fix ({kind})", fix.title[0].upper() + fix.title[1:] + ".", "", "Before:", "```python",
                      fix.before, "```", "After:", "```python", fix.after, "```"])


__all__ = ["FIXES", "Fix", "fix_text"]
