"""Chapters 10 and 11's tiny transformer: small enough to train on one CPU thread in seconds.

A stack of ``depth`` blocks of self-attention and a two-layer MLP, each wrapped in a residual
connection, with the normalization layer in one of two places (Vaswani et al.'s original
**post-norm** or the **pre-norm** of GPT-2 and most later models):

    post:  x ← norm₁(x + attn(x));     x ← norm₂(x + mlp(x))
    pre:   x ← x + attn(norm₁(x));     x ← x + mlp(norm₂(x))      (and one final norm before the head)

Which layer normalizes is the caller's: ``norm`` is a function of the width ``d`` that returns a
module (``normlib.LayerNorm``, ``normlib.RMSNorm``, ``normlib.DyT``, …). ``qk_norm`` adds one more
per head to the queries and the keys before their dot product.

The task (:func:`reversal_batch`): read a sequence of random tokens and write it backwards, every
position predicting its token at once; the model must learn where to look, which is attention's job.
Chapter 11 also trains a **causal** model (``causal=True``: a position attends only to itself and the
positions before it) to predict each next token of :func:`chain_batch`'s made-up language, which
starts every sequence with a beginning-of-sequence token.
Everything is seeded and meant for float64, where a run gives the same numbers on every CPU to far
more digits than the chapters print (training amplifies rounding; float32 would not survive).

>>> import normlib
>>> model = TinyTransformer(vocab=8, length=6, d=16, heads=2, depth=2, norm=normlib.LayerNorm, placement="pre")
>>> tokens, targets = reversal_batch(3, vocab=8, length=6, generator=torch.Generator().manual_seed(0))
>>> model(tokens).shape, bool((targets == tokens.flip(1)).all())
(torch.Size([3, 6, 8]), True)
"""

from __future__ import annotations

import math
from typing import Callable, Dict, List, Optional

import torch
from torch import Tensor, nn

from normlib.messages import say

__all__ = ["Attention", "Block", "TinyTransformer", "reversal_batch", "chain_batch", "train", "largest_logit",
           "PLACEMENTS", "IGNORE"]

PLACEMENTS = ("post", "pre")
NormFactory = Callable[[int], nn.Module]


def _check_placement(placement: str) -> str:
    if placement not in PLACEMENTS:
        raise ValueError(say(en=f"placement must be one of {PLACEMENTS}, but got {placement!r}",
                             ko=f"placement는 {PLACEMENTS} 중 하나여야 하는데, 받은 값은 {placement!r}입니다."))
    return placement


class Attention(nn.Module):
    """Multi-head self-attention written out: q, k, v, scores q·kᵀ/√d_head, softmax, weighted sum.
    With ``causal``, the scores of the positions after the query's are −∞ before the softmax.

    With ``qk_norm`` (a norm factory), each head's queries and keys are normalized over d_head
    before the dot product (QK-normalization). ``last_logits`` keeps the latest scores (detached),
    so a chapter can watch how large they grow.
    """

    def __init__(self, d: int, heads: int, qk_norm: Optional[NormFactory] = None,
                 causal: bool = False) -> None:
        super().__init__()
        self.causal = bool(causal)
        if d % heads:
            raise ValueError(say(en=f"the width d must split evenly into heads, but got d={d} and heads={heads}",
                                 ko=f"폭 d는 헤드 수로 나누어떨어져야 하는데, 받은 값은 d={d}, heads={heads}입니다."))
        self.heads, self.d_head = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.q_norm = qk_norm(self.d_head) if qk_norm else None
        self.k_norm = qk_norm(self.d_head) if qk_norm else None
        self.last_logits: Optional[Tensor] = None

    def forward(self, x: Tensor) -> Tensor:
        n, t, d = x.shape
        q, k, v = self.qkv(x).view(n, t, 3, self.heads, self.d_head).permute(2, 0, 3, 1, 4)  # each (n, heads, t, d_head)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        logits = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)     # (n, heads, t, t)
        if self.causal:                                                # a position sees itself and earlier ones
            logits = logits.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), -math.inf)
        self.last_logits = logits.detach()
        mixed = torch.softmax(logits, dim=-1) @ v                      # (n, heads, t, d_head)
        return self.out(mixed.transpose(1, 2).reshape(n, t, d))


