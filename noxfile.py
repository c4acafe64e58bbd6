"""nox sessions: the fast part of the suite (every test but the real-release ones,
``-m "not real"``) on each Python that tracer supports, in a fresh virtual environment
with tracer installed from this checkout.

    pip install nox
    nox                        # tests-3.10 ... tests-3.13
    nox -s tests-3.13 -- -k scan   # one Python; arguments after -- go to pytest

Interpreters are found on PATH (python3.10 ...) or among pyenv's (~/.pyenv/versions).
"""

from __future__ import annotations

import glob
import os

import nox

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

# pyenv's interpreters, where they are not on PATH already
for _bin in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin"))):
    if _bin not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + _bin


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    session.install(".[test]")
    session.run("python", "-m", "pytest", "-q", "-m", "not real", *session.posargs)
