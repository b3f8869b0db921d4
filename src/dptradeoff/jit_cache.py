"""numba's on-disk cache (`cache=True`) keyed on the sources a module's compiled code depends on beyond its own file.

numba keeps a function's compiled code until the file that defines it changes. Two things compiled into that
code are not checked: the globals it reads from another module (frozen into it as constants, such as
`exact_cells`' boundaries in `exact_noise`) and the jitted functions of other modules it calls (compiled into it,
such as `exact_noise.released_value` in `train/linear.py`). A cache written before such a source changed would
still be loaded after. `key_caches` adds a digest of those sources (`source_digest`) to the index key of every
cached function of a module: code compiled against other sources is never found, and is compiled afresh (the
old entries stay in the index, unused).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher


class KeyedCache(FunctionCache):
    """numba's per-function cache with `digest` in every entry's key."""

    def __init__(self, py_func, digest: str):
        self.digest = digest
        super().__init__(py_func)

    def _index_key(self, sig, codegen):
        return (*super()._index_key(sig, codegen), self.digest)


def source_digest(*paths) -> str:
    """sha256 over the bytes of the given source files, in order."""
    hasher = hashlib.sha256()
    for path in paths:
        data = Path(path).read_bytes()
        hasher.update(len(data).to_bytes(8, "little") + data)
    return hasher.hexdigest()


def key_caches(namespace: dict, digest: str) -> None:
    """Key the on-disk cache of every cached numba function defined in the module of `namespace` (its
    `globals()`) on `digest` too. Call it at the end of the module, before anything is compiled."""
    for value in list(namespace.values()):
        if (isinstance(value, Dispatcher) and isinstance(value._cache, FunctionCache)
                and value.py_func.__module__ == namespace["__name__"]):
            value._cache = KeyedCache(value.py_func, digest)
