"""Running a Python file as a module of a chosen name."""
from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def module_from_file(name: str, path: str) -> ModuleType:
    """The file `path` run as the module `name`, once per process: registered in sys.modules before it
    runs (as an import registers a module) and removed again if running it fails."""
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return module
