"""`tracer sweep`: version ranges, unpacking, the verdict history and its pages.

Offline tests build tiny SGLang-shaped releases as wheels in a temporary cache; the
`real` test sweeps two cached SGLang releases from PyPI.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracer.cli import main
from tracer.index.discover import UsageError
from tracer.present.sweep_page import history_html
from tracer.sweep import run as sweep_mod
from tracer.sweep.fetch import parse_spec, select_versions, unpack
from tracer.sweep.history import build_history, history_text

MODEL_OK = """
from torch import nn


class ToyModel(nn.Module):
    def __init__(self):
        self.layers = []
        self.layers_to_capture = []

    def forward(self, x):
        aux = []
        for i, layer in enumerate(self.layers):
            if i in self.layers_to_capture:
                aux.append(x)
        return x, aux


class ToyForCausalLM(nn.Module):
    def __init__(self):
        self.model = ToyModel()

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = len(self.model.layers)
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
            print("fallback")
        else:
            self.model.layers_to_capture = [i + 1 for i in layer_ids]


class PlainForCausalLM(nn.Module):
    def __init__(self):
        self.model = ToyModel()


EntryClass = [ToyForCausalLM, PlainForCausalLM]
"""

RUNNER = """
class ModelRunner:
    def __init__(self, model):
        self.model = model
        self.model.set_eagle3_layers_to_capture([1, 2, 3])
