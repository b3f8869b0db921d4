"""Archive members read or extracted safely: nothing may land outside the target folder."""
from __future__ import annotations

import os
import tarfile
import zipfile
from pathlib import Path

from .. import UserError
from ..io import atomic_path


def _inside(root: Path, member: str) -> Path:
    target = (root / member).resolve()
    if os.path.isabs(member) or not target.is_relative_to(root.resolve()):
        raise UserError(
            f"Refusing archive member {member!r}: its path escapes {root}; the archive is malformed or malicious, so delete it and download it again."
        )
    return target


def extract_member(archive: str | os.PathLike, member: str, root: str | os.PathLike) -> Path:
    """Extract one member of a .tar(.gz) or .zip archive into `root` (atomically) and return its path.

    Every member name in the archive is checked first: one that escapes `root` (absolute,
    `..`, or a link pointing outside) stops the extraction before anything is written.
    """
    archive, root = Path(archive), Path(root)
    root.mkdir(parents=True, exist_ok=True)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                _inside(root, name)
            target = _inside(root, member)
            with zf.open(member) as src, atomic_path(target) as tmp, open(tmp, "wb") as dst:
                while block := src.read(1 << 20):
                    dst.write(block)
            return target
    with tarfile.open(archive) as tf:
        for info in tf.getmembers():
            _inside(root, info.name)
            if info.issym() or info.islnk():
                _inside(root, os.path.join(os.path.dirname(info.name), info.linkname))
        info = tf.getmember(member)
        target = _inside(root, member)
        src = tf.extractfile(info)
        if src is None:
            raise UserError(f"Archive member {member!r} of {archive.name} is not a regular file; the archive does not have the expected layout.")
        with src, atomic_path(target) as tmp, open(tmp, "wb") as dst:
            while block := src.read(1 << 20):
                dst.write(block)
        return target
