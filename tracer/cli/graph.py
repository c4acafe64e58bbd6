"""`tracer graph`: the protocol graph, one model's chain, or the whole call graph (--all)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tracer.cli.options import PackOptions, pack_options, write_output
from tracer.cli.output import progress
from tracer.model.errors import UsageError

if TYPE_CHECKING:
    from tracer.callgraph.registry import RegistryRule
    from tracer.model.protocol import Protocol


@click.command("graph")
@click.argument("path", type=click.Path())
@pack_options
@click.option("--all", "whole", is_flag=True, help="The whole call graph of any Python tree (every function, method and module body).")
@click.option("--entry", help="One entry class (qualname or class name): its chain picture, for the protocol "
                              "--protocol names (default: EAGLE-3's, else the first traced).")
@click.option("--from", "from_names", multiple=True, metavar="NAME",
              help="With --all: only what NAME calls within --depth calls (a function's full or trailing dotted "
                   "name, e.g. ModelRunner.initialize, or a class: all its methods); repeatable.")
@click.option("--depth", type=click.IntRange(0, 50), default=3, show_default=True,
              help="With --from: how many calls deep.")
@click.option("--callers", is_flag=True, help="With --from: also what calls NAME, within --depth calls.")
@click.option("--format", "--output-format", "fmt", type=click.Choice(["json", "dot", "svg", "png", "graphml"]), default="json",
              show_default=True)
@click.option("-o", "--output", "out_file", type=click.Path(dir_okay=False), help="Output file (required for svg/png).")
def graph_command(packs: PackOptions, path: str, whole: bool, entry: str | None, from_names: tuple[str, ...],
                  depth: int, callers: bool, fmt: str, out_file: str | None) -> None:
    """Export the protocol graph (or with --all the whole call graph) as JSON, DOT, GraphML or a picture."""
    # options first, work after: a combination that cannot be served is refused at once
    if whole and fmt in ("svg", "png") and not from_names:
        raise UsageError("--all draws a picture only of a neighbourhood: give --from NAME [--depth N] "
                         "(the whole call graph is not a picture anyone reads; --format json|dot|graphml gives it all)")
    if from_names and not whole:
        raise UsageError("--from goes with --all")
    if fmt == "graphml" and not whole:
        raise UsageError("--format graphml goes with --all")
    if whole and entry:
        raise UsageError("--all and --entry do not go together")
    if (entry or fmt in ("svg", "png")) and not out_file:
        raise UsageError("--format svg/png and --entry need -o FILE")
    if whole:
        _whole(packs, path, from_names, depth, callers, fmt, out_file)
        return
    from tracer.analysis.result_cache import scan_memoised  # not on the --all path: ~0.2 s of imports

    with progress(f"tracer: scanning {Path(path).name or path}"):
        result = scan_memoised(path, packs.packs(), packs.cache_dir, packs.use_cache, packs.jobs)
    from tracer.present import graphs
    if entry or fmt in ("svg", "png"):
        from tracer.present import render

        assert out_file is not None
        if entry:
            wanted = [m for m in result.models if entry in (m.entry, m.entry.rsplit(".", 1)[-1])
                      and (not packs.protocols or m.protocol in packs.protocols)]
            if not wanted:
                raise UsageError(f"no entry class {entry!r} in the scan")
            from tracer.cli.scan import protocol_order

            order = {name: i for i, name in enumerate(protocol_order(packs.packs()))}
            wanted.sort(key=lambda m: (not m.chain, order.get(m.protocol, len(order)), m.protocol))
            model = wanted[0]
            others = sorted({m.protocol for m in wanted if m.verdict != "missing"} - {model.protocol})
            if others:
                click.echo(f"tracer: drawing {model.protocol}'s chain of {model.entry.rsplit('.', 1)[-1]} "
                           f"(also traced for {', '.join(others)}: --protocol NAME draws that one)", err=True)
            own = graphs.findings_of(result).get((model.entry, model.protocol), [])
            dot = render.chain_dot(model, own, protocol_label=True)
        else:
            dot = render.protocol_graph_dot(graphs.protocol_graph(result))
        picture = render.render(dot, fmt if fmt != "json" else "dot", Path(out_file))
        said(picture, fmt, out_file)
        return
    from tracer.present.scan_json import stats_to_json

    _emit(graphs.protocol_graph(result), stats_to_json(result.stats), fmt, out_file)


def _whole(packs: PackOptions, path: str, from_names: tuple[str, ...], depth: int, callers: bool, fmt: str,
           out_file: str | None) -> None:
    from tracer.index.cache import summary_cache

    if not from_names and fmt in ("json", "dot", "graphml"):  # written without networkx, kept in the cache
        from tracer.present.graph_text import whole_call_document

        protocols = packs.packs()  # read once, not once per option drawn from them
        with progress(f"tracer: building the call graph of {Path(path).name or path}"):
            text, stats, n_nodes, n_edges = whole_call_document(
                path, summary_cache(packs.cache_dir, packs.use_cache), fmt, packs.jobs,
                entry_seeds=entry_seeds(protocols), module_calls=module_calls(protocols),
                seed_modules=seed_modules(protocols), registries=registries(protocols, path))
        write_output(text, out_file)
        click.echo(f"{n_nodes} nodes, {n_edges} edges; {stats['calls_unbound']} calls not bound "
                   f"({stats['files_total']} files, {stats['seconds']} s)", err=True)
        return
    from tracer.callgraph.build import whole_call_graph

    with progress(f"tracer: building the call graph of {Path(path).name or path}"):
        if from_names:  # the neighbourhood only: the files defining the start and what it reads
            from tracer.callgraph.focus import neighbourhood_call_graph

            g, stats = neighbourhood_call_graph(path, summary_cache(packs.cache_dir, packs.use_cache), from_names,
                                                depth, callers, packs.jobs, entry_seeds(packs),
                                                module_calls=module_calls(packs), seed_modules=seed_modules(packs),
                                                registries=registries(packs, path))
        else:
            g, stats = whole_call_graph(path, summary_cache(packs.cache_dir, packs.use_cache), packs.jobs,
                                        entry_seeds=entry_seeds(packs), module_calls=module_calls(packs),
                                        seed_modules=seed_modules(packs), registries=registries(packs, path))
    from tracer.present import callgraph_view  # networkx (~19 MB) only after the fixpoint, not under its peak

    solved = f"{stats['files_solved']} of {stats['files_total']}" if "files_solved" in stats else stats["files_total"]
    summary = (f"{len(g)} nodes, {g.number_of_edges()} edges; {stats['calls_unbound']} calls not bound "
               f"({solved} files, {stats['seconds']} s)")
    if from_names:
        starts = [n for name in from_names for n in callgraph_view.start_nodes(g, name)]
        unknown = [name for name in from_names if not callgraph_view.start_nodes(g, name)]
        if unknown:
            raise UsageError(f"--from {unknown[0]}: no function of that name in the call graph")
        g = callgraph_view.neighbourhood(g, starts, depth, callers)
        stats = {**stats, "from": sorted(set(starts)), "depth": depth, "callers": callers}
        summary = f"{len(g)} nodes, {g.number_of_edges()} edges within {depth} calls of {len(set(starts))} " \
                  f"start nodes; the graph solved for it: " + summary
    if fmt in ("svg", "png"):
        from tracer.present import render

        assert out_file is not None
        picture = render.render(callgraph_view.call_graph_dot(g), fmt, Path(out_file))
        click.echo(summary, err=True)
        said(picture, fmt, out_file)
        return
    elif fmt == "graphml":
        write_output(callgraph_view.graph_to_graphml(g), out_file)
    else:
        _emit(g, stats, fmt, out_file)
    click.echo(summary, err=True)


def said(picture: dict, fmt: str, out_file: str) -> None:  # type: ignore[type-arg]
    """`wrote FILE`; a picture asked for and not drawn (no Graphviz, dot failed) is an error:
    its one-line reason and exit status 2, the DOT file kept."""
    if fmt in ("svg", "png") and picture["picture"] is None:
        click.echo(f"tracer: error: {out_file} not drawn: {' '.join(picture['message'].split())} "
                   f"(wrote {picture['dot']})", err=True)
        sys.exit(2)
    click.echo(f"wrote {picture['picture'] or picture['dot']}", err=True)
    if picture["message"]:
        click.echo(picture["message"], err=True)


def entry_seeds(packs: PackOptions | list[Protocol]) -> dict[str, str]:
    """Protocol setter -> the module variable naming entry classes, for the packs that find
    entry classes that way: the runner's receiver of a setter is an entry class."""
    return {p.setter: p.entry_variable for p in _packs(packs)
            if p.entry_kind == "module-variable" and p.entry_variable and p.setter}


