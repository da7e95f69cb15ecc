"""Fitting the query adapter: a low-rank update of the query vector, trained with InfoNCE.

The embedding model stays frozen; only queries move. Given pairs of (query vector,
chunk vector), both L2-normalised as the model gives them, the adapter maps a query
q to normalise(q + (q U) V^T) and is trained so that each query's own chunk has the
highest cosine among the chunks of its batch (in-batch negatives, InfoNCE with a
fixed temperature; the loss all-MiniLM-L6-v2 itself was trained with). V starts at
zero, so the adapter starts as the identity, and a weight decay pulls U V^T back
toward it; the epoch with the best validation MRR is kept.

Everything is numpy in float64 with one seeded generator, so the same pairs and
settings give the same bytes on the same machine (BLAS kernels differ between CPUs,
so another machine may differ in the last bits; the shipped file carries its checksum).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ["AdapterFit", "TrainConfig", "apply_factors", "fit", "mrr"]

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """How the adapter is fitted."""

    rank: int = 32
    temperature: float = 0.05
    batch: int = 256
    epochs: int = 8
    learning_rate: float = 2e-3
    weight_decay: float = 1e-3
    # U's initial scale (times 1/sqrt(dim)); V starts at zero.
    init_scale: float = 1.0
    seed: int = 0
    # Batches drawn package by package (shuffled packages, then shuffled pairs, cut in order), so
    # a query's negatives are mostly its own package's functions: what a search within one project
    # must tell apart. Off: batches drawn from all pairs at random.
    grouped: bool = True


@dataclass(slots=True)
class AdapterFit:
    """The factors (U, V: dim x rank), the epoch they come from, and the history."""

    u: Floats
    v: Floats
    epoch: int
    history: list[dict[str, float]] = field(default_factory=list)

    def factors(self) -> npt.NDArray[np.float32]:
        """U and V stacked, float32 [2, dim, rank]: what the adapter file holds."""
        return np.stack([self.u, self.v]).astype(np.float32)


def apply_factors(
    queries: npt.NDArray[np.floating], u: npt.NDArray[np.floating], v: npt.NDArray[np.floating]
) -> Floats:
    """normalise(q + (q U) V^T) for each row q, in float64."""
    q = np.asarray(queries, dtype=np.float64)
    moved = q + (q @ np.asarray(u, dtype=np.float64)) @ np.asarray(v, dtype=np.float64).T
    out: Floats = moved / np.maximum(np.linalg.norm(moved, axis=1, keepdims=True), 1e-12)
    return out


def mrr(queries: npt.NDArray[np.floating], codes: npt.NDArray[np.floating], cutoff: int | None = None) -> float:
    """MRR of each query's own code (same row) among all codes by cosine (ties count against it)."""
    q = np.asarray(queries, dtype=np.float64)
    c = np.asarray(codes, dtype=np.float64)
    total = 0.0
    for start in range(0, len(q), 512):
        scores = q[start : start + 512] @ c.T
        own = scores[np.arange(len(scores)), np.arange(start, start + len(scores))]
        ranks = (scores >= own[:, None]).sum(axis=1)
        reciprocal = 1.0 / ranks
        if cutoff is not None:
            reciprocal[ranks > cutoff] = 0.0
        total += float(reciprocal.sum())
    return total / max(len(q), 1)


class _Adam:
    """Adam over a list of arrays, updated in place."""

    def __init__(self, params: list[Floats], rate: float) -> None:
        self.params = params
        self.rate = rate
        self.m = [np.zeros_like(p) for p in params]
        self.s = [np.zeros_like(p) for p in params]
        self.steps = 0

    def step(self, grads: list[Floats]) -> None:
        self.steps += 1
        b1, b2, eps = 0.9, 0.999, 1e-8
        for param, grad, mean, square in zip(self.params, grads, self.m, self.s, strict=True):
            np.multiply(mean, b1, out=mean)
            np.add(mean, (1 - b1) * grad, out=mean)
            np.multiply(square, b2, out=square)
            np.add(square, (1 - b2) * grad * grad, out=square)
            step = self.rate * (mean / (1 - b1**self.steps)) / (np.sqrt(square / (1 - b2**self.steps)) + eps)
            np.subtract(param, step, out=param)


