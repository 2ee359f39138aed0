"""What the assignments give the students' code (tests/classroom: test_exercises.py,
test_delegation.py)."""

from __future__ import annotations

import torch


def init_batch_norm_state(module: torch.nn.Module, num_features: int, eps: float, momentum) -> None:
    """What assignment 2 gives its ``BatchNorm.__init__``: eps, momentum, γ, β and the running statistics."""
    module.eps, module.momentum = eps, momentum
    module.weight = torch.nn.Parameter(torch.ones(num_features))
    module.bias = torch.nn.Parameter(torch.zeros(num_features))
    module.register_buffer("running_mean", torch.zeros(num_features))
    module.register_buffer("running_var", torch.ones(num_features))
    module.register_buffer("num_batches_tracked", torch.tensor(0))