class Block(nn.Module):
    """One transformer block: attention and an MLP (d → 4d → d, GELU), each in a residual connection,
    with ``norm1`` and ``norm2`` placed ``"post"`` (after each sum) or ``"pre"`` (before each branch)."""

    def __init__(self, d: int, heads: int, norm: NormFactory, placement: str,
                 qk_norm: Optional[NormFactory] = None, causal: bool = False) -> None:
        super().__init__()
        self.placement = _check_placement(placement)
        self.attn = Attention(d, heads, qk_norm, causal)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.norm1, self.norm2 = norm(d), norm(d)

    def forward(self, x: Tensor) -> Tensor:
        if self.placement == "post":
            x = self.norm1(x + self.attn(x))       # the original: normalize the sum
            return self.norm2(x + self.mlp(x))
        x = x + self.attn(self.norm1(x))           # pre-norm: the residual path is never normalized
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    """Token and position embeddings, ``depth`` :class:`Block`\\ s, (pre-norm only) a final norm, and a
    linear head to ``vocab`` logits per position. ``final_norm=False`` drops the final norm of a
    pre-norm model, to show what it is for."""

    def __init__(self, vocab: int, length: int, d: int, heads: int, depth: int, norm: NormFactory,
                 placement: str, qk_norm: Optional[NormFactory] = None, final_norm: bool = True,
                 causal: bool = False) -> None:
        super().__init__()
        _check_placement(placement)
        self.embed = nn.Embedding(vocab, d)
        self.position = nn.Parameter(torch.randn(length, d))
        self.blocks = nn.ModuleList(Block(d, heads, norm, placement, qk_norm, causal) for _ in range(depth))
        self.final = norm(d) if placement == "pre" and final_norm else nn.Identity()
        self.head = nn.Linear(d, vocab)
        for module in self.modules():             # as Xiong et al. assume (Vaswani et al. do not say):
            if isinstance(module, nn.Linear):     # Xavier-uniform weights, zero biases
                nn.init.xavier_uniform_(module.weight)
                nn.init.zeros_(module.bias)

    def stream(self, tokens: Tensor) -> Tensor:
        """The residual stream after the last block: what the final norm (pre-norm) or the head gets."""
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return x

    def forward(self, tokens: Tensor) -> Tensor:
        return self.head(self.final(self.stream(tokens)))


def largest_logit(model: nn.Module) -> float:
    """The largest |attention logit| q·k/√d_head of ``model``'s latest forward pass, over every
    block and head (each :class:`Attention` keeps its ``last_logits``)."""
    kept = [m.last_logits for m in model.modules() if isinstance(m, Attention) and m.last_logits is not None]
    if not kept:
        raise ValueError("largest_logit needs a model that has run forward at least once, but got one "
                         "with no attention logits kept")
    return max(t.abs().max().item() for t in kept)


