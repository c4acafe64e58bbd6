"""The set of modules of one scanned tree, indexed lazily and in parallel.

A module is indexed on demand as its outline (stdlib ``ast``: imports, class headers,
spans); a method or function body is summarised on its own when a stage asks for it
(``index/methods.py``, the one summariser). Input errors are recorded, never raised.
"""

from __future__ import annotations

import ast
import errno
import hashlib
import os
import stat
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from tracer.index.cache import SummaryCache, entry_key
from tracer.index.outline import module_error, outline_summary
from tracer.index.reads import Reads, mention_fact
from tracer.index.source import decode_source
from tracer.model.errors import BodyUnreadable, InputError
from tracer.model.results import InputProblem
from tracer.model.summary import Function, ModuleSummary, to_plain
from tracer.model.tree import SourceFile

# Larger files are reported, not parsed. The biggest SGLang file is ~280 KB.
MAX_FILE_BYTES = 1024 * 1024
# A method body bigger than this is summarised in a worker process: the parser holds the GIL,
# so in-process an interrupt could not end the command within a second.
IN_PROCESS_BYTES = 64 * 1024
# An outline (stdlib ast) holds the GIL too, but ~0.1 s for the biggest real model file
# (~280 KB): only bigger ones go to a worker, so an interrupt still ends within a second.
OUTLINE_IN_PROCESS_BYTES = 384 * 1024
OUTLINE_POOL_BYTES = 32 * 1024 * 1024  # outlines of more than this go to the worker pool


