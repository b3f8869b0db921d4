"""The optimisers practitioners would otherwise use, as chain methods beside DPareto: Optuna's TPE
and GP samplers, BoTorch's qLogNEHVI and Syne Tune's MOASHA (`dpareto.methods`; docs in docs/front-quality.md)."""
from __future__ import annotations

from .base import Peer
from .botorch_ehvi import BoTorchLogNEHVI
from .moasha import MOASHAPeer
from .optuna_samplers import OptunaGP, OptunaTPE

PEERS: dict[str, Peer] = {peer.name: peer for peer in (OptunaTPE(), OptunaGP(), BoTorchLogNEHVI(), MOASHAPeer())}

__all__ = ["PEERS", "Peer", "OptunaTPE", "OptunaGP", "BoTorchLogNEHVI", "MOASHAPeer"]
