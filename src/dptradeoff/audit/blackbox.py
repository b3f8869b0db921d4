"""Black-box audits: lower bounds on epsilon from trained models alone, for any oracle with the release
interface (release/trainers.py) and one more method,

    losses(model, data) -> array          the per-example loss of the model on data.x_test / data.y_test
                                          (lower: more likely a training row)

The canaries are input-space canaries, the usual black-box kind: rows of the (prepared) training data
with their label changed to another label present in the data (mislabelled examples, which a model fits
only by memorising them). A canary's rows leave the rest of the data. Its neighbouring dataset follows the
relation the oracle states in `neighbouring`:

- replace-one (the built-ins: n fixed): the canary's slot holds a filler row instead. `filler="original"`
  (default) is the canary's own row with its true label, the replace-one neighbour whose gradient points
  opposite the canary's, so the canary's loss moves most; `filler="copy"` is a copy of a random other row.
- add/remove-one (e.g. Opacus's Poisson sampling): the canary is simply absent.

Two audits:

- `one_run`: one training, m canaries each included independently with probability 1/2; the auditor
  guesses "in" for the r/2 canaries of lowest loss and "out" for the r/2 of highest, abstains on the
  rest, and the count of right guesses gives epsilon_lb by Steinke, Nasr & Jagielski's bound
  (`one_run.one_run_epsilon`). Cheap, and conservative: a correct DP-SGD gives epsilon_lb far below its
  proven epsilon, a broken one (a far weaker noise than claimed) above it.
- `many_runs`: one canary, `runs` trainings with it and `runs` with its neighbour; the canary's
  score -loss of each model goes to `bounds.clopper_pearson` (assumption-free, the one to quote) and
  `bounds.gaussian_fit`.

Every audit returns `AuditResult`s: epsilon_lb at `confidence` and `delta`, and what it cost.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from .. import UserError
from . import bounds
from .one_run import CONFIDENCE, fdp_one_run_epsilon, one_run_epsilon

REPLACE_ONE, ADD_REMOVE = "replace-one", "add/remove-one"
FILLERS = ("original", "copy")
ONE_RUN = "one-run (Steinke, Nasr & Jagielski 2023)"

REQUIRED = {"train": "train(point, data, rng) returning the trained model",
            "losses": "losses(model, data) returning the model's per-example loss on data.x_test/data.y_test "
                      "(lower = more likely a training row)"}


@dataclass(frozen=True)
class AuditResult:
    """epsilon_lb: the training is not (epsilon, delta)-DP for any epsilon < epsilon_lb, at `confidence`."""
    epsilon_lb: float
    method: str              # ONE_RUN, "many runs: clopper-pearson" or "many runs: gaussian fit"
    trainings: int
    canaries: int
    guesses: int | None      # one-run only: guesses made (the rest abstained) and how many were right
    correct: int | None
    confidence: float
    delta: float
    neighbouring: str        # REPLACE_ONE or ADD_REMOVE: how a canary's slot is left when it is out
    detail: str
    training_rows: int | None = None   # one-run: the rows the training had (the proven epsilon is at that n)
    epsilon_lb_fdp: float | None = None   # one-run: the f-DP bound of the same guesses (`one_run.fdp_one_run_epsilon`)

    def as_dict(self) -> dict:
        return asdict(self)


def one_run(target, point: dict, data, rng: np.random.Generator, *, canaries: int = 1000, guesses: int = 100,
            delta: float, confidence: float = CONFIDENCE, neighbouring: str | None = None,
            filler: str = "original") -> AuditResult:
    """One training with `canaries` canaries, each in with probability 1/2; `guesses` guesses from the
    canaries' losses (half "in", half "out"); epsilon_lb by `one_run_epsilon` (module doc). `target` is a
    problem or an oracle; `data` its prepared data (the training rows the canaries come from)."""
    oracle, name = _resolve(target)
    relation = _relation(oracle, name, neighbouring)
    _check_common(data, name, delta, confidence, filler)
    m, r = _whole(canaries, "canaries"), _whole(guesses, "guesses")
    if not 1 <= r <= m <= data.n_train - 1:
        raise UserError(f"A one-run audit of {name} needs 1 <= guesses <= canaries <= training rows - 1 = "
                        f"{data.n_train - 1}, got guesses={guesses}, canaries={canaries}.")
    chosen, labels, pool = _canaries(data, m, rng)
    included = rng.random(m) < 0.5
    trained = _training_data(data, pool, chosen, labels, included, relation, filler, rng)
    model = _train(oracle, name, point, trained, rng)
    loss = _losses(oracle, name, model, data, chosen, labels)
    order = np.lexsort((rng.random(m), loss))          # ascending loss, ties in random order
    k_in = (r + 1) // 2
    guess_in, guess_out = order[:k_in], order[m - (r - k_in):]
    correct = int(included[guess_in].sum() + (~included[guess_out]).sum())
    return AuditResult(one_run_epsilon(correct, r, m, delta, confidence), ONE_RUN, 1, m, r, correct, confidence,
                       delta, relation,
                       f"{int(included.sum())} of {m} canaries in; {k_in} guessed in (lowest losses), {r - k_in} "
                       f"out (highest): {correct} of {r} right; {trained.n_train} training rows",
                       training_rows=trained.n_train,
                       epsilon_lb_fdp=fdp_one_run_epsilon(correct, r, m, delta, confidence))


def many_runs(target, point: dict, data, rng: np.random.Generator, *, runs: int = 100, delta: float,
              confidence: float = CONFIDENCE, neighbouring: str | None = None, filler: str = "original",
              canary: int | None = None) -> tuple[AuditResult, AuditResult]:
    """`runs` trainings with one canary (training row `canary`, else a random one, mislabelled) and `runs`
    with its neighbour; (the Clopper-Pearson result, the Gaussian-fit result) of the canary's -loss."""
    oracle, name = _resolve(target)
    relation = _relation(oracle, name, neighbouring)
    _check_common(data, name, delta, confidence, filler)
    runs = _whole(runs, "runs")
    if runs < 4:
        raise UserError(f"A many-runs audit of {name} needs runs >= 4 (trainings per dataset), got {runs}.")
    if data.n_train < 2:
        raise UserError(f"A many-runs audit of {name} needs at least 2 training rows, got {data.n_train}.")
    if canary is not None and not (isinstance(canary, (int, np.integer)) and 0 <= canary < data.n_train):
        raise UserError(f"canary must be the index of a training row, 0 to {data.n_train - 1}, got {canary!r}.")
    chosen, labels, pool = _canaries(data, 1, rng, None if canary is None else [int(canary)])
    fill = rng.choice(pool, size=1) if filler == "copy" else filler   # one fixed neighbour for all runs
    scores = {True: [], False: []}
    for _ in range(runs):
        for inside in (True, False):
            trained = _training_data(data, pool, chosen, labels, np.array([inside]), relation, fill, rng)
            model = _train(oracle, name, point, trained, rng)
            scores[inside].append(-_losses(oracle, name, model, data, chosen, labels, finite=True)[0])
    common = dict(trainings=2 * runs, canaries=1, guesses=None, correct=None, confidence=confidence, delta=delta,
                  neighbouring=relation)
    where = f"canary: training row {int(chosen[0])}, label {data.y_train[chosen[0]]} -> {labels[0]}; "
    cp = bounds.clopper_pearson(scores[True], scores[False], delta, confidence, rng)
    gf = bounds.gaussian_fit(scores[True], scores[False], delta, confidence)
    return (AuditResult(cp.epsilon_lb, "many runs: clopper-pearson", detail=where + cp.detail, **common),
            AuditResult(gf.epsilon_lb, "many runs: gaussian fit", detail=where + gf.detail, **common))


