"""The reference both trainer benchmarks measure against: Opacus's PrivacyEngine, plain usage."""
from __future__ import annotations

import time
import warnings

import numpy as np
import torch


def opacus_examples_per_second(model: torch.nn.Module, loss_fn, x: np.ndarray, y: np.ndarray, lot: int,
                               noise: float, clip: float, seconds: float) -> float:
    """Train with Opacus's PrivacyEngine (SGD, same lot size, clip and noise) for about `seconds`."""
    from opacus import PrivacyEngine

    warnings.filterwarnings("ignore")
    data = torch.utils.data.TensorDataset(torch.as_tensor(x), torch.as_tensor(y))
    loader = torch.utils.data.DataLoader(data, batch_size=lot, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    engine = PrivacyEngine(accountant="rdp")
    model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                                   noise_multiplier=noise, max_grad_norm=clip)
    seen, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for xb, yb in loader:
            optimizer.zero_grad()
            loss_fn(model(xb), yb).backward()
            optimizer.step()
            seen += len(xb)
            if time.perf_counter() - start >= seconds:
                break
    return seen / (time.perf_counter() - start)
