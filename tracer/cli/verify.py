"""`tracer verify`: the runtime harness (torch and the framework are imported only in tracer/verify)."""

from __future__ import annotations

import sys

import click

from tracer.model.errors import UsageError
from tracer.verify.families import FAMILIES, load_json_config, read_draft_ids
from tracer.verify.runs import (
    DEFAULT_TINY_LAYERS,
    read_draft_raw,
    read_json_file,
    render_table,
    report_json,
    run_verify,
    verify_all,
)


@click.command("verify")
@click.option("--entry", "entries", multiple=True,
              help="SGLang entry class (repeatable), e.g. Qwen2ForCausalLM. Hand-written families "
                   "(a transformers reference checks every layer): "
                   + ", ".join(e for f in FAMILIES.values() for e in f.entries)
                   + "; any other entry class is derived from the release. With --all: run only these.")
@click.option("--render", "render_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="print a saved `--all` JSON report (with --format text or markdown) and exit; with "
                   "--scan-json (and --framework), its static side computed again here (-o: saved)")
@click.option("--all", "run_all", is_flag=True,
              help="every entry class the static scan calls ok, each in its own process")
@click.option("--protocol", "protocols", multiple=True,
              type=click.Choice(["sglang-eagle3", "sglang-dflash", "vllm-eagle3"]),
              help="with --all: the protocols to run (default: both, where the release has them)")
@click.option("--include-broken", is_flag=True, help="with --all: the entry classes the scan calls broken too")
@click.option("-j", "--jobs", type=int, default=2, show_default=True, help="with --all: worker processes at once")
@click.option("--timeout", type=float, default=300.0, show_default=True,
              help="with --all: seconds one worker may run")
@click.option("--memory", type=int, default=6144, show_default=True,
              help="with --all: MiB of resident memory one worker may use")
@click.option("--scan-json", type=click.Path(exists=True, dir_okay=False), default=None,
              help="with --all: a saved `tracer scan --format json` of the same release (else scanned now)")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="with --all: the scan's summary cache")
@click.option("--work-dir", type=click.Path(file_okay=False), default=None,
              help="with --all: keep each worker's log and JSON lines here")
@click.option("--draft-config", "draft_configs", multiple=True, type=click.Path(exists=True),
              help="EAGLE-3 draft config.json or its folder (repeatable)")
@click.option("--ids", "id_lists", multiple=True,
              help="instead of a draft config: ids as the runner would pass them, e.g. 1,2,3 or none")
@click.option("--target-config", type=click.Path(exists=True), default=None,
              help="real target config.json (or folder): architecture kept, sizes shrunk")
@click.option("--layers", type=int, default=None,
              help=f"decoder layers (default: the target's, or {DEFAULT_TINY_LAYERS} for a tiny config)")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True)
@click.option("--framework", type=click.Path(exists=True, file_okay=False), default=None,
              help="folder holding the sglang (or, with --all, vllm) package of a release (default: the installed sglang)")
@click.option("--paths", default="extend,decode,cuda_graph", show_default=True,
              help="paths to run; cuda_graph only on --device cuda")
@click.option("--no-static", is_flag=True, help="skip tracer's static prediction")
@click.option("--format", "--output-format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True,
              help="markdown: with --all, the rows as a Markdown table")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="also write the JSON report here")
def verify_command(entries, render_file, run_all, protocols, include_broken, jobs, timeout, memory, scan_json, cache_dir,
                   work_dir, draft_configs, id_lists, target_config, layers, device, framework, paths,
                   no_static, fmt, output):
    """Run SGLang's own model code and report which layers EAGLE-3 really captures.

    Builds each entry class from a tiny config (or a real config shrunk in
    sizes only), calls set_eagle3_layers_to_capture the way the release's
    runner does, runs prefill (EXTEND), a decode step and, on CUDA, a replayed
    CUDA graph of decode, and matches every aux hidden state to the decoder
    layer whose output it is. Exit 0 when every row passes, 1 otherwise,
    2 on a usage error.
    """
    from tracer.verify.adapters import FrameworkNotFound

    if render_file:
        from tracer.verify import allrun

        report = read_json_file(render_file)
        if scan_json:  # the static side again, from this scan (and --framework: the tree it names)
            report = allrun.restatic(report, read_json_file(scan_json), framework)
            if output:
                with open(output, "w") as fh:
                    fh.write(report_json(report) + "\n")
        click.echo(allrun.render_markdown(report) if fmt == "markdown" else allrun.render(report))
        sys.exit(0)
    if run_all:
        click.echo(verify_all(entries, protocols, include_broken, jobs, timeout, memory, scan_json, cache_dir,
                              work_dir, draft_configs, layers, device, framework, paths, fmt, output))
        sys.exit(0)
    if not entries:
        raise UsageError("give --entry CLASS (repeatable) or --all")
    drafts = [read_draft_ids(path) for path in draft_configs] + [read_draft_ids(None, ids) for ids in id_lists]
    raws = [load_json_config(path) for path in draft_configs] + [
        read_draft_raw(d, None) for d in drafts[len(draft_configs):]]
    if not drafts:
        raise UsageError("give --draft-config DIR or --ids LIST (at least one)")
    try:
        report = run_verify(list(entries), drafts, raws, target_config, layers, device, framework,
                            [p.strip() for p in paths.split(",") if p.strip()], not no_static)
    except FrameworkNotFound as exc:
        raise UsageError(str(exc)) from None
    except ImportError as exc:
        raise UsageError(f"the runtime harness needs torch and transformers: {exc}") from None
    report["command"] = "tracer verify " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["verify"] else sys.argv[1:])
    text = report_json(report)
    if output:
        with open(output, "w") as fh:
            fh.write(text + "\n")
    click.echo(text if fmt == "json" else render_table(report))
    sys.exit(0 if all(r["judgement"]["verdict"] == "PASS" for r in report["rows"]) else 1)

