"""Tuning a model, from the bottom up: `run.py` is the kernel every strategy runs on (the store
session, its tasks, bests, budget and events); `measure/` builds and times candidates (here or
behind TVM's RPC tracker); `steering.py`, `control.py` and `channel.py` carry the user's
requests into a running tune, and `steer_session.py` applies them to a stored one;
`continuation.py` decides whether a tune continues a session or starts a new one;
`metaschedule.py` is stock MetaSchedule and `bcd/` the Bayesian Code Diffusion strategy on top
of it; `driver.py` runs MetaSchedule's loop for them; `tune.py` ties import, session and
strategy together, and `engine_process.py` runs that in a process of its own. `options.py` and
`settings.py` say what a user can set.
"""
