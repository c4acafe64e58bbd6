"""Checks of `tracer lint` against a base revision: what a change does to the support matrix,
and suppressions the change adds for its own new findings. Their examples are pairs of trees
(``base_files`` at the base commit, ``files`` the change); the harness runs `lint --base`."""

from __future__ import annotations

from tracer.checks import Check, example
from tracer.checks.trees import SETTER, mark, model, model_file

_RENAMED = SETTER.replace("def set_eagle3_layers_to_capture(", "def set_eagle3_layers(")
_COMMENTED = SETTER.replace("        self.capture_aux_hidden_states = True\n",
                            "        # the flag the logits processor reads\n        self.capture_aux_hidden_states = True\n")
_EXPLICIT = "self.model.layers_to_capture = [val + 1 for val in layer_ids]"
_MISSPELT = "self.model.layer_to_capture = [val + 1 for val in layer_ids]"
_IGNORED = "  # tracer: ignore[dead-write]"

SUPPORT_REGRESSION = Check(
    slug="support-regression", severity="error", stage="lint",
    summary="an entry class whose chain worked at the base no longer does",
    what="Compares each re-traced entry class's verdict with the base revision's: an entry that was `ok` and is "
         "now `missing`, `broken` or `unknown` is reported once per entry class, at the change's first line in the "
         "hop that changed (the setter, a delegate, the state write or a reader), naming the hop and what the chain "
         "says now.",
    why="A renamed setter or a changed base class silently drops the protocol from every model that reaches it: the "
        "models' own findings are info (`missing-setter`) or land in another file, and a pull request passes the "
        "gate while the support matrix loses rows.",
    example="-    def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
            "+    def set_eagle3_layers(self, layer_ids=None):   # FooForCausalLM: ok -> missing",
    fix="Keep the chain working (restore the name, or delegate to the new one), or drop the protocol on purpose "
        "and say so (e.g. `--ignore support-regression` once, in the base's configuration).",
    messages={"": "{entry_name} loses {protocol} support ({before} -> {after}): the change edits {what}; "
                  "now: {why}"},
    hints={"": "Keep {setter} working for {entry_name} (restore it, or delegate to what replaced it), or "
               "remove the support on purpose."},
    fires=(example(model_file("foo", mark(model(setter=_RENAMED), "def set_eagle3_layers(", "support-regression")),
                   base_files=(model_file("foo", model()),), note="the setter renamed"),
           example(model_file("foo", mark(model(setter=SETTER.replace(
               "self.model.layers_to_capture = [val + 1 for val in layer_ids]",
               "self.model.layer_to_capture = [val + 1 for val in layer_ids]")), "self.model.layer_to_capture = [val",
               "support-regression")), base_files=(model_file("foo", model()),), note="the state write misspelled")),
    quiet=(example(model_file("foo", model(setter=_COMMENTED)), base_files=(model_file("foo", model()),),
                   note="an edit that keeps the chain"),
           example(model_file("foo", model(setter=_RENAMED)), base_files=(model_file("foo", model(setter=_RENAMED)),),
                   note="unsupported at the base already")),
)

SUPPORT_GAINED = Check(
    slug="support-gained", severity="info", stage="lint",
    summary="an entry class gains support for the protocol",
    what="Reports a re-traced entry class whose verdict is `ok` now and was `missing`, `broken` or `unknown` at "
         "the base (or that the change adds with a working chain).",
    why="Not a problem: the support matrix gains a row, worth a line in the release notes.",
    example="+    def set_eagle3_layers_to_capture(self, layer_ids=None):   # FooForCausalLM: missing -> ok",
    fix="Nothing to fix.",
    messages={"": "{entry_name} gains {protocol} support ({before} -> ok): the change edits {what}",
              "new": "{entry_name} is a new entry class with working {protocol} support"},
    hints={"": "None needed."},
    fires=(example(model_file("foo", mark(model(), "def set_eagle3_layers_to_capture(", "support-gained")),
                   base_files=(model_file("foo", model(setter=_RENAMED)),)),),
    quiet=(example(model_file("foo", model(setter=_COMMENTED)), base_files=(model_file("foo", model()),)),),
)

NEW_SUPPRESSION = Check(
    slug="new-suppression", severity="error", stage="lint",
    summary="the change adds a `# tracer: ignore` for one of its own new findings",
    what="Under `tracer lint --base`, suppressions come from the base: a `# tracer: ignore` comment on a line the "
         "change adds or edits, silencing a finding that is new in the change, is reported at the gate's severity "
         "(`fail-on`) when the finding it hides would fail the gate (as info otherwise), naming that finding.",
    why="A pull request must not steer its own verdict: the configuration and the baseline already come from the "
        "base commit, and an inline comment written by the same change would pass any new error.",
    example="+        self.model.layer_to_capture = [val + 1 for val in layer_ids]  # tracer: ignore[dead-write]",
    fix="Fix the finding; or accept it where the base decides (a baseline entry or `ignore` merged first). Teams "
        "that trust authors' suppressions put `ignore = [\"new-suppression\"]` in the base's `[tool.tracer]`.",
    messages={"": "{what} is added by this change and hides a new {rule} finding ({message}); under --base, "
                  "suppressions come from the base"},
    hints={"": "Fix the {rule} finding, or accept it in the base (a baseline entry) before this change."},
    fires=(example(model_file("foo", model(setter=SETTER.replace(_EXPLICIT, _MISSPELT + _IGNORED
                                                                  + "  # expect: new-suppression"))),
                   base_files=(model_file("foo", model()),)),),
    quiet=(
        # the base had the finding and its suppression; the change edits another line
        example(model_file("foo", model(setter=_COMMENTED.replace(_EXPLICIT, _MISSPELT + _IGNORED))),
                base_files=(model_file("foo", model(setter=SETTER.replace(_EXPLICIT, _MISSPELT + _IGNORED))),),
                note="a suppression the base already had"),
        # the finding was there at the base: the change may suppress what it did not introduce
        example(model_file("foo", model(setter=SETTER.replace(_EXPLICIT, _MISSPELT + _IGNORED))),
                base_files=(model_file("foo", model(setter=SETTER.replace(_EXPLICIT, _MISSPELT))),),
                note="a suppression of an old finding"),
    ),
)

CHECKS = (SUPPORT_REGRESSION, SUPPORT_GAINED, NEW_SUPPRESSION)