# --- the pieces ------------------------------------------------------------------------------------------

def _resolve(target):
    """(the object whose methods are called, a name for messages): a problem's oracle, or the object."""
    if hasattr(target, "oracle") and hasattr(target, "domain"):
        from ..release.trainers import oracle_target

        oracle, name = oracle_target(target), f"the oracle of {target.name}"
    else:
        oracle, name = target, f"the oracle {type(target).__name__}"
    for method, signature in REQUIRED.items():
        if not callable(getattr(oracle, method, None)):
            raise UserError(f"{name[0].upper()}{name[1:]} has no {method}() method, which a black-box audit needs: "
                            f"add {signature} (src/dptradeoff/audit/blackbox.py).")
    return oracle, name


def _relation(oracle, name: str, stated: str | None) -> str:
    text = str(stated if stated is not None else getattr(oracle, "neighbouring", "")).lower()
    add_remove, replace_one = "add" in text and "remove" in text, "replace" in text
    if add_remove != replace_one:
        return ADD_REMOVE if add_remove else REPLACE_ONE
    raise UserError(f"A black-box audit of {name} needs its neighbouring relation, which reads {text!r}; give the "
                    f"oracle neighbouring = 'replace-one' or 'add/remove-one' (or pass neighbouring=).")


def _check_common(data, name: str, delta, confidence, filler) -> None:
    if data is None or not all(hasattr(data, a) for a in ("x_train", "y_train", "x_test", "y_test")):
        raise UserError(f"A black-box audit of {name} needs its prepared data (x_train, y_train, x_test, y_test), "
                        f"got {type(data).__name__}; give the problem a dataset.")
    if len(np.unique(data.y_train)) < 2:
        raise UserError(f"A black-box audit of {name} mislabels canaries, which needs at least two labels in the "
                        f"training data; it has {len(np.unique(data.y_train))}.")
    if not (isinstance(delta, (int, float)) and 0 <= delta < 1):
        raise UserError(f"delta must be a number in [0, 1) for an audit, got {delta!r}.")
    if not (isinstance(confidence, (int, float)) and 0 < confidence < 1):
        raise UserError(f"confidence must be a number in (0, 1) for an audit, got {confidence!r}.")
    if filler not in FILLERS:
        raise UserError(f"filler must be one of {', '.join(FILLERS)}, got {filler!r}.")


