"""Tuning memory: what earlier tunes on the same target teach a new model's tune.

Every program bcd ever measured stays in the records store. When a `bcd` tune starts, the
memory (`recall.TuningMemory`) lists the earlier sessions of any model whose target is this
tune's, in the tune's own store and in any store the user names; for each new task it finds
the most similar remembered tasks (`similar.py`: same sketch, nearest shapes), whose best
programs are diffused into the task and measured first (tuning/bcd/plan.py), and the shared cost
model learns from their measurements before the first round (`pretrain.py`). The session
records which sessions it drew on, so a resume draws on the same.
"""