"""


def _release_files(version: str, broken: bool) -> dict[str, str]:
    model = MODEL_OK.replace("self.model.layers_to_capture = [i + 1", "self.model.layers_to_captur = [i + 1") \
        if broken else MODEL_OK
    return {
        "sglang/__init__.py": "",
        "sglang/version.py": f'__version__ = "{version}"\n',
        "sglang/srt/__init__.py": "",
        "sglang/srt/models/__init__.py": "",
        "sglang/srt/models/toy.py": textwrap.dedent(model),
        "sglang/srt/model_executor/__init__.py": "",
        "sglang/srt/model_executor/model_runner.py": textwrap.dedent(RUNNER),
        f"sglang-{version}.dist-info/METADATA": "Name: sglang\n",
        "sglang/srt/README.md": "not python: not unpacked\n",
    }


def _write_wheel(wheels: Path, version: str, broken: bool) -> Path:
    wheels.mkdir(parents=True, exist_ok=True)
    path = wheels / f"sglang-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in _release_files(version, broken).items():
            zf.writestr(name, text)
    return path


def test_parse_spec_and_select_versions():
    assert parse_spec("sglang==0.4.5..0.5.23") == ("sglang", "0.4.5", "0.5.23")
    assert parse_spec("SGLang==0.5.6") == ("sglang", "0.5.6", "0.5.6")
    with pytest.raises(UsageError):
        parse_spec("sglang>=0.4")
    versions = ["0.5.23", "0.4.4", "0.4.5", "0.4.10", "0.4.9.post2", "0.4.9", "0.5.0rc1", "0.5.1", "0.6.0"]
    assert select_versions(versions, "0.4.5", "0.5.23") == ["0.4.5", "0.4.9", "0.4.9.post2", "0.4.10", "0.5.1", "0.5.23"]
    assert "0.5.0rc1" in select_versions(versions, "0.5.0rc1", "0.5.1")


def test_unpack_takes_only_package_python_files(tmp_path):
    wheel = _write_wheel(tmp_path / "wheels", "0.0.1", broken=False)
    tree = Path(unpack("sglang", "0.0.1", str(wheel), tmp_path))
    files = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file())
    assert "sglang/srt/models/toy.py" in files
    assert not any(f.endswith(".md") or "dist-info" in f for f in files)
    # a source distribution with python/<pkg> (SGLang's layout) unpacks to the same shape
    sdist = tmp_path / "wheels" / "sglang-0.0.2.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        for name, text in _release_files("0.0.2", broken=False).items():
            data = text.encode()
            info = tarfile.TarInfo(f"sglang-0.0.2/python/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    tree2 = Path(unpack("sglang", "0.0.2", str(sdist), tmp_path))
    assert (tree2 / "sglang" / "srt" / "models" / "toy.py").is_file()
    bad = tmp_path / "wheels" / "sglang-0.0.3-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(zipfile.BadZipFile):
        unpack("sglang", "0.0.3", str(bad), tmp_path)


@pytest.fixture()
def offline_releases(tmp_path, monkeypatch):
    cache = tmp_path / "dl"
    _write_wheel(cache / "wheels", "0.0.1", broken=False)
    _write_wheel(cache / "wheels", "0.0.2", broken=False)
    _write_wheel(cache / "wheels", "0.0.3", broken=True)
    (cache / "wheels" / "sglang-0.0.4-py3-none-any.whl").write_bytes(b"corrupt")
    _write_wheel(cache / "wheels", "0.0.6", broken=False)
    monkeypatch.setattr(sweep_mod, "available_versions",
                        lambda package, cache: (["0.0.1", "0.0.2", "0.0.3", "0.0.4", "0.0.5", "0.0.6", "0.0.7"], "test"))
    real_download = sweep_mod.download

    def download(package, version, wheels):
        if version == "0.0.5":
            return "", "ERROR: No matching distribution found for sglang==0.0.5"
        return real_download(package, version, wheels)

    monkeypatch.setattr(sweep_mod, "download", download)
    return cache


def test_sweep_history_offline(offline_releases, tmp_path):
    sweep = sweep_mod.run_sweep("sglang==0.0.1..0.0.6", offline_releases, tmp_path / "sc", jobs=2)
    history = build_history(sweep)
    assert history["releases"] == ["0.0.1", "0.0.2", "0.0.3", "0.0.6"]
    failed = {f["release"]: f["stage"] for f in history["failed"]}
    assert failed == {"0.0.4": "unpack", "0.0.5": "download"}
    toy = next(m for m in history["models"]
               if m["entry"] == "sglang.srt.models.toy.ToyForCausalLM" and m["protocol"] == "sglang-eagle3")
    assert toy["verdicts"] == {"0.0.1": "ok", "0.0.2": "ok", "0.0.3": "broken", "0.0.6": "ok"}
    assert [(c["previous_release"], c["release"], c["from"], c["to"]) for c in toy["changes"]] == [
        ("0.0.2", "0.0.3", "ok", "broken"), ("0.0.3", "0.0.6", "broken", "ok")]
    assert [f["slug"] for f in toy["changes"][0]["findings_appeared"]] == ["dead-write"]
    assert [f["slug"] for f in toy["changes"][1]["findings_disappeared"]] == ["dead-write"]
    plain = next(m for m in history["models"] if m["entry"].endswith("PlainForCausalLM")
                 and m["protocol"] == "sglang-eagle3")
    assert set(plain["verdicts"].values()) == {"missing"} and plain["changes"] == []

    text = history_text(history)
    assert "0.0.2 -> 0.0.3: ok -> broken" in text and "+ dead-write sglang/srt/models/toy.py" in text
    assert "0.0.5: download failed" in text and "0.0.4: unpack failed" in text

    page = history_html(history)
    assert page.count('<tr class="row"') == len(history["models"])
    assert 'class="c-broken change"' in page
    # self-contained: no external stylesheet, script or font
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<style>" in page and "--broken" in page


def test_sweep_command_writes_three_files(offline_releases, tmp_path, monkeypatch):
    monkeypatch.setenv("TRACER_TEST_CACHE", str(offline_releases))
    out = tmp_path / "history"
    result = CliRunner().invoke(main, ["sweep", "sglang==0.0.2..0.0.3", "-o", str(out), "-j", "1",
                                       "--cache-dir", str(tmp_path / "sc")])
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} == {"history.json", "history.txt", "index.html"}
    data = json.loads((out / "history.json").read_text())
    assert data["releases"] == ["0.0.2", "0.0.3"] and data["failed"] == []
    assert "ok -> broken" in result.output


@pytest.mark.real
def test_sweep_two_real_releases(tmp_path):
    """0.5.22 -> 0.5.23: MiniMaxM3SparseForConditionalGeneration gains the DFlash setter
    (minimax_m3_vl.py:283 in 0.5.23 defines set_dflash_layers_to_capture, passing the ids
    to set_dspark_layers_to_capture; 0.5.22's class has neither)."""
    from conftest import cache_root

    sweep = sweep_mod.run_sweep("sglang==0.5.22..0.5.23", cache_root(), tmp_path / "sc", jobs=2)
    history = build_history(sweep)
    if len(history["releases"]) < 2:
        pytest.skip(f"releases not available: {history['failed']}")
    row = next(m for m in history["models"] if m["protocol"] == "sglang-dflash"
               and m["entry"].endswith("minimax_m3_vl.MiniMaxM3SparseForConditionalGeneration"))
    assert row["verdicts"] == {"0.5.22": "missing", "0.5.23": "ok"}
    assert row["changes"][0]["findings_disappeared"][0]["slug"] == "missing-setter"


# -- a stranger's releases (issue 16) ------------------------------------------------------------

SETUP_MARK = "import pathlib\npathlib.Path({marker!r}).write_text('setup.py ran')\n"


def _sdist(path: Path, version: str, marker: Path) -> bytes:
    with tarfile.open(path, "w:gz") as tf:
        files = dict(_release_files(version, broken=False))
        files["setup.py"] = SETUP_MARK.format(marker=str(marker))
        files["pyproject.toml"] = "[build-system]\nrequires = []\nbuild-backend = 'setuptools.build_meta'\n"
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"sglang-{version}/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path.read_bytes()


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A mirror-only index (PEP 503 pages) that serves one sdist, named to pip by PIP_INDEX_URL
    (pip's config files switched off); pip finds no wheel for the platform."""
    import functools
    import hashlib
    import http.server
    import subprocess
    import sys
    import threading

    from tracer.sweep import fetch as fetch_mod

    marker = tmp_path / "MARKER"
    served = tmp_path / "served"
    (served / "simple" / "sglang").mkdir(parents=True)
    data = _sdist(served / "sglang-0.0.9.tar.gz", "0.0.9", marker)
    (served / "simple" / "sglang" / "index.html").write_text(
        '<html><body><a href="../../sglang-0.0.9-cp399-none-any.whl">sglang-0.0.9-cp399-none-any.whl</a>\n'
        f'<a href="../../sglang-0.0.9.tar.gz#sha256={hashlib.sha256(data).hexdigest()}">sglang-0.0.9.tar.gz</a>'
        "</body></html>")
    asked: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            asked.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(served)))
    base = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for name in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", base + "/simple")
    real_run = subprocess.run
    calls = []

    def no_wheel(cmd, *args, **kwargs):  # pip finds no wheel for this platform
        if "config" in cmd:
            return real_run(cmd, *args, **kwargs)
        calls.append(cmd)
        assert "--only-binary=:all:" in cmd and "--no-binary=:all:" not in cmd, cmd
        return real_run([sys.executable, "-c", "import sys; sys.exit('ERROR: No matching distribution')"],
                        *args, **kwargs)

    monkeypatch.setattr(fetch_mod.subprocess, "run", no_wheel)
    monkeypatch.setattr(sweep_mod, "available_versions", lambda package, cache: (["0.0.9"], "test"))
    yield {"marker": marker, "data": data, "asked": asked, "calls": calls, "base": base}
    server.shutdown()


