"""Python environments for the packages a user's algorithm needs.

Two ways, both documented in docs/your-algorithm.md ("Packages your algorithm needs"):

- **Beside the pipeline** (`envs/extra-requirements.txt`): `envs/setup.sh` (run by `./in-env`) installs
  the file into `.venv` with the pipeline's pins as constraints, after a dry run: a package that would
  replace a pinned one (numpy >= 2 against GPflow's numpy < 2, say) is refused with one sentence before
  anything is installed (`install_extra`, `python -m dptradeoff.environments extra FILE`).
- **An environment of its own** (`problems.<name>.environment: requirements.txt`): built once into
  `.venvs/<file>-<hash>/` (`ProblemEnvironment`, keyed by the file's content and the Python version),
  where the problem's oracle runs in worker processes (`problems/worker.py`).
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

from . import UserError

log = logging.getLogger(__name__)

PROJECT_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PINS = [os.path.join(PROJECT_ROOT, "envs", name) for name in ("requirements.txt", "cluster.txt")]


def environments_dir() -> str:
    """Where problems' environments are built: $DPTRADEOFF_ENVS, else `.venvs/` in the project."""
    return os.environ.get("DPTRADEOFF_ENVS") or os.path.join(PROJECT_ROOT, ".venvs")


def find_file(path: str, where: str) -> str:
    """A user's file, relative to the directory Snakemake runs in, else to the project's."""
    for candidate in (os.path.abspath(path), os.path.join(PROJECT_ROOT, path)):
        if os.path.isfile(candidate):
            return candidate
    raise UserError(f"{where} names the file {path}, which is in neither the directory Snakemake runs in nor the "
                    f"project's ({PROJECT_ROOT}); fix the path.")


def _pip_reason(output: str) -> str:
    """pip's reason for a failure, in one line: the conflict's causes, else its last error line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if "The conflict is caused by:" in lines:
        start = lines.index("The conflict is caused by:") + 1
        causes = []
        for line in lines[start:]:
            if line.startswith(("To fix", "Additionally", "ERROR")):
                break
            causes.append(line)
        return "; ".join(causes[:4])
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or ["no output"])[-1]


def _run(command: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, env=env)


def install_extra(requirements: str, python: str = sys.executable, dry_run_only: bool = False) -> None:
    """Install `requirements` into `python`'s environment under the pipeline's pins (envs/*.txt as pip
    constraints). A dry run comes first: a conflict with a pin stops with one sentence, nothing installed."""
    constraints = [arg for pins in PINS if os.path.exists(pins) for arg in ("-c", pins)]
    install = [python, "-m", "pip", "install", "--disable-pip-version-check", "-r", requirements, *constraints]
    dry = _run(install + ["--dry-run"])   # not --quiet: pip then says what conflicts
    if dry.returncode != 0:
        shown = os.path.relpath(requirements, PROJECT_ROOT) if requirements.startswith(PROJECT_ROOT) else requirements
        raise UserError(f"{shown} cannot be installed beside the pipeline's "
                        f"pinned packages (pip: {_pip_reason(dry.stdout + dry.stderr)}); nothing was installed: pin "
                        f"versions that accept envs/requirements.txt's pins, or give the problem an environment of its "
                        f"own (problems.<name>.environment, docs/your-algorithm.md).")
    if dry_run_only:
        return
    done = _run(install + ["--quiet"])
    if done.returncode != 0:
        raise UserError(f"Installing {requirements} failed (pip: {_pip_reason(done.stdout + done.stderr)}); fix the "
                        f"file.")


@dataclass(frozen=True)
class ProblemEnvironment:
    """A problem's own virtual environment, built from its requirements file."""
    requirements: str   # absolute path
    where: str          # the config key, for messages

    @property
    def key(self) -> str:
        with open(self.requirements, "rb") as f:
            content = f.read()
        return hashlib.sha256(content + sys.version.split()[0].encode()).hexdigest()[:12]

    @property
    def path(self) -> str:
        stem = os.path.splitext(os.path.basename(self.requirements))[0]
        return os.path.join(environments_dir(), f"{stem}-{self.key}")

    @property
    def python(self) -> str:
        return os.path.join(self.path, "bin", "python")

    def ensure(self) -> str:
        """The environment's Python, after building it if it is not there yet (once: a file lock keeps
        parallel jobs from building it twice; a build killed half-way is started again)."""
        if os.path.exists(os.path.join(self.path, ".built")):
            return self.python
        os.makedirs(environments_dir(), exist_ok=True)
        with _locked(self.path + ".lock"):
            if not os.path.exists(os.path.join(self.path, ".built")):
                self._build()
        return self.python

    def _build(self) -> None:
        """Build at the final path (a venv's scripts name their interpreter by its path), under the lock;
        `.built`, written last, marks it whole, so a build killed half-way is removed and redone."""
        shutil.rmtree(self.path, ignore_errors=True)
        log.warning("%s: building the environment of %s in %s (minutes the first time)", self.where,
                    self.requirements, self.path)
        base = getattr(sys, "_base_executable", sys.executable)
        created = _run([base, "-m", "venv", self.path])
        if created.returncode != 0:
            raise UserError(f"{self.where}: creating a virtual environment failed ({_pip_reason(created.stderr)}); "
                            f"install Python's venv module (e.g. apt-get install python3.11-venv).")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        done = _run([self.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r",
                     self.requirements], env=env)
        if done.returncode != 0:
            shutil.rmtree(self.path, ignore_errors=True)
            raise UserError(f"{self.where}: installing {self.requirements} into the problem's own environment failed "
                            f"(pip: {_pip_reason(done.stdout + done.stderr)}); fix the requirements file.")
        if _run([self.python, "-c", "import numpy"], env=env).returncode != 0:
            shutil.rmtree(self.path, ignore_errors=True)
            raise UserError(f"{self.where}: the environment of {self.requirements} has no numpy, which the worker "
                            f"exchanges arrays with; add numpy to the file.")
        with open(os.path.join(self.path, ".built"), "w") as f:
            f.write(self.requirements + "\n")


@contextlib.contextmanager
def _locked(path: str):
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def main(argv: list[str]) -> int:
    """`python -m dptradeoff.environments extra FILE`: what envs/setup.sh runs for envs/extra-requirements.txt."""
    if len(argv) != 2 or argv[0] != "extra":
        print("usage: python -m dptradeoff.environments extra REQUIREMENTS", file=sys.stderr)
        return 2
    try:
        install_extra(argv[1])
    except UserError as exc:
        print(f"envs/setup.sh: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
