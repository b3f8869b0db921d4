"""Reddit (webis-tldr-17): the number of unique authors per subreddit.

Real: the 3.1 GB corpus zip is streamed member line by line (JSON lines), never extracted or
held in memory; authors are kept as 64-bit hashes per subreddit.
Embedded: the synthetic histogram of paper 004 §6.1: `samples` draws from the power law with
density proportional to x^exponent on {1, ..., threads}; the count of draws equal to x is the
number of unique users of thread x.
"""
from __future__ import annotations

import hashlib
import io
import json
import logging
import zipfile
from collections import defaultdict

import numpy as np
import pandas as pd
import pyarrow as pa

from .. import UserError
from .dataset import Dataset, Table

log = logging.getLogger(__name__)


def _author_key(author: str) -> int:
    return int.from_bytes(hashlib.blake2b(author.encode(), digest_size=8).digest(), "little")


def histogram_from_zip(path, progress_every: int = 500_000) -> pd.DataFrame:
    authors: dict[str, set[int]] = defaultdict(set)
    with zipfile.ZipFile(path) as zf:
        members = [m for m in zf.namelist() if m.endswith(".json") or m.endswith(".jsonl")]
        if not members:
            raise UserError(f"{path} contains no .json member; it is not the webis-tldr-17 corpus zip.")
        for member in members:
            with zf.open(member) as raw:
                for lineno, line in enumerate(io.TextIOWrapper(raw, encoding="utf-8"), 1):
                    if not line.strip():
                        continue
                    try:
                        post = json.loads(line)
                        authors[post["subreddit"]].add(_author_key(post["author"]))
                    except (json.JSONDecodeError, KeyError, TypeError) as exc:
                        raise UserError(f"{member} line {lineno} is not a JSON object with 'author' and 'subreddit' ({exc}); the corpus is corrupt.") from None
                    if lineno % progress_every == 0:
                        log.info("%s: %d posts, %d subreddits", member, lineno, len(authors))
    names = sorted(authors)
    return pd.DataFrame({"subreddit": names, "authors": np.array([len(authors[s]) for s in names], dtype=np.int64)})


def power_law_histogram(samples: int, threads: int, exponent: float, rng: np.random.Generator) -> pd.DataFrame:
    support = np.arange(1, threads + 1)
    p = support.astype(np.float64) ** exponent
    draws = rng.choice(support, size=samples, p=p / p.sum())
    counts = np.bincount(draws, minlength=threads + 1)[1:]
    return pd.DataFrame({"subreddit": [f"thread_{i}" for i in support], "authors": counts.astype(np.int64)})


class Reddit(Dataset):
    """Not a design matrix: the histogram of unique authors per thread (paper 004 Tables 1-2)."""
    name = "reddit"
    outputs = ("histogram",)
    embedded_label = "embedded: synthetic power-law histogram, not the real Reddit corpus"

    def tables(self, settings, files, rng):
        if settings.real:
            (corpus,) = files.values()
            histogram = histogram_from_zip(corpus)
            origin = "webis-tldr-17 corpus-webis-tldr-17.zip (Zenodo 1043504)"
        else:
            s = settings.synthetic
            histogram = power_law_histogram(s.samples, s.threads, s.exponent, rng)
            origin = (f"embedded: synthetic power-law histogram (paper 004 §6.1), {s.samples} samples, "
                      f"density ∝ x^{s.exponent} on [{s.threads}]")
        return {"histogram": Table(pa.Table.from_pandas(histogram, preserve_index=False),
                                   {"split": "histogram", "origin": origin,
                                    "total_authors": int(histogram["authors"].sum())})}