def test_sdist_only_release_is_fetched_as_data_never_built(mirror, tmp_path):
    """No wheel fits: the sdist is fetched as a file from pip's configured index (a mirror,
    never pypi.org) and unpacked as data; its setup.py (which writes a marker) never runs."""
    import hashlib

    sweep = sweep_mod.run_sweep("sglang==0.0.9", tmp_path / "dl", tmp_path / "sc", jobs=1)
    assert len(mirror["calls"]) == 1
    assert not mirror["marker"].exists(), "the sdist's setup.py ran"
    release = sweep.releases[0]
    assert release.scan is not None, release.reason
    assert release.sha256 == hashlib.sha256(mirror["data"]).hexdigest()
    assert mirror["asked"] and all(line.split()[0] in ("/simple/sglang/", "/sglang-0.0.9.tar.gz")
                                   for line in mirror["asked"] if line.startswith("/")), mirror["asked"]
    history = build_history(sweep)
    assert history["per_release"]["0.0.9"]["sha256"] == release.sha256


def test_sdist_fallback_keeps_to_no_index_and_checks_the_hash(mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    release = sweep_mod.run_sweep("sglang==0.0.9", tmp_path / "dl", tmp_path / "sc", jobs=1).releases[0]
    assert release.scan is None and "no index" in release.reason, release.reason
    assert mirror["asked"] == []  # nothing asked anywhere
    monkeypatch.delenv("PIP_NO_INDEX")
    page = tmp_path / "served" / "simple" / "sglang" / "index.html"
    page.write_text(page.read_text().replace("sha256=", "sha256=00"))
    release = sweep_mod.run_sweep("sglang==0.0.9", tmp_path / "dl2", tmp_path / "sc2", jobs=1).releases[0]
    assert release.scan is None and "SHA-256 does not match" in release.reason, release.reason


def test_pip_configuration_is_read_as_pip_merges_it():
    from tracer.sweep.index import parse_pip_config

    settings = parse_pip_config(
        "global.index-url='https://files.example/simple'\n:env:.index-url='https://mirror.example/simple'\n"
        "global.extra-index-url='https://a.example/simple file:///opt/simple'\n"
        "download.trusted-host='a.example:8443 b.example'\nglobal.proxy='http://proxy:3128'\n"
        "global.find-links='/opt/wheels'\nglobal.cert='/etc/ca.pem'\n")
    assert settings.index_urls == ("https://mirror.example/simple", "https://a.example/simple", "file:///opt/simple")
    assert settings.trusted_hosts == {"a.example", "b.example"} and settings.proxy == "http://proxy:3128"
    assert settings.find_links == ("/opt/wheels",) and settings.cert == "/etc/ca.pem" and not settings.no_index
    assert parse_pip_config("").index_urls == ("https://pypi.org/simple",)
    assert parse_pip_config(":env:.no-index='true'\n").no_index


def _encrypted_wheel(path: Path) -> None:
    """Every member flagged "encrypted" (reading one raises RuntimeError, not BadZipFile)."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in _release_files("0.0.7", broken=False).items():
            zf.writestr(name, text)
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = data.find(signature)
        while start >= 0:
            data[start + offset] |= 0x1
            start = data.find(signature, start + 4)
    path.write_bytes(bytes(data))


def _crash_on(version: str):
    real = sweep_mod._scan_job

    def job(args):
        if args[0] == version:
            os.kill(os.getpid(), signal.SIGKILL)  # a release that kills its worker (native crash, OOM)
        return real(args)
    return job


def test_every_failure_is_one_release_and_the_others_stand(offline_releases, tmp_path, monkeypatch):
    """An encrypted member, a download that raises, a release that kills its worker: each
    is listed as failed with its reason; the rest of the sweep is scanned."""
    wheels = offline_releases / "wheels"
    _encrypted_wheel(wheels / "sglang-0.0.7-py3-none-any.whl")
    real_download = sweep_mod.download

    def download(package, version, folder):
        if version == "0.0.5":
            raise KeyError("filename")  # an index answer of an unexpected shape
        return real_download(package, version, folder)

    monkeypatch.setattr(sweep_mod, "download", download)
    monkeypatch.setattr(sweep_mod, "_scan_job", _crash_on("0.0.2"))
    sweep = sweep_mod.run_sweep("sglang==0.0.1..0.0.7", offline_releases, tmp_path / "sc", jobs=2)
    failed = {r.version: (r.failed_stage, r.reason) for r in sweep.releases if r.failed_stage}
    assert failed["0.0.7"][0] == "unpack" and "encrypted" in failed["0.0.7"][1]
    assert failed["0.0.5"][0] == "download" and "KeyError" in failed["0.0.5"][1]
    assert failed["0.0.2"][0] == "scan" and "died" in failed["0.0.2"][1]
    assert failed["0.0.4"][0] == "unpack"
    assert sorted(r.version for r in sweep.releases if r.scan) == ["0.0.1", "0.0.3", "0.0.6"]
    assert all(r.scan or r.failed_stage for r in sweep.releases)


def test_unpacked_folder_is_reused_only_with_its_own_marker(tmp_path):
    wheel = _write_wheel(tmp_path / "wheels", "0.0.1", broken=False)
    tree = Path(unpack("sglang", "0.0.1", str(wheel), tmp_path))
    toy = tree / "sglang" / "srt" / "models" / "toy.py"
    good = toy.read_text()
    assert Path(unpack("sglang", "0.0.1", str(wheel), tmp_path)) == tree  # reused
    # a marker anyone could write (the old plain-text one, or another key's) is not trusted
    toy.write_text("tampered = True\n")
    (tree / ".tracer-unpacked").write_text("12 files from sglang-0.0.1-py3-none-any.whl\n")
    unpack("sglang", "0.0.1", str(wheel), tmp_path)
    assert toy.read_text() == good
    # another archive under the same name: unpacked again
    _write_wheel(tmp_path / "wheels", "0.0.1", broken=True)
    unpack("sglang", "0.0.1", str(wheel), tmp_path)
    assert "layers_to_captur =" in toy.read_text()
    # a folder holding the package but no marker at all is not reused either
    (tree / ".tracer-unpacked").unlink()
    toy.write_text("tampered = True\n")
    unpack("sglang", "0.0.1", str(wheel), tmp_path)
    assert toy.read_text() != "tampered = True\n"


def test_zip_members_that_leave_or_are_links_are_skipped(tmp_path):
    path = tmp_path / "wheels" / "sglang-0.0.1-py3-none-any.whl"
    _write_wheel(tmp_path / "wheels", "0.0.1", broken=False)
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("sglang/../../escape.py", "x = 1\n")
        link = zipfile.ZipInfo("sglang/srt/link.py")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, "/etc/passwd")
    tree = Path(unpack("sglang", "0.0.1", str(path), tmp_path / "cache"))
    assert not (tmp_path / "escape.py").exists() and not (tmp_path / "cache" / "escape.py").exists()
    assert not (tree / "sglang" / "srt" / "link.py").exists()


def test_an_edited_file_under_a_valid_marker_is_unpacked_again(tmp_path):
    """The marker authenticates the files under it (their digest), not only itself."""
    wheel = _write_wheel(tmp_path / "wheels", "0.0.1", broken=False)
    tree = Path(unpack("sglang", "0.0.1", str(wheel), tmp_path))
    toy = tree / "sglang" / "srt" / "models" / "toy.py"
    good = toy.read_text()
    marker = (tree / ".tracer-unpacked").read_bytes()
    for tamper in (lambda: toy.write_text(good.replace("layers_to_capture =", "layers_to_captur =")),
                   lambda: (tree / "sglang" / "srt" / "models" / "extra.py").write_text("EntryClass = None\n"),
                   lambda: toy.unlink(),
                   lambda: (tree / "sglang" / "srt" / "models" / "lnk.py").symlink_to(toy)):
        tamper()
        assert (tree / ".tracer-unpacked").read_bytes() == marker  # the marker itself is still valid
        assert Path(unpack("sglang", "0.0.1", str(wheel), tmp_path)) == tree
        assert toy.read_text() == good
        assert not (tree / "sglang" / "srt" / "models" / "extra.py").exists()
        assert not (tree / "sglang" / "srt" / "models" / "lnk.py").is_symlink()


def test_a_zip_bomb_is_refused_and_leaves_nothing_in_the_download_cache(tmp_path):
    """A wheel of ~0.2 MB that unpacks to 120 MiB of zeros: refused past 64 MiB + 16 x the archive,
    its partial folder and the archive removed (the cache keeps nothing of it)."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    bomb = wheels / "sglang-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("sglang/__init__.py", "")
        for n in range(2):  # members of 60 MiB of zeros: each under the member bound
            with zf.open(f"sglang/srt/m{n}.py", "w") as fh:
                block = b"\0" * (1 << 20)
                for _ in range(60):
                    fh.write(block)
    assert bomb.stat().st_size < 2 * 1024 * 1024
    with pytest.raises(ValueError, match="zip bomb"):
        unpack("sglang", "0.0.1", str(bomb), tmp_path)
    assert not bomb.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wheels"]
