"""Whether a tune continues a stored session or starts a new one: the one rule that `bcd tune`,
the dashboard's Tune and Resume, and the engine itself follow.

A tune names a session by model, target, strategy and settings. Asked for nothing in
particular, it continues the newest such session unless that one is complete: a completed
session is neither tuned again nor silently replaced, the user is told and starts a new one on
purpose (`--new-session`, or saying yes in the dashboard). Resuming a named session that is
complete tunes the tasks skipped in it before a measurement, if any: un-skipping is decided
here too, and the engine applies it (`apply_decision`) once it has checked the session.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from bcd_core.errors import BcdError
from bcd_core.records.states import SessionStatus
from bcd_core.records.store import RecordStore
from bcd_core.records.timing import PLAIN_LAYOUT, session_layout
from bcd_core.tuning.options import AUTO_LAYOUT, LAYOUTS, STOCK
from bcd_core.tuning.settings import TuneSettings

# Said wherever a session cannot go on: the dashboard's and the terminal's way alike.
NEW_SESSION_ADVICE = "start a new session (Tune in the dashboard, `bcd tune --new-session`)"


class Wish(StrEnum):
    """What the user asked for."""

    DEFAULT = "default"  # tune: continue what these settings tuned before, if anything is left
    NEW = "new"  # a new session, whatever the store holds
    RESUME = "resume"  # this session (its own settings)


class Choice(StrEnum):
    NEW = "new"
    CONTINUE = "continue"
    REOPEN = "reopen"  # a completed session whose tasks skipped before a measurement are tuned now
    COMPLETE = "complete"  # nothing left to tune: no tune runs


@dataclass(frozen=True)
class SessionDecision:
    choice: Choice
    session_id: int | None  # the session continued (or found complete); None for a new one
    reason: str  # one line for the user

    @property
    def tunes(self) -> bool:
        return self.choice != Choice.COMPLETE


def wish_of(new_session: bool, resume_session_id: int | None) -> Wish:
    """The wish an API call's flags express (a named session wins over `new_session`)."""
    if resume_session_id is not None:
        return Wish.RESUME
    return Wish.NEW if new_session else Wish.DEFAULT


def find_session_to_continue(
    store: RecordStore, model_hash: str, key: str, settings: TuneSettings
) -> dict[str, Any] | None:
    """The newest session a tune with `settings` continues, including one stored before some
    of its identity keys existed."""
    found = [store.find_session(model_hash, key, settings.strategy, i) for i in settings.identities_to_find()]
    return max((s for s in found if s is not None), key=lambda s: s["id"], default=None)


def known_layout(store: RecordStore, model_hash: str, key: str, settings: TuneSettings) -> tuple[str, str] | None:
    """For a tune whose layout is chosen by measurement ("auto"): (layout, why) when the store
    knows it without measuring, from the choice stored for the model or else from the newest
    session such a tune continues in either layout; None when a probe must measure it."""
    if settings.conv_layout != AUTO_LAYOUT:
        return None
    if settings.strategy == STOCK:
        return PLAIN_LAYOUT, "stock MetaSchedule tunes the model's own layout"
    row = store.layout_choice(model_hash, key, settings.kernel_threads, settings.input_shapes)
    if row is not None:
        return row["layout"], row["reason"]
    found = [
        session
        for layout in LAYOUTS
        if layout != AUTO_LAYOUT
        if (session := find_session_to_continue(store, model_hash, key, replace(settings, conv_layout=layout)))
    ]
    newest = max(found, key=lambda session: session["id"], default=None)
    return None if newest is None else (session_layout(newest), f"as session {newest['id']}, which this tune continues")


def decide_session(
    store: RecordStore | None,
    model_hash: str,
    key: str,
    settings: TuneSettings,
    wish: Wish = Wish.DEFAULT,
    session_id: int | None = None,
) -> SessionDecision:
    """What a tune of the model (`model_hash`, target `key`, `settings`) does with the store
    (None: there is none yet). Reads only; a named session that does not exist is a StoreError."""
    if wish == Wish.RESUME:
        if session_id is None:
            raise ValueError("resuming needs a session id")
        if store is None:
            raise BcdError(f"no records store holds session {session_id} yet")
        return _decide_for(store, store.session(session_id), named=True)
    if wish == Wish.NEW:
        return SessionDecision(Choice.NEW, None, "a new session, as asked")
    known = known_layout(store, model_hash, key, settings) if store is not None else None
    if known is not None:
        settings = replace(settings, conv_layout=known[0])
    found = find_session_to_continue(store, model_hash, key, settings) if store is not None else None
    if store is None or found is None:
        return SessionDecision(Choice.NEW, None, "a new session: none of this model, target and settings is stored")
    return _decide_for(store, found, named=False)


def _decide_for(store: RecordStore, session: dict[str, Any], named: bool) -> SessionDecision:
    sid = int(session["id"])
    status = session["status"]
    if status != SessionStatus.COMPLETED:
        done = int(session["trials_done"] or 0)
        return SessionDecision(Choice.CONTINUE, sid, f"continuing session {sid} ({status}, {done} trials so far)")
    skipped = len(store.skipped_unmeasured_tasks(sid))
    if named and skipped:
        return SessionDecision(
            Choice.REOPEN, sid, f"resuming completed session {sid} to tune its {skipped} task(s) skipped unmeasured"
        )
    if skipped:
        hint = f"; resuming it tunes its {skipped} task(s) skipped unmeasured (`bcd tune --resume {sid}`)"
    else:
        hint = ""
    which = "is" if named else "(this model, target and settings) is"
    return SessionDecision(Choice.COMPLETE, sid, f"session {sid} {which} complete: nothing left to tune{hint}")


def decide_in(
    db_path: str | Path,
    model_hash: str,
    key: str,
    settings: TuneSettings,
    wish: Wish = Wish.DEFAULT,
    session_id: int | None = None,
) -> SessionDecision:
    """`decide_session` on the store at `db_path` (which need not exist yet)."""
    if not Path(db_path).exists():
        return decide_session(None, model_hash, key, settings, wish, session_id)
    with closing(RecordStore(db_path, create=False)) as store:
        return decide_session(store, model_hash, key, settings, wish, session_id)


def apply_decision(store: RecordStore, decision: SessionDecision) -> int:
    """What the decision changes in the store before the engine runs it: a reopened session's
    skipped, unmeasured tasks are queued again (records/sessions.py). Returns how many."""
    if decision.choice != Choice.REOPEN or decision.session_id is None:
        return 0
    return store.reopen_skipped_tasks(decision.session_id)
