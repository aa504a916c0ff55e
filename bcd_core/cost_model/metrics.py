"""How well a cost model ranks a batch it has not been trained on yet."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean rank), as Spearman needs."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2.0
        start = end + 1
    return ranks


def pairwise_accuracy(predicted: Sequence[float], measured: Sequence[float]) -> float | None:
    """Share of pairs with different measured values that the prediction orders the same way;
    a pair the prediction ties counts half (a search picks either one): counting ties as wrong
    put a model with a positive rank correlation below chance (0.5)."""
    p, m = np.asarray(predicted, float), np.asarray(measured, float)
    dp = np.sign(p[:, None] - p[None, :])
    dm = np.sign(m[:, None] - m[None, :])
    mask = np.triu(dm != 0, k=1)
    if not mask.any():
        return None
    agreement = np.where(dp[mask] == 0, 0.5, (dp[mask] == dm[mask]).astype(float))
    return float(agreement.mean())


def spearman(predicted: Sequence[float], measured: Sequence[float]) -> float | None:
    p, m = np.asarray(predicted, float), np.asarray(measured, float)
    if len(p) < 2:
        return None
    rp, rm = _ranks(p), _ranks(m)
    if rp.std() == 0 or rm.std() == 0:
        return None
    return float(np.corrcoef(rp, rm)[0, 1])


def topk_recall(predicted: Sequence[float], measured: Sequence[float], k: int | None = None) -> float | None:
    """Of the k truly best candidates, how many the model also puts in its top k."""
    p, m = np.asarray(predicted, float), np.asarray(measured, float)
    if len(p) == 0:
        return None
    k = k or max(1, len(p) // 4)
    true_top = set(np.argsort(-m, kind="mergesort")[:k].tolist())
    predicted_top = set(np.argsort(-p, kind="mergesort")[:k].tolist())
    return len(true_top & predicted_top) / k


def batch_metrics(predicted: Sequence[float], throughput: Sequence[float]) -> dict[str, float | None]:
    return {
        "samples": len(predicted),
        "pairwise_accuracy": pairwise_accuracy(predicted, throughput),
        "spearman": spearman(predicted, throughput),
        "topk_recall": topk_recall(predicted, throughput),
    }