def _read(abspath: str) -> bytes:
    # Non-blocking open and a regular-file check: a FIFO put in place of a
    # module after discovery would otherwise block the scan forever.
    fd = os.open(abspath, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return fh.read(MAX_FILE_BYTES + 1)


def index_file(source: SourceFile, level: str, data: bytes | None = None) -> ModuleSummary:
    """Summary of one file, or a summary carrying the input error."""
    try:
        if data is None:
            data = _read(source.abspath)
        if len(data) > MAX_FILE_BYTES:
            raise InputError(f"file larger than {MAX_FILE_BYTES // (1024 * 1024)} MB; not parsed", 1)
        text = decode_source(data)
        # the one summary of a module is its outline (stdlib ast); bodies are summarised one
        # method at a time (index/methods.py), never by a second parser
        return outline_summary(text, source.module, source.path, source.is_package)
    except InputError as exc:
        return ModuleSummary(source.module, source.path, level, error=exc.reason, error_line=exc.line or 1)
    except OSError as exc:
        return ModuleSummary(source.module, source.path, level, error=f"cannot read: {exc.strerror}", error_line=1)
    except RecursionError:
        return ModuleSummary(source.module, source.path, level, error="nesting too deep to analyse", error_line=1)


def _index_job(args: tuple[SourceFile, str, bytes]) -> ModuleSummary:
    source, level, data = args
    return index_file(source, level, data)


def _index_isolated(source: SourceFile, level: str, data: bytes) -> ModuleSummary:
    """After a worker died (a native crash, the kernel's OOM killer), each file in
    its own process: the one that kills its process becomes an input error."""
    try:
        with ProcessPoolExecutor(max_workers=1) as pool:
            return pool.submit(_index_job, (source, level, data)).result()
    except BrokenProcessPool:
        return ModuleSummary(source.module, source.path, level, error_line=1,
                             error="the parser process died on this file (native crash or out of memory)")


def _function_job(args: tuple) -> Function:
    from tracer.index.methods import summarize_function

    return summarize_function(*args)


def _function_isolated(args: tuple) -> Function:
    """summarize_function in a process of its own; InputError when that process dies."""
    try:
        with ProcessPoolExecutor(max_workers=1) as pool:
            return pool.submit(_function_job, args).result()
    except BrokenProcessPool:
        raise InputError("the parser process died on this function (native crash or out of memory)", args[1]) from None


class Project:
    def __init__(self, files: list[SourceFile], cache: SummaryCache, jobs: int = 0):
        self.files = files
        self.by_module: dict[str, SourceFile] = {}
        self.duplicates: list[InputProblem] = []
        for f in files:
            if f.module in self.by_module:
                self.duplicates.append(InputProblem(
                    f.path, 1, f"duplicate module name {f.module} (also {self.by_module[f.module].path}); ignored"))
                continue
            self.by_module[f.module] = f
        self.top_packages = {m.partition(".")[0] for m in self.by_module}  # the tree's top-level names
        self.cache = cache
        self.jobs = jobs or min(os.cpu_count() or 1, 8)
        self.summaries: dict[str, ModuleSummary] = {}
        self._data: dict[str, bytes | None] = {}
        self.parsed_outline = 0
        self.parsed_functions = 0
        self._text: dict[str, str | None] = {}
        self._lines: dict[str, list[str]] = {}
        self._mentions: dict[tuple[str, str], bool] = {}
        self._functions: dict[tuple[str, str], Function | None] = {}
        self._asts: dict[tuple[str, str], tuple[ast.Module, int] | None] = {}
        self.reads = Reads()  # what each cached chain result depends on
        # The outlines live in one cache entry per set of files (the pack), not one each: a
        # cold scan of SGLang wrote ~390 files (0.3-0.4 CPU-s), a warm one read them back.
        # Entries inside are keyed by content, so a base and a head tree share them.
        # the set of files (module, path, package or not): the outline pack's and chain memo's key
        self.listing = hashlib.sha256("".join(f"{m}={s.path}:{s.is_package}\n" for m, s in
                                              sorted(self.by_module.items())).encode()).digest()
        self._pack_key = entry_key(self.listing, "", "", "outline-pack")
        self._pack: dict[str, object] | None = None  # module -> {"k": entry key, "v": its outline}
        self._pack_dirty = False
        # a body that does not parse makes its module an input error; while set, the scan is
        # interrupted to trace again without that module (see BodyUnreadable)
        self.restartable = False

    # -- raw text ----------------------------------------------------------------
    def data(self, module: str) -> bytes | None:
        self.reads.touch(module)
        return self._bytes(module)

    def _bytes(self, module: str) -> bytes | None:
        if module not in self._data:
            source = self.by_module.get(module)
            try:
                self._data[module] = _read(source.abspath) if source else None
            except OSError:
                self._data[module] = None
        return self._data[module]

    def mentions(self, module: str, word: str) -> bool:
        """Cheap text test: can this module define or use ``word`` at all? (What a
        recording learns is only the answer, not the module's bytes: a runner walk that
        asked every module whether it names the setter depends on those answers alone.)"""
        key = (module, word)
        found = self._mentions.get(key)
        if found is None:
            data = self._bytes(module)
            found = self._mentions[key] = data is None or word.encode() in data  # unreadable: do not rule out
        self.reads.touch(mention_fact(module, word, found))
        return found

    # -- summaries -----------------------------------------------------------------
    def load(self, requests: dict[str, str]) -> None:
        """Index modules {module: level} that are not yet indexed deeply enough."""
        todo = []
        for module, level in sorted(requests.items()):
            self.reads.touch(module)
            have = self.summaries.get(module)
            if have is not None:
                continue
            source = self.by_module.get(module)
            if source is None:
                continue
            data = self.data(module)
            if data is None:
                self.summaries[module] = index_file(source, level)
                continue
            key = entry_key(data, source.module, source.path, level)
            cached = self._packed(module, key)
            if cached is not None:
                self.summaries[module] = cached
                continue
            todo.append((source, level, data, key))
        if not todo:
            return
        # Outlines are skeletons (index/skeleton.py: ~2 ms a model file): in-process unless
        # there are tens of MB of them. Two workers for SGLang's 390 modules (11 MB) cost more
        # CPU in forks and pickling than they saved, and no wall time on 2 cores; a pool per
        # lazy one-module request cost a fork each time (318 pools, 3.8 s of a cold scan).
        if (self.jobs > 1 and sum(len(t[2]) for t in todo) > OUTLINE_POOL_BYTES) or any(
                len(t[2]) > OUTLINE_IN_PROCESS_BYTES for t in todo):
            # Biggest first so the pool's tail is short.
            todo.sort(key=lambda t: -len(t[2]))
            try:
                with ProcessPoolExecutor(max_workers=max(1, min(self.jobs, len(todo)))) as pool:
                    results = list(pool.map(_index_job, [(s, lv, d) for s, lv, d, _ in todo], chunksize=1))
            except BrokenProcessPool:
                results = [_index_isolated(s, lv, d) for s, lv, d, _ in todo]
        else:
            results = [index_file(s, lv, d) for s, lv, d, _ in todo]
        for (source, level, _, key), summary in zip(todo, results):
            self.summaries[source.module] = summary
            self.parsed_outline += 1
            if not summary.error:
                self._pack_put(source.module, key, summary)

    # -- the outline pack -------------------------------------------------------------
    def _packed(self, module: str, key: str) -> ModuleSummary | None:
        if self._pack is None:
            stored = self.cache.get_json(self._pack_key)
            self._pack = stored if isinstance(stored, dict) else {}
        entry = self._pack.get(module)
        if not isinstance(entry, dict) or entry.get("k") != key:
            return None  # never outlined, or outlined when the file was different
        summary = self.cache.decode(entry.get("v"))
        return summary if isinstance(summary, ModuleSummary) else None

    def _pack_put(self, module: str, key: str, summary: ModuleSummary) -> None:
        if self._pack is None:
            self._packed(module, key)  # loads the pack
        assert self._pack is not None
        self._pack[module] = {"k": key, "v": to_plain(summary)}
        self._pack_dirty = True

    def save_outlines(self) -> None:
        """Write the pack when this run outlined anything (one entry per module: its latest
        outline; a module this run did not read keeps its own)."""
        if self._pack_dirty and self.cache.directory is not None and self._pack is not None:
            self.cache.put_json(self._pack_key, self._pack)
            self._pack_dirty = False

    def module(self, name: str, level: str = "outline") -> ModuleSummary | None:
        if name not in self.by_module:
            return None
        self.load({name: level})
        return self.summaries.get(name)

    # -- one function at a time ---------------------------------------------------------
    def text(self, module: str) -> str | None:
        self.reads.touch(module)
        if module not in self._text:
            data = self.data(module)
            try:
                self._text[module] = decode_source(data) if data is not None else None
            except InputError:
                self._text[module] = None
        return self._text[module]

    def span(self, module: str, qualname: str) -> tuple[int, int] | None:
        summary = self.module(module)
        if summary is None or summary.error:
            return None
        owner, _, name = qualname.rpartition(".")
        if owner:
            cls = summary.cls(owner)
            spans = cls.method_spans if cls else ()
        else:
            spans = summary.function_spans
        found = None
        for span_name, start, end in spans:
            if span_name == name:
                found = (start, end)  # the last definition wins, as at run time
        return found

    def function_text(self, module: str, qualname: str) -> str | None:
        """Source of one method (``Class.method``) or function, by the outline's span."""
        span = self.span(module, qualname)
        if span is None:
            return None
        if module not in self._lines:
            text = self.text(module)
            self._lines[module] = text.split("\n") if text is not None else []
        lines = self._lines[module]
        return "\n".join(lines[span[0] - 1:span[1]]) if lines else None

    def function(self, module: str, qualname: str) -> Function | None:
        """Summary of one method or function (stdlib ast), parsed and cached on its own."""
        key = (module, qualname)
        self.reads.touch(module)
        if key in self._functions:
            return self._functions[key]
        result: Function | None = None
        span = self.span(module, qualname)
        snippet = self.function_text(module, qualname)
        if span is not None and snippet is not None:
            # Not cached on disk: parsing one method (~1 ms) costs about what writing
            # its entry did (a file created per method: 0.3-0.5 s of a cold 0.5.23 scan),
            # and warm scans take unchanged chains from the chain memo without them.
            source = self.by_module[module]
            owner = qualname.rpartition(".")[0]
            args = (self.text(module) or "", span[0], span[1], module, owner, source.is_package)
            try:
                if len(snippet) > IN_PROCESS_BYTES:
                    result = _function_isolated(args)
                else:
                    parsed = self.function_ast(module, qualname)
                    result = _function_job((*args, parsed)) if parsed is not None else None
                self.parsed_functions += 1
            except InputError as exc:
                self._body_error(module, qualname, exc)
                result = None
        self._functions[key] = result
        return result

    def function_ast(self, module: str, qualname: str) -> tuple[ast.Module, int] | None:
        """The stdlib ast of one method where it stands in its file (see ``parse_body``),
        parsed once a run: its summary and the value flow both read it."""
        key = (module, qualname)
        self.reads.touch(module)
        if key not in self._asts:
            found = None
            span = self.span(module, qualname)
            snippet = self.function_text(module, qualname)
            if span is not None and snippet is not None:
                from tracer.index.methods import parse_body

                try:
                    found = parse_body(snippet.split("\n"), span[0])
                except InputError as exc:
                    self._body_error(module, qualname, exc)
                    found = None
            self._asts[key] = found
        return self._asts[key]

    def _body_error(self, module: str, qualname: str, exc: InputError) -> None:
        """A body the outline's skeleton left out does not parse: the module is an input error,
        as if its outline had failed (the error is the whole module's parse's, cached as its
        summary). With ``restartable`` the scan is told to trace again without it."""
        source = self.by_module[module]
        text = self.text(module) or ""
        error = module_error(text) or exc
        summary = ModuleSummary(module, source.path, "outline", error=error.reason, error_line=error.line or 1)
        self.summaries[module] = summary
        data = self.data(module)
        if data is not None:
            self._pack_put(module, entry_key(data, source.module, source.path, "outline"), summary)
        for memo in (self._functions, self._asts):
            for key in [k for k in memo if k[0] == module]:
                del memo[key]
        if self.restartable:
            raise BodyUnreadable(module) from None

    def input_problems(self) -> list[InputProblem]:
        problems = list(self.duplicates)
        for summary in self.summaries.values():
            if summary.error:
                problems.append(InputProblem(summary.path, summary.error_line, summary.error))
        return sorted(problems, key=lambda p: (p.path, p.line))