def _batch_gradients(q: Floats, c: Floats, u: Floats, v: Floats, config: TrainConfig) -> tuple[float, Floats, Floats]:
    """InfoNCE loss of one batch (query -> its chunk among the batch's chunks) and its gradients in U and V."""
    h = q @ u
    moved = q + h @ v.T
    norm = np.linalg.norm(moved, axis=1, keepdims=True)
    qh = moved / norm
    logits = (qh @ c.T) / config.temperature
    logits -= logits.max(axis=1, keepdims=True)
    exp = np.exp(logits)
    probs = exp / exp.sum(axis=1, keepdims=True)
    n = len(q)
    loss = float(-np.log(probs[np.arange(n), np.arange(n)] + 1e-300).mean())
    d_logits = probs
    d_logits[np.arange(n), np.arange(n)] -= 1.0
    d_logits /= n
    d_qh = (d_logits @ c) / config.temperature
    d_moved = (d_qh - qh * (qh * d_qh).sum(axis=1, keepdims=True)) / norm
    d_v = d_moved.T @ h + config.weight_decay * v
    d_u = q.T @ (d_moved @ v) + config.weight_decay * u
    return loss, d_u, d_v


def _order(rng: np.random.Generator, groups: npt.NDArray[np.int64], grouped: bool) -> npt.NDArray[np.int64]:
    """One epoch's order of the training rows."""
    if not grouped:
        order: npt.NDArray[np.int64] = rng.permutation(len(groups))
        return order
    rows = [rng.permutation(np.flatnonzero(groups == g)) for g in rng.permutation(np.unique(groups))]
    return np.concatenate(rows).astype(np.int64)


def fit(
    queries: npt.NDArray[np.floating],
    codes: npt.NDArray[np.floating],
    config: TrainConfig = TrainConfig(),
    validation: tuple[npt.NDArray[np.floating], npt.NDArray[np.floating]] | None = None,
    groups: npt.NDArray[np.int64] | None = None,
) -> AdapterFit:
    """Train U, V on row-aligned (query, code) vectors; keep the epoch best on `validation` (else the last).

    `groups` (one integer per row: its package) is what `config.grouped` batches by.
    """
    q_all = np.asarray(queries, dtype=np.float64)
    c_all = np.asarray(codes, dtype=np.float64)
    if q_all.shape != c_all.shape or q_all.ndim != 2:
        raise ValueError(f"queries {q_all.shape} and codes {c_all.shape} must be the same [n, dim] shape")
    dim = q_all.shape[1]
    rng = np.random.default_rng(config.seed)
    u = rng.standard_normal((dim, config.rank)) * (config.init_scale / np.sqrt(dim))
    v = np.zeros((dim, config.rank))
    adam = _Adam([u, v], config.learning_rate)
    best = AdapterFit(u.copy(), v.copy(), 0)
    best_score = mrr(*validation) if validation is not None else -1.0
    history: list[dict[str, float]] = [{"epoch": 0, "loss": float("nan"), "validation_mrr": best_score}]
    for epoch in range(1, config.epochs + 1):
        order = _order(rng, groups if groups is not None else np.zeros(len(q_all), dtype=np.int64), config.grouped)
        losses: list[float] = []
        for start in range(0, len(order) - config.batch + 1, config.batch):
            rows = order[start : start + config.batch]
            loss, d_u, d_v = _batch_gradients(q_all[rows], c_all[rows], u, v, config)
            adam.step([d_u, d_v])
            losses.append(loss)
        score = mrr(apply_factors(validation[0], u, v), validation[1]) if validation is not None else float(epoch)
        history.append(
            {"epoch": epoch, "loss": float(np.mean(losses)) if losses else float("nan"), "validation_mrr": score}
        )
        if score > best_score:
            best, best_score = AdapterFit(u.copy(), v.copy(), epoch), score
    best.history = history
    return best
