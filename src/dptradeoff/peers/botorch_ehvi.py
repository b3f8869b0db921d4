"""BoTorch's qLogNEHVI as DPareto's peer, set up as BoTorch's multi-objective tutorial does.

One `SingleTaskGP` per objective (a `ModelListGP`; Matérn 5/2 with ARD and priors, learned noise,
outputs standardised), on the same inputs as DPareto's GPs (the problem's domain mapped to the unit
cube, log scale where the parameter is searched on one) and the same outputs (log epsilon, logit
error; BoTorch maximises, so their negatives). `qLogNoisyExpectedHypervolumeImprovement` with the
observed inputs as baseline (`prune_baseline=True`, 128 Sobol QMC samples), reference point the
paper's anti-ideal point (epsilon 10, error 0.999: the worst acceptable values, as BoTorch's docs ask
of a reference point), maximised by `optimize_acqf` (10 restarts from 512 raw samples, q points
chosen sequentially), integers rounded afterwards. Torch's RNG is seeded per round under a lock.
"""
from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import numpy as np

from ..bo.transforms import InputScaler, error_to_gp, privacy_to_gp
from .base import TORCH_LOCK, GPPeer

# The paper's anti-ideal point in the maximised outputs (-log epsilon, -logit error).
REFERENCE = (-float(privacy_to_gp(10.0)), -float(error_to_gp(0.999)))


def skip_fused_kernel() -> None:
    """BoTorch 0.18's qLogNEHVI compiles a fused C++ kernel on first use (`-march=native`, ~40 s, with a
    file lock in ~/.cache/torch_extensions): a run killed while compiling leaves the lock behind and every
    later BoTorch round waits on it forever (seen here). Its pure-PyTorch path computes the same quantity
    (1.5-3x slower by BoTorch's account), so the kernel is marked as tried and not loaded."""
    from botorch.acquisition.multi_objective import logei

    logei._load_attempted = True
    logei._C = None


def skip_threadpool_scans() -> None:
    """BoTorch 0.18 wraps every scipy minimisation (model fit, acquisition search) in threadpoolctl's
    `threadpool_limits(1, "blas")`, which lists the loaded libraries with dl_iterate_phdr: that holds the
    dynamic loader's lock while its Python callback waits for the GIL, and a thread importing an
    extension module holds the GIL while dlopen waits for that lock. With the chains' rounds and
    evaluations as threads of one Snakemake process, a BoTorch round and a thread importing TensorFlow
    deadlocked that way (py-spy; a test run hung). BLAS is already on one thread in every process
    that runs this peer (`bo.chain_round.limit_blas_threads`, called here), which is all the context
    would do, so BoTorch's contexts are replaced by a no-op and nothing scans the libraries again."""
    from botorch.generation import gen
    from botorch.optim.utils import timeout

    from ..bo.chain_round import limit_blas_threads

    limit_blas_threads()
    for module in (gen, timeout):
        module.threadpool_limits = _blas_already_on_one_thread


def _blas_already_on_one_thread(limits=None, user_api=None):
    return contextlib.nullcontext()


@dataclass(frozen=True)
class BoTorchLogNEHVI(GPPeer):
    name = "botorch"
    settings = {"library": "botorch 0.18.1", "model": "ModelListGP of SingleTaskGP (Standardize)",
                "acquisition": "qLogNoisyExpectedHypervolumeImprovement", "prune_baseline": True, "mc_samples": 128,
                "reference": "epsilon 10, error 0.999", "num_restarts": 10, "raw_samples": 512,
                "objectives": ["-log epsilon", "-logit error"]}

    def _propose(self, problem, evals, q, seed):
        with TORCH_LOCK:
            import torch
            from botorch.acquisition.multi_objective.logei import qLogNoisyExpectedHypervolumeImprovement
            from botorch.exceptions.warnings import InputDataWarning
            from botorch.fit import fit_gpytorch_mll
            from botorch.models import ModelListGP, SingleTaskGP
            from botorch.models.transforms.outcome import Standardize
            from botorch.optim import optimize_acqf
            from botorch.sampling import SobolQMCNormalSampler
            from gpytorch.mlls import SumMarginalLogLikelihood

            torch.set_num_threads(1)
            skip_fused_kernel()
            skip_threadpool_scans()
            # the unit cube is the domain's; evaluated points outside it (Tables 3-4 accept ranges) stay
            # where they are, as DPareto's GPs see them, and BoTorch warns about each such fit
            with torch.random.fork_rng(), warnings.catch_warnings():
                warnings.simplefilter("ignore", InputDataWarning)
                torch.manual_seed(seed % 2**63)
                scaler = InputScaler(problem)
                x = torch.tensor(scaler.to_unit(evals[problem.names].to_numpy(float)), dtype=torch.float64)
                y = -torch.tensor(self.objectives(evals), dtype=torch.float64)
                models = [SingleTaskGP(x, y[:, i:i + 1], outcome_transform=Standardize(m=1)) for i in range(2)]
                model = ModelListGP(*models)
                fit_gpytorch_mll(SumMarginalLogLikelihood(model.likelihood, model))
                acquisition = qLogNoisyExpectedHypervolumeImprovement(
                    model=model, ref_point=list(REFERENCE), X_baseline=x, prune_baseline=True,
                    sampler=SobolQMCNormalSampler(sample_shape=torch.Size([128])))
                d = len(problem.domain)
                bounds = torch.stack([torch.zeros(d, dtype=torch.float64), torch.ones(d, dtype=torch.float64)])
                candidates, _ = optimize_acqf(acquisition, bounds=bounds, q=q, num_restarts=10, raw_samples=512,
                                              options={"batch_limit": 5, "maxiter": 200}, sequential=True)
            points = scaler.from_unit(candidates.detach().numpy())
        return [dict(zip(problem.names, np.atleast_1d(p))) for p in points]
