"""The config's `release` section as typed settings: which problem is released, where its front was
characterised (a tuning split of the training rows, or a problem on data declared public), the
private rows' roles, the total (epsilon, delta) and the private selection."""
from __future__ import annotations

from dataclasses import dataclass

from .. import UserError
from ..seeds import derive_seed

TUNING_SUFFIX = "-tuning"


@dataclass(frozen=True)
class SplitTuning:
    """The front is characterised on `fraction` of the training rows, which are then given up."""
    fraction: float
    holdout: float
    protects_every_row = False

    def tuning_problem(self, problem: str) -> str:
        return problem + TUNING_SUFFIX

    def describe(self) -> str:
        return (f"a tuning split of {self.fraction:g} of the training rows: those rows are given up and get no "
                f"protection; the test rows were not used by the tuning")


@dataclass(frozen=True)
class PublicTuning:
    """The front is that of another problem, trained on data the user declares public."""
    problem: str
    protects_every_row = True

    def tuning_problem(self, problem: str) -> str:
        return self.problem

    def describe(self) -> str:
        return f"the front of {self.problem}, whose data the config declares public (not protected, not counted)"


@dataclass(frozen=True)
class PriorTuning:
    """No tuning rows: the selection runs on the private rows over `candidates` settings drawn from the
    domain's prior (the random-sampling distributions), before any data is read (Papernot & Steinke 2022)."""
    candidates: int
    protects_every_row = True

    def tuning_problem(self, problem: str) -> None:
        return None

    def describe(self) -> str:
        return (f"none: the search runs on the private rows, over {self.candidates} settings drawn from the domain's "
                f"prior before any data is read, and its privacy cost is inside the total")


@dataclass(frozen=True)
class SubsampledTuning(PriorTuning):
    """The prior's search run on a secret random `subsample` of the private rows, and the chosen setting
    trained once more on every private row (Koskela & Kulkarni 2023); both are inside the total."""
    subsample: float

    def describe(self) -> str:
        return (f"none: the search runs on a secret random {self.subsample:g} of the private rows, over {self.candidates} "
                f"settings drawn from the domain's prior before any data is read; the chosen setting is then trained on "
                f"every private row; the search and that training are inside the total")


PRIVATE_TUNING = {"prior": PriorTuning, "subsampled": SubsampledTuning}
PRIVATE_DEFAULTS = {"method": "subsampled", "candidates": 32, "subsample": 0.1}


@dataclass(frozen=True)
class RandomStopping:
    """Papernot & Steinke's repeat-and-select: K ~ TNB(eta, gamma) trials with E[K] = mean_trials."""
    eta: float
    mean_trials: float

    def describe(self) -> str:
        return f"random stopping (Papernot & Steinke 2022): K ~ truncated negative binomial, eta = {self.eta:g}, E[K] = {self.mean_trials:g}"


@dataclass(frozen=True)
class CandidateSettings:
    """At most `max` front points, and `perturbations` jittered copies of each (log-scale jitter up to `scale`)."""
    max: int
    perturbations: int
    scale: float


@dataclass(frozen=True)
class ReleaseSettings:
    problem: str
    tuning: SplitTuning | PublicTuning | PriorTuning | SubsampledTuning
    validation: float        # share of the private rows the DP score is measured on
    epsilon: float           # the total: every trial's training and score, and the selection
    delta: float
    selection: RandomStopping
    score_noise: float       # sd of the Gaussian noise on the validation accuracy
    candidates: CandidateSettings
    seed: int
    randomness: str = "config-seed"   # or "os": every draw of the selection and its trainings from AES-CTR keyed by the OS

    @property
    def tuning_problem(self) -> str | None:
        """The problem whose front the candidates come from; None where the tuning is private."""
        return self.tuning.tuning_problem(self.problem)

    @property
    def keeps_diagnostics(self) -> bool:
        """Whether the release writes diagnostics.json (K, the run time, a non-private reference): an
        experiment's (seeded) only; under `os` nothing it writes depends on K (docs/release.md)."""
        return self.randomness != "os"

    @classmethod
    def from_config(cls, config: dict, **overrides) -> "ReleaseSettings":
        """Settings of `config['release']`, with `overrides` (problem, epsilon, delta) from the command line."""
        release = {**config["release"], **{k: v for k, v in overrides.items() if v is not None}}
        tuning = release["tuning"]
        if tuning == "private":
            tuning = {"private": PRIVATE_DEFAULTS["method"]}
        if "split" in tuning:
            tuning = SplitTuning(float(tuning["split"]), float(tuning.get("holdout", 0.2)))
        elif "private" in tuning:
            tuning = private_tuning(tuning)
        else:
            tuning = PublicTuning(str(tuning["public"]))
        selection = release["selection"]
        candidates = release["candidates"]
        return cls(problem=str(release["problem"]), tuning=tuning, validation=float(release["validation"]),
                   epsilon=float(release["epsilon"]), delta=float(release["delta"]),
                   selection=RandomStopping(float(selection["eta"]), float(selection["mean_trials"])),
                   score_noise=float(release["score_noise"]),
                   candidates=CandidateSettings(int(candidates["max"]), int(candidates["perturbations"]),
                                                float(candidates["scale"])),
                   seed=int(config["seed"]), randomness=str(release.get("randomness", "config-seed")))

    def split_seed(self) -> int:
        """The seed of the tuning/private split: the config seed and the problem, nothing of the data."""
        return derive_seed(self.seed, "release-split", self.problem)


def private_tuning(tuning: dict) -> PriorTuning | SubsampledTuning:
    """`release.tuning: {private: prior | subsampled, candidates: N, subsample: s}`, defaults filled in."""
    method = tuning["private"]
    if method not in PRIVATE_TUNING:
        raise UserError(f"release.tuning.private is {method!r}; choose one of {', '.join(PRIVATE_TUNING)}.")
    candidates = int(tuning.get("candidates", PRIVATE_DEFAULTS["candidates"]))
    if method == "prior":
        if "subsample" in tuning:
            raise UserError("release.tuning.subsample is set, but the private tuning is prior, which uses every private "
                            "row; drop subsample, or set private: subsampled.")
        return PriorTuning(candidates)
    return SubsampledTuning(candidates, float(tuning.get("subsample", PRIVATE_DEFAULTS["subsample"])))


def derived_problem_entries(config: dict) -> dict:
    """The `problems:` entry of the tuning problem a split release needs (`<problem>-tuning`: the
    problem's own entry, on the tuning rows), or nothing. `config.check` adds it to the config."""
    if "release" not in config:
        return {}
    settings = ReleaseSettings.from_config(config)
    if not isinstance(settings.tuning, SplitTuning):
        return {}
    base = dict(config.get("problems", {}).get(settings.problem, {}))
    base.pop("grids", None)
    base.pop("queries", None)
    if "rows" in base:
        raise UserError(f"release.problem is {settings.problem}, itself a tuning split; name the problem it splits.")
    rows = {"of": settings.problem, "fraction": settings.tuning.fraction, "seed": settings.split_seed(),
            "part": "tuning", "holdout": settings.tuning.holdout}
    return {settings.tuning_problem: {**base, "rows": rows}}