def seed_modules(packs: PackOptions | list[Protocol]) -> tuple[str, ...]:
    """Where a setter's receiver may be taken to be an entry class: the runner's modules of the
    packs that seed (a model's own receiver, e.g. a class from another package's registry, never is)."""
    return tuple(sorted({m for p in _packs(packs) if p.entry_kind == "module-variable" and p.entry_variable
                         and p.setter for m in (p.runner_modules or ())}))


def registries(packs: PackOptions | list[Protocol], root: str | Path) -> tuple[RegistryRule, ...]:
    """The classes the packs' registry dicts name: a runner's receiver and a factory's result."""
    from tracer.callgraph.registry import registry_rules

    return registry_rules(root, _packs(packs))


def _packs(packs: PackOptions | list[Protocol]) -> list[Protocol]:
    return packs if isinstance(packs, list) else packs.packs()


def module_calls(packs: PackOptions | list[Protocol]) -> tuple[str, ...]:
    """The methods the packs say a call of a model instance runs (``[flow] module_call``)."""
    return tuple(sorted({p.module_call for p in _packs(packs) if p.module_call}))


def _emit(g, stats, fmt: str, out_file: str | None) -> None:  # type: ignore[no-untyped-def]
    from tracer.present import graphs

    if fmt == "dot":
        text = graphs.graph_to_dot(g)
    else:
        text = graphs.graph_json_text(g, stats)
    write_output(text, out_file)
