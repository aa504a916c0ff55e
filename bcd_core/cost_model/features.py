"""The cost model's features, extracted once per program.

MetaSchedule's XGBoost model extracts per-store features of every candidate it scores, and
extracting them (replaying the schedule's module through TIR analyses) is most of what a
prediction costs. An evolution scores its population after each of its generations, and many
programs come back: the unmutated survivors of a generation, the measured best programs that
seed every round's population, and the batch the model then learns from, which it scored just
before. A program's features depend on its module alone, so they are kept by the module's
structural hash and a program seen again costs a hash instead of an extraction. The features are
the same bits either way, so the model's scores, and the search, do not change.
"""

from __future__ import annotations

from collections import OrderedDict

import tvm
import tvm_ffi
from tvm.ir.utils import derived_object
from tvm.s_tir import meta_schedule as ms

# Programs whose features are kept, the least recently used dropped first. A round scores a
# few hundred programs and seeds the next from the task's best measured ones, so this holds
# many rounds of every task, at a few kilobytes of features a program.
CAPACITY = 10_000


@derived_object
class RememberedFeatures(ms.feature_extractor.PyFeatureExtractor):
    """`inner`'s features (MetaSchedule's PerStoreFeature by default), each program's extracted
    once; `hits` and `extracted` count what it saved."""

    def __init__(self, inner: ms.feature_extractor.FeatureExtractor | None = None, capacity: int = CAPACITY) -> None:
        super().__init__()
        self.inner = inner or ms.feature_extractor.PerStoreFeature()
        self.capacity = capacity
        self.kept: OrderedDict[int, tvm.runtime.Tensor] = OrderedDict()
        self.hits = 0
        self.extracted = 0

    def extract_from(self, context: ms.TuneContext, candidates: list[ms.MeasureCandidate]) -> list[tvm.runtime.Tensor]:
        keys = [int(tvm_ffi.structural_hash(candidate.sch.mod)) for candidate in candidates]
        new: dict[int, ms.MeasureCandidate] = {}
        for key, candidate in zip(keys, candidates, strict=True):
            if key not in self.kept:
                new.setdefault(key, candidate)
        if new:
            features = self.inner.extract_from(context, list(new.values()))
            self.kept.update(zip(new, features, strict=True))
            self.extracted += len(new)
        self.hits += len(keys) - len(new)
        found = []
        for key in keys:
            self.kept.move_to_end(key)
            found.append(self.kept[key])
        while len(self.kept) > self.capacity:
            self.kept.popitem(last=False)
        return found
