"""Optuna's samplers for several objectives as DPareto's peers.

Each round builds an in-memory study minimising (log epsilon, logit error), adds every evaluation
as a completed trial (`optuna.trial.create_trial`), and asks for q trials from a sampler seeded for
that round. Settings as Optuna's documentation recommends for these problems:
- `optuna-tpe`: `TPESampler(multivariate=True)` (the multivariate TPE that Optuna's docs and
  benchmarks recommend over the independent default; for several objectives it ranks trials by
  non-domination and hypervolume contribution); the shared k0 points replace its startup trials.
- `optuna-gp`: `GPSampler(deterministic_objective=False)`: a GP per objective with a learned noise
  (the utility is noisy), log expected hypervolume improvement for several objectives.
The distributions are the problem's domain (log scale where DPareto's GPs use one, integers as
IntDistribution). An evaluated point outside the domain (Tables 3-4 accept ranges exceed it, e.g.
adult learning rates up to 0.1 against 0.05) is given to the sampler at the domain's edge: Optuna
rejects a trial outside its distributions.
"""
from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

from ..problems.problem import Problem
from .base import TORCH_LOCK, GPPeer, Peer


def _optuna():
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


class OptunaPeer(Peer):
    uses_torch = False

    @abstractmethod
    def sampler(self, seed: int):
        """The Optuna sampler of one round, seeded."""

    def distributions(self, problem: Problem) -> dict:
        from optuna.distributions import FloatDistribution, IntDistribution

        return {p.name: IntDistribution(int(p.low), int(p.high), log=p.log) if p.integer
                else FloatDistribution(float(p.low), float(p.high), log=p.log) for p in problem.domain}

    def _propose(self, problem, evals, q, seed):
        optuna = _optuna()
        distributions = self.distributions(problem)
        values = self.objectives(evals)
        trials = []
        for (_, row), objective in zip(evals.iterrows(), values):
            params = self.typed(problem, {n: row[n] for n in problem.names})
            trials.append(optuna.trial.create_trial(params=params, distributions=distributions,
                                                    values=[float(v) for v in objective]))
        study = optuna.create_study(directions=["minimize", "minimize"], sampler=self.sampler(seed))
        study.add_trials(trials)
        if self.uses_torch:
            with TORCH_LOCK:
                import torch

                torch.set_num_threads(1)
                return [study.ask(distributions).params for _ in range(q)]
        return [study.ask(distributions).params for _ in range(q)]


@dataclass(frozen=True)
class OptunaTPE(OptunaPeer):
    name = "optuna-tpe"
    settings = {"library": "optuna 5.0.0", "sampler": "TPESampler", "multivariate": True,
                "objectives": ["log epsilon", "logit error"]}

    def sampler(self, seed):
        return _optuna().samplers.TPESampler(multivariate=True, seed=seed % 2**32)


@dataclass(frozen=True)
class OptunaGP(OptunaPeer, GPPeer):
    name = "optuna-gp"
    uses_torch = True
    settings = {"library": "optuna 5.0.0", "sampler": "GPSampler", "deterministic_objective": False,
                "objectives": ["log epsilon", "logit error"]}

    def sampler(self, seed):
        return _optuna().samplers.GPSampler(seed=seed % 2**32, deterministic_objective=False)