def reversal_batch(batch: int, vocab: int, length: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """``batch`` sequences of ``length`` random tokens in ``[0, vocab)`` and their reversals."""
    tokens = torch.randint(vocab, (batch, length), generator=generator)
    return tokens, tokens.flip(1)


IGNORE = -100   # a target that no loss or accuracy counts (torch's cross-entropy skips it too)


def chain_batch(batch: int, vocab: int, length: int, generator: torch.Generator, mark: float = 0.1,
                back: int = 3) -> tuple[Tensor, Tensor]:
    """``batch`` sequences of a made-up language, and the next token of each position as its target.

    Of the ``vocab`` tokens, the last is **BOS**, which begins every sequence, the one before it is a
    **marker**, and the other ``vocab − 2`` are words. After BOS comes a random word; each word is
    followed by its one fixed successor (a permutation of the words, the same in every call), except
    that with probability ``mark`` a marker comes instead, and the token after a marker repeats the
    token ``back`` places before the marker. So most next tokens follow from the current token alone
    and only the ones after a marker need to look back. Targets: position t's is the token at t + 1;
    the last position has none (``IGNORE``).

    >>> tokens, targets = chain_batch(2, vocab=6, length=6, generator=torch.Generator().manual_seed(0))
    >>> bool((tokens[:, 0] == 5).all()), bool((targets[:, :-1] == tokens[:, 1:]).all()), targets[:, -1].tolist()
    (True, True, [-100, -100])
    """
    if vocab < 3 or length < 2 or back < 1 or not 0 <= mark < 1:
        got = f"vocab={vocab}, length={length}, back={back}, mark={mark}"
        raise ValueError(say(en=f"chain_batch needs vocab ≥ 3, length ≥ 2, back ≥ 1 and 0 ≤ mark < 1, but got {got}",
                             ko=f"chain_batch에는 vocab ≥ 3, length ≥ 2, back ≥ 1, 0 ≤ mark < 1이 필요한데 받은 값은 {got}입니다."))
    words, marker, bos = vocab - 2, vocab - 2, vocab - 1
    successor = torch.randperm(words, generator=torch.Generator().manual_seed(0))
    tokens = torch.empty(batch, length, dtype=torch.long)
    tokens[:, 0] = bos
    tokens[:, 1:2] = torch.randint(words, (batch, 1), generator=generator)
    for t in range(2, length):
        before = tokens[:, t - 1]
        after = successor[before.clamp(max=words - 1)]
        if t - 1 - back >= 1:                       # after a marker: the token `back` places before it
            after = torch.where(before == marker, tokens[:, t - 1 - back], after)
        draw = torch.rand(batch, generator=generator) < mark
        if t - back >= 1 and t < length - 1:        # a marker needs a token to point at and a place to copy to
            after = torch.where(draw & (before != marker), torch.full_like(after, marker), after)
        tokens[:, t] = after
    targets = torch.cat([tokens[:, 1:], torch.full((batch, 1), IGNORE, dtype=torch.long)], dim=1)
    return tokens, targets


def train(model: nn.Module, steps: int, lr: float, warmup: int = 0, batch: int = 32, seed: int = 0,
          every: Optional[Callable[[int, nn.Module], None]] = None,
          task: Callable[..., tuple[Tensor, Tensor]] = reversal_batch,
          optimizer: Callable[..., torch.optim.Optimizer] = torch.optim.Adam) -> Dict[str, List[float]]:
    """Train ``model`` on ``task`` (:func:`reversal_batch` unless given, or :func:`chain_batch`) with Adam (β = 0.9, 0.98, as the original transformer;
    ``optimizer`` swaps in another class that takes the same arguments, such as ``torch.optim.RAdam``)
    for ``steps`` steps: the learning rate rises linearly from lr/warmup to ``lr`` over the first
    ``warmup`` steps (none when 0), then stays. Returns the loss (cross-entropy per token) and the
    accuracy (share of the targets right, ``IGNORE`` ones left out) of every step; ``every(step, model)``
    runs after each update.

    The batches come from a generator seeded with ``seed``, so two models trained with the same seed
    see the same data. A loss that is not finite ends the run; the lists then stop there."""
    embed = next(m for m in model.modules() if isinstance(m, nn.Embedding))
    vocab, length = embed.num_embeddings, model.position.shape[0]
    generator = torch.Generator().manual_seed(seed)
    optimizer = optimizer(model.parameters(), lr=lr, betas=(0.9, 0.98), foreach=True)
    history: Dict[str, List[float]] = {"loss": [], "accuracy": []}
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = lr * min(1.0, (step + 1) / warmup) if warmup else lr
        tokens, targets = task(batch, vocab, length, generator)
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1), ignore_index=IGNORE)
        if not torch.isfinite(loss):
            break
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history["loss"].append(loss.item())
        counted = targets != IGNORE
        history["accuracy"].append((logits.argmax(-1) == targets)[counted].double().mean().item())
        if every is not None:
            every(step, model)
    return history
