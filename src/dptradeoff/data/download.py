"""Download a file from its URL or mirrors, verify its checksum, and only then put it in place."""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path

from .. import UserError
from ..io import atomic_path

log = logging.getLogger(__name__)

CHECKSUM_ALGORITHMS = ("sha256", "md5")


def _hashes(path: Path) -> dict[str, str]:
    hs = {name: hashlib.new(name) for name in CHECKSUM_ALGORITHMS}
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            for h in hs.values():
                h.update(block)
    return {name: h.hexdigest() for name, h in hs.items()}


def verify(path: Path, spec: dict, name: str) -> dict[str, str]:
    """Check every pinned checksum in `spec` against `path`; return all computed hashes."""
    actual = _hashes(path)
    for algo in CHECKSUM_ALGORITHMS:
        expected = spec.get(algo)
        if expected and expected.lower() != actual[algo]:
            raise UserError(
                f"Checksum mismatch for {name}: expected {algo} {expected.lower()}, got {actual[algo]}; "
                f"the download was discarded; check the URL, or the pinned {algo} in the config if the source really changed."
            )
    return actual


def _copy_url(url: str, dest: Path, timeout: float) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": "dptradeoff"})
    with urllib.request.urlopen(request, timeout=timeout) as response, open(dest, "wb") as out:
        total = int(response.headers.get("Content-Length") or 0)
        done, last = 0, time.monotonic()
        while block := response.read(1 << 20):
            out.write(block)
            done += len(block)
            if time.monotonic() - last > 10:
                last = time.monotonic()
                log.info("%s: %.1f MB of %s", url, done / 1e6, f"{total / 1e6:.1f} MB" if total else "?")


def fetch(spec: dict, out: str | os.PathLike, timeout: float = 60.0) -> dict[str, str]:
    """Download `spec["urls"]` (first that answers) to `out`, verified against the pinned checksums.

    The bytes land under a temporary name and are renamed onto `out` only after every pinned
    checksum matched, so an interrupted or corrupt download never looks finished.
    Returns the computed hashes (sha256 is recorded even where upstream publishes none).
    """
    out = Path(out)
    urls = list(spec.get("urls") or [])
    if not urls:
        raise UserError(f"No URL configured for {out.name}; add `urls:` for it under the dataset's `files:` in the config.")
    errors = []
    with atomic_path(out) as tmp:
        for url in urls:
            try:
                log.info("downloading %s", url)
                if url.startswith("file://"):
                    shutil.copyfile(urllib.request.url2pathname(url[len("file://"):]), tmp)
                else:
                    _copy_url(url, tmp, timeout)
                break
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                errors.append(f"{url}: {exc}")
                log.warning("download failed: %s", errors[-1])
        else:
            raise UserError(
                f"Could not download {out.name} from any of its {len(urls)} URL(s) ({'; '.join(errors)}); "
                "check the network or put the file at " + str(out) + " yourself."
            )
        hashes = verify(tmp, spec, out.name)
    log.info("%s verified: sha256 %s", out.name, hashes["sha256"])
    return hashes
