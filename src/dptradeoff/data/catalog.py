"""The datasets the pipeline builds, by name."""
from __future__ import annotations

from .adult import Adult
from .dataset import Dataset
from .gisette import Gisette
from .kddcup99 import KddCup99
from .mnist import Mnist
from .reddit import Reddit
from .twitter import Twitter

CATALOG: dict[str, Dataset] = {d.name: d for d in (Adult(), Mnist(), Gisette(), Reddit(), Twitter(), KddCup99())}