def _whole(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise UserError(f"{what} must be a whole number, got {value!r}.")
    return int(value)


def _canaries(data, m: int, rng, chosen=None):
    """(the canaries' training rows, their new labels, the other rows): each new label drawn uniformly
    from the labels present in the data other than the row's own."""
    n = data.n_train
    chosen = np.asarray(rng.choice(n, size=m, replace=False) if chosen is None else chosen)
    present = np.unique(data.y_train)
    own = np.searchsorted(present, data.y_train[chosen])
    labels = present[(own + rng.integers(1, len(present), size=m)) % len(present)]
    return chosen, labels.astype(data.y_train.dtype), np.setdiff1d(np.arange(n), chosen)


def _training_data(data, pool, chosen, labels, included, relation: str, filler, rng):
    """The data one training sees: the other rows, then each canary's slot (module doc), shuffled.
    `filler` is "original", "copy" (a random other row for each slot) or the rows to copy."""
    x, y = data.x_train, data.y_train
    if relation == REPLACE_ONE:
        if isinstance(filler, str):
            filler = chosen if filler == "original" else rng.choice(pool, size=len(chosen))
        rows, slot_labels = np.where(included, chosen, filler), np.where(included, labels, y[filler])
    else:
        rows, slot_labels = chosen[included], labels[included]
    order = rng.permutation(len(pool) + len(rows))
    return replace(data, x_train=np.concatenate([x[pool], x[rows]])[order],
                   y_train=np.concatenate([y[pool], slot_labels]).astype(y.dtype)[order])


def _train(oracle, name: str, point, data, rng):
    try:
        return oracle.train(point, data, rng)
    except UserError:
        raise
    except Exception as exc:
        raise UserError(f"The train() of {name} raised for {point} during an audit ({type(exc).__name__}: {exc}); "
                        f"fix it.") from exc


def _losses(oracle, name: str, model, data, chosen, labels, finite: bool = False) -> np.ndarray:
    """The model's losses on the canaries (their rows with their new labels), checked."""
    probe = replace(data, x_test=data.x_train[chosen], y_test=labels)
    try:
        out = oracle.losses(model, probe)
    except UserError:
        raise
    except Exception as exc:
        raise UserError(f"The losses() of {name} raised during an audit ({type(exc).__name__}: {exc}); fix it.") \
            from exc
    if hasattr(out, "detach"):
        out = out.detach().cpu().numpy()
    out = np.asarray(out, dtype=float)
    if out.shape != (len(chosen),):
        got = f"an array of shape {out.shape}"
    elif np.isnan(out).any() or (finite and not np.isfinite(out).all()):
        got = "NaN values" if np.isnan(out).any() else "infinite values"
    else:
        return out
    raise UserError(f"The losses() of {name} must return one {'finite ' if finite else ''}number per row of "
                    f"data.x_test ({len(chosen)} here), but returned {got}; fix it.")
