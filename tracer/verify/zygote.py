"""A fork server for ``tracer verify --all`` on the CPU: ``python -m tracer.verify.zygote``.

Every worker of ``--all`` used to import torch, transformers and the framework
from scratch: about 7 of a Qwen3 worker's 8.6 CPU seconds, repeated per entry
class. The zygote imports them once (after the same environment and stubs a
worker sets up) and forks one child per entry class. The child keeps
everything a worker had: its own session (killed as a group), the address-
space limit, its log as stdout and stderr, the environment the worker would
have seen (so its distributed port is its own), and a crash, hang or memory
blow-up costs only its rows. The parent (``allrun``) watches the child's pid
as before; the zygote reports each child's exit status on its stdout.

Only on the CPU: CUDA cannot be used in a child forked after the parent
touched it. Where the preload leaves threads running (forking then is not
safe) the zygote says so and ``allrun`` starts plain worker processes.

Protocol (one JSON object a line): zygote -> parent ``{"ready": bool,
"preloaded": [...], "why": ...}``, then per job ``{"job": K, "pid": P}`` and
``{"job": K, "status": S}`` (S as ``subprocess`` returncode: negative for a
signal); parent -> zygote ``{"job": K, "argv": [...], "log": PATH, "cwd":
PATH, "limit": BYTES|null}``.
"""

from __future__ import annotations

import importlib
import json
import os
import selectors
import subprocess
import sys
import threading
import time
from typing import Any

# what a worker imports before its first model is built (names that a
# release lacks are skipped; the child imports what it needs as before)
PRELOAD = ("torch", "transformers", "sglang.srt.server_args", "sglang.srt.distributed",
           "sglang.srt.model_executor.forward_batch_info", "sglang.srt.layers.logits_processor",
           "sglang.srt.layers.radix_attention", "sglang.srt.layers.attention.torch_native_backend",
           "sglang.srt.layers.rotary_embedding.base")


# -- the server (runs in its own process) -------------------------------------------------------


def _child(request: dict[str, Any], env: dict[str, str], listen: int) -> None:  # pragma: no cover
    """In the forked child: become the worker of ``request`` and never return."""
    rc = 1
    try:
        os.setsid()
        os.close(listen)
        limit = request.get("limit")
        if limit:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.environ.clear()
        os.environ.update(env)
        os.chdir(request["cwd"])
        from . import worker

        sys.argv = ["tracer.verify.worker", *request["argv"]]
        rc = worker.main(request["argv"])
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        rc = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(rc or 0)


def serve(framework: str, device: str) -> int:  # pragma: no cover (a process of its own)
    env = dict(os.environ)  # what each worker sees, before the preload's setdefaults
    out = sys.stdout
    preloaded: list[str] = []

    def say(item: dict[str, Any]) -> None:
        out.write(json.dumps(item) + "\n")
        out.flush()

    try:
        from . import adapters

        adapters.adapter_for(adapters.locate(framework), device).prepare_process()
        for name in PRELOAD:
            try:
                importlib.import_module(name)
                preloaded.append(name)
            except Exception:
                pass
    except Exception as exc:
        say({"ready": False, "why": f"preload failed: {type(exc).__name__}: {str(exc)[:200]}"})
        return 0
    if threading.active_count() > 1:
        say({"ready": False, "why": f"{threading.active_count()} threads after the preload"})
        return 0
    say({"ready": True, "preloaded": preloaded})
    children: dict[int, int] = {}
    listen = sys.stdin.fileno()
    selector = selectors.DefaultSelector()
    selector.register(listen, selectors.EVENT_READ)
    pending = b""
    open_input = True
    while open_input or children:
        if not open_input:
            time.sleep(0.05)
        elif selector.select(timeout=0.05):
            chunk = os.read(listen, 65536)
            if not chunk:
                open_input = False
                selector.unregister(listen)
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    _child(request, env, listen)
                children[pid] = request["job"]
                say({"job": request["job"], "pid": pid})
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children.clear()
                break
            if pid == 0:
                break
            say({"job": children.pop(pid), "status": os.waitstatus_to_exitcode(status)})
    return 0


# -- the client (runs in allrun, imports nothing heavy) -----------------------------------------


class ForkedProc:
    """The part of ``subprocess.Popen`` that ``allrun.run_jobs`` uses, for a zygote's child."""

    def __init__(self, zygote: Zygote, job: int, pid: int):
        self._zygote, self._job, self.pid = zygote, job, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.status(self._job)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self.returncode = self._zygote.status(self._job, wait=True, timeout=timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired("zygote child", timeout or 0)
        return self.returncode

    def kill(self) -> None:
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass


class Zygote:
    """A running fork server; ``start`` returns None where it cannot serve (then run plain workers)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self._lock = threading.Condition()
        self._pids: dict[int, int] = {}
        self._status: dict[int, int] = {}
        self._next = 0
        self._reader = threading.Thread(target=self._read, daemon=True)

    @classmethod
    def start(cls, framework: str, device: str, env: dict[str, str], cwd: str, log: str) -> Zygote | None:
        if device != "cpu" or os.environ.get("TRACER_VERIFY_NO_ZYGOTE") or not hasattr(os, "fork"):
            return None
        cmd = [sys.executable, "-m", "tracer.verify.zygote", "--framework", framework, "--device", device]
        with open(log, "w") as err:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                    env=env, cwd=cwd)
        assert proc.stdout is not None
        try:
            hello = json.loads(proc.stdout.readline() or b"{}")
        except ValueError:
            hello = {}
        if not hello.get("ready"):
            proc.kill()
            proc.wait()
            return None
        zygote = cls(proc)
        zygote._reader.start()
        return zygote

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                if "pid" in item:
                    self._pids[item["job"]] = item["pid"]
                elif "status" in item:
                    self._status[item["job"]] = item["status"]
                self._lock.notify_all()
        with self._lock:  # the zygote is gone: its children with it
            for job in self._pids:
                self._status.setdefault(job, -9)
            self._lock.notify_all()

    def spawn(self, argv: list[str], log: str, cwd: str, limit: int | None) -> ForkedProc | None:
        """Fork a worker running ``python -m tracer.verify.worker ARGV``; None if the zygote is gone."""
        with self._lock:
            job = self._next
            self._next += 1
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps({"job": job, "argv": argv, "log": log, "cwd": cwd,
                                               "limit": limit}) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        with self._lock:
            if not self._lock.wait_for(lambda: job in self._pids or self.proc.poll() is not None, timeout=60):
                return None
            if job not in self._pids:
                return None
            return ForkedProc(self, job, self._pids[job])

    def status(self, job: int, wait: bool = False, timeout: float | None = None) -> int | None:
        with self._lock:
            if wait:
                self._lock.wait_for(lambda: job in self._status, timeout=timeout)
            return self._status.get(job)

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


def main(argv: list[str] | None = None) -> int:  # pragma: no cover
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tracer.verify.zygote")
    parser.add_argument("--framework", required=True)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    return serve(args.framework, args.device)


if __name__ == "__main__":
    sys.exit(main())
