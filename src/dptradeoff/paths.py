"""Where the pipeline's files are: every path under results/, figures/ and tables/ that the rules,
the scripts and the library name, written here once. Each is a function or an object whose fields
are the path's parts: given Snakemake wildcards ("{problem}") it is a rule's pattern, given values
a concrete path (`RunFiles("svt", "dpareto").evaluations`)."""
from __future__ import annotations

from dataclasses import dataclass

DATA_DIR = "results/data"
TABLE_FORMATS = ("csv", "md")   # every table is written as both


def data(dataset: str, part: str, data_dir: str = DATA_DIR) -> str:
    """A dataset's Parquet file: its `train` or `test` split, or Reddit's `histogram`."""
    return f"{data_dir}/{dataset}/{part}.parquet"


DPARETO = "dpareto"   # DPareto's one name: the config's method, its chain's folder, its rows' `method`


def batch_chain(q: int | str) -> str:
    """The folder of the DPareto chain with q points per round (the batch comparison)."""
    return f"{DPARETO}-q{q}"


def study(problem: str) -> str:
    """The folder of one problem's DPareto study: its methods' runs and its front queries."""
    return f"results/dpareto/{problem}"


@dataclass(frozen=True)
class RunFiles:
    """The files of one run of a study's method on a problem. `method` is the folder's name, the
    method's own: random, uniform, comparison (Table 2's sample), grid<k>, or a chain: dpareto,
    dpareto-q<q> (`batch_chain`), a peer's name (optuna-tpe, optuna-gp, botorch). A sampling method
    or grid writes its `points` once and evaluates them in batches; a chain starts from its
    `initial` points and evaluates each `proposal` point by point. `evals(n)` is batch n or point n,
    and `evaluations` all of them gathered. `bo`, the DPareto folder's former name, names dpareto."""
    problem: str
    method: str
    run: int | str = 0

    @property
    def folder(self) -> str:
        return f"{study(self.problem)}/{self.method}/{self.run}"

    @property
    def points(self) -> str:
        return f"{self.folder}/points.parquet"

    def evals(self, n: int | str) -> str:
        return f"{self.folder}/evals/{n}.parquet"

    @property
    def evaluations(self) -> str:
        return f"{self.folder}/evaluations.parquet"

    @property
    def initial(self) -> str:
        return f"{self.folder}/initial.parquet"

    def proposal(self, round_index: int | str) -> str:
        return f"{self.folder}/proposals/{round_index}.parquet"


# The rules' patterns of a run: a sampling method's or grid's ({method}) and a chain's ({chain}).
METHOD_RUN = RunFiles("{problem}", "{method}", "{run}")
CHAIN_RUN = RunFiles("{problem}", "{chain}", "{run}")


def query(problem: str, kind: str, target: str) -> str:
    """The answer to a front query: `kind` eps or utility, `target` its value as the file names it."""
    return f"{study(problem)}/query/{kind}{target}.parquet"


def fresh_front(problem: str) -> str:
    """The front of a problem's study restated by fresh trainings (`bo.fresh_front`): its retrained points."""
    return f"{study(problem)}/front/fresh.parquet"


def illustration(example: str, name: str) -> str:
    """A table of an illustrative example (Figs 1-4): the `grid` and `random` designs' points
    (`<design>_points`) and evaluations (`<design>`), the GP `surfaces` and the `next` point."""
    return f"results/illustrations/{example}/{name}.parquet"


EXPOST_DIR = "results/expost"
EXPOST_INVOCATIONS = f"{EXPOST_DIR}/invocations.parquet"


def expost_thread_trials(table: str, row: str) -> str:
    """Paper 004's trials of one row (a synthetic sample size or Reddit) of Table 1 or 2."""
    return f"{EXPOST_DIR}/{table}/{row}.parquet"


def expost_ml(dataset: str, name: str) -> str:
    """Paper 004 Table 3's `candidates` or `trials` on one dataset."""
    return f"{EXPOST_DIR}/ml/{dataset}/{name}.parquet"


def proposetest(name: str) -> str:
    """Paper 003's simulations: the (u, step) `paths` of Fig. 1 and the `gaps` of Fig. 2."""
    return f"results/proposetest/{name}.parquet"


def taylor_run(reading: str, dataset: str, loss: str, n: int | str, repeats: int | str) -> str:
    """Paper 002's measurements of one reading, dataset and loss on n rows, with `repeats` noise draws."""
    return f"results/taylor/{reading}/{dataset}/{loss}/n{n}-r{repeats}.parquet"


def figure(name: str) -> str:
    return f"figures/{name}.pdf"


def table(name: str, ext: str) -> str:
    """A table in one of TABLE_FORMATS; `name` may lead with a folder (nonprivate/...)."""
    return f"tables/{name}.{ext}"


def tables(name: str) -> list[str]:
    """A table in every format."""
    return [table(name, ext) for ext in TABLE_FORMATS]


@dataclass(frozen=True)
class ReleaseFiles:
    """A release's files: the released `model` (.npz), its `candidates` (Parquet) and its `record` (JSON:
    hyperparameters, eps0, the total and what it covers, the test accuracy)."""
    problem: str

    @property
    def folder(self) -> str:
        return f"results/release/{self.problem}"

    @property
    def record(self) -> str:
        return f"{self.folder}/release.json"

    @property
    def model(self) -> str:
        return f"{self.folder}/model.npz"

    @property
    def candidates(self) -> str:
        return f"{self.folder}/candidates.parquet"

    @property
    def diagnostics(self) -> str:
        """K, the run time and the non-private reference: an experiment's (seeded randomness) only, kept
        private (not covered by the guarantee); a release under `randomness: os` writes none."""
        return f"{self.folder}/diagnostics.json"

    def files(self, diagnostics: bool = True) -> dict:
        """The release's files by name; `diagnostics`: with diagnostics.json (`ReleaseSettings.keeps_diagnostics`)."""
        return {"record": self.record, "model": self.model, "candidates": self.candidates,
                **({"diagnostics": self.diagnostics} if diagnostics else {})}


RELEASE = ReleaseFiles("{problem}")
