"""Who sends a shared session's change notifications (its *home*), and how a dead worker's sessions
move to a live one (:class:`Homes`, one per application; the sessions are :mod:`.shared`'s).

A session's home is the one worker whose connection is on the server's change listeners, so a list
change or a resource update reaches the session once.  It holds the session's key in the state's
held sets (a limit of one member); each worker also holds its name in the set of live workers.  Both
are held on a short lease, :data:`HOME_TTL`: a worker that dies without a word (SIGKILL, the OOM
killer, a lost host) is gone from them that long after its last heartbeat.  Each worker's watcher
thread reads the live workers every :data:`CLAIM_EVERY` seconds and claims the sessions it holds
whose home is not among them; the winner re-announces what may have changed while the session had
no home (the bus keeps nothing).  A home that only seemed dead (a late heartbeat) steps down when it
hears the claim.  See ``spec_notes/deployment.md``, "A worker killed under its sessions".

The same held sets, on the same lease, say which workers use a session now (a request served or a
GET stream followed there: :meth:`Homes.mark_in_use`), so that the worker that made it never ends it
as its client's least recently used idle one while another worker serves it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from .http_session import HttpSession

if TYPE_CHECKING:
    from .host import Connection, Host
    from .sessions import SessionTable

log = logging.getLogger(__name__)

#: Seconds a worker's homes (and its name among the live workers) outlive its last heartbeat; it
#: beats every third of it.  A worker that dies without a word (SIGKILL, the OOM killer) loses its
#: sessions' homes this long after its last beat at most; a worker cut off from Redis that long
#: steps down when it hears another worker claimed them (:meth:`Homes.step_down`).
HOME_TTL = 6.0
#: Seconds between a worker's reads of the live workers (one per process, by its watcher thread,
#: :meth:`Homes.watch`): the sessions it holds whose home has gone are claimed then, and the
#: followers of a gone worker's streams woken; also the least time between one replica's claims.
CLAIM_EVERY = 1.0
#: The held set naming the deployment's live workers (each holds its name while it runs).
WORKERS = "workers"


class HomeOwner(Protocol):
    """What :class:`Homes` asks of its application (``HttpAppBase``)."""

    server: Host
    session_table: SessionTable
    event_store: Any

    def shared_held(self) -> list[HttpSession]:
        """The sessions served by every worker that this process holds now."""


class Homes:
    """The homes of an application's shared sessions (see the module docstring).  ``worker`` names
    this worker (asked each time: a forked worker has a new name); ``publish(session_id, kind)``
    tells the other workers (``home``: this worker claimed it; ``homeless``: it let go)."""

    _held: Any = None  # the state's HeldSets: each session's home, and the live workers
    #: When the live workers were last read, and who they were (None: not known, Redis down).
    _workers_seen: tuple[float, set[str] | None] = (0.0, None)

    def __init__(
        self, app: HomeOwner, worker: Callable[[], str], publish: Callable[[str, str], object]
    ):
        self.app = app
        self._worker = worker
        self._publish = publish
        self._lock = threading.Lock()
        self._claiming = threading.Lock()
        self._watching = threading.Event()  # set: the watcher thread stops (close)

    def hold_new(self, session: HttpSession) -> None:
        """A session just made here: this worker is its home."""
        session.home = True
        session.home_worker = self._worker()
        held = self.store()
        if held is not None:
            held.hold(home_key(session), [session.home_worker], 1)

    def mark_in_use(self, session: HttpSession) -> None:
        """A request names ``session`` here, or a GET follows it here: this worker's mark that it
        is in use, held in the shared held sets (key :func:`use_key`) so that the worker that made
        it does not end it as its client's least recently used idle session
        (``max_sessions_per_client``) while another worker serves or streams it.  The mark is
        this worker's lease (it lapses :data:`HOME_TTL` after a dead worker's last heartbeat); the
        watcher lets it go once the session is idle here (:meth:`watch`).  One write per session
        in use, not per request."""
        held = self.store()
        if held is None or session.marked_in_use or not session.shared:
            return
        session.marked_in_use = True
        held.hold(use_key(session), [self._worker()], None)

    def used_elsewhere(self, session: HttpSession) -> bool:
        """Whether another live worker marks ``session`` in use (:meth:`mark_in_use`)."""
        held = self.store()
        if held is None:
            return False
        return bool(held.members(use_key(session)) - {self._worker()})

    def _unmark_idle(self, sessions: list[HttpSession]) -> None:
        """The watcher's look at this worker's marks: a session idle here for a whole look is let
        go; one in use with no mark (a race with a let-go) is marked again."""
        held = cast(Any, self._held)
        now = time.monotonic()
        for session in sessions:
            in_use = session.in_use
            if in_use and not session.marked_in_use and not session.closed:
                self.mark_in_use(session)
            elif session.marked_in_use and not in_use and now - session.last_used >= CLAIM_EVERY:
                session.marked_in_use = False
                held.release(use_key(session), [self._worker()])

    def claim(self, session: HttpSession) -> None:
        """Become the session's home if it has none: its home worker exited (it let go) or died
        (its hold lapsed, :data:`HOME_TTL` after its last heartbeat), so that its change
        notifications still reach it.  Looked at every :data:`CLAIM_EVERY` seconds at most per
        replica, by the watcher (:meth:`watch`) and as requests come: a look costs nothing while
        the home's worker is among the live ones (:meth:`worker_alive`, one read per process); else
        one atomic hold, a limit of one, which one worker wins.  The winner tells the client that
        whatever it is subscribed to may have changed (:meth:`reannounce`): what changed while the
        session had no home is not lost."""
        held = self.store()
        # one look at a time per session: a request's and the watcher's at once
        with self._claiming:
            now = time.monotonic()
            if session.home or not session.shared or held is None or now < session.claim_after:
                return
            session.claim_after = now + CLAIM_EVERY
        if session.home_worker is not None and self.worker_alive(session.home_worker):
            return
        key, worker = home_key(session), self._worker()
        taken, _ = held.hold(key, [worker], 1)
        if taken and (session.closed or not self._reachable()):
            # it ended meanwhile (a DELETE, its expiry), or it is held here only (Redis out of
            # reach): not the home; a hold kept would be renewed by the heartbeat until exit
            held.release(key, [worker])
            return
        if not taken:  # another worker is its home (one this replica had not heard of yet)
            session.home_worker = min(held.members(key), default=None)
            return
        session.home = True
        session.home_worker = worker
        session_id = cast(str, session.id)
        log.info("session %s: this worker is its home now (the one before is gone)", session_id[:8])
        self.app.server.add_connection(session.connection)
        self.app.session_table.update(session_id, {"home": worker})  # every replica learns it
        self._publish(session_id, "home")  # a home that only seemed dead (a late beat) steps down
        self.reannounce(session)

    @staticmethod
    def reannounce(session: HttpSession) -> None:
        """The session's new home tells its client what may have changed while it had none (a
        change heard by no worker is gone: the bus keeps nothing): ``resources/updated`` for each
        resource it is subscribed to, and each list's ``list_changed`` its capabilities declare, as
        the server does after a bus outage.  Stored in the shared event store like every standalone
        message, so a GET on any worker, or resuming with ``Last-Event-ID``, receives them.

        2025-11-25 server/resources §Subscriptions: the server sends
        ``notifications/resources/updated`` "when a subscribed resource changes"; one sent when a
        change cannot be ruled out costs the client a read, a lost one leaves it with stale content.
        """
        connection = cast("Connection", session.connection)
        for uri in sorted(connection.subscriptions):
            connection.notify("notifications/resources/updated", {"uri": uri})
        for kind in ("tools", "prompts", "resources"):
            connection.list_changed(kind)

    def heard(self, session: HttpSession, kind: str, sender: Any) -> None:
        """Another worker's word about the session's home: ``home`` (``sender`` claimed it) or
        ``homeless`` (its home let go: this worker tries at once)."""
        if kind == "home" and isinstance(sender, str):
            if session.home:
                self.step_down(session, sender)
            else:
                session.home_worker = sender
        elif kind == "homeless":
            session.claim_after = 0.0
            session.home_worker = None  # it let go: no need to wait for its name to lapse
            self.claim(session)

    def step_down(self, session: HttpSession, home: str) -> None:
        """Another worker, ``home``, claimed the session while this one still was its home: this
        one's lease had lapsed (a heartbeat later than :data:`HOME_TTL`, or Redis out of reach), so
        it seemed dead.  It stops sending the session's change notifications and lets go, so the
        client hears each change once."""
        held = self._held
        session.home = False
        session.home_worker = home
        self.app.server.remove_connection(session.connection)
        if held is not None:
            held.release(home_key(session), [self._worker()])
        log.warning(
            "session %s: another worker took over as its home (this worker's lease lapsed: a "
            "heartbeat came late, or Redis was out of reach)",
            cast(str, session.id)[:8],
        )

    def let_go(self, session: HttpSession, *, for_good: bool) -> None:
        """This worker no longer holds ``session``: if it was its home, another worker may claim it;
        unless the session ends (``for_good``), the workers holding it are told to try at once."""
        held = self._held
        if session.marked_in_use and held is not None:
            session.marked_in_use = False
            held.release(use_key(session), [self._worker()])
        if session.home and held is not None:
            session.home = False
            session.home_worker = None
            held.release(home_key(session), [self._worker()])
            if not for_good:
                self._publish(cast(str, session.id), "homeless")

    def worker_alive(self, worker: str) -> bool:
        """Whether ``worker`` (of this deployment) is still running (its hold on ``workers`` is
        fresh: a worker that died is gone from it :data:`HOME_TTL` after its last heartbeat); asked
        at most every :data:`CLAIM_EVERY` seconds, once for every session of this process (True when
        it cannot be known)."""
        held = self.store()
        if held is None or worker == self._worker():
            return True
        asked, alive = self._workers_seen
        if time.monotonic() - asked >= CLAIM_EVERY:
            alive = self._read_workers(held)
        return alive is None or worker in alive

    def watch(self) -> None:
        """One look of the watcher thread (every :data:`CLAIM_EVERY` seconds): the live workers,
        read once for the process; each session this worker holds whose home is not among them is
        claimed (:meth:`claim`: one worker wins), so a dead worker's sessions move within
        :data:`HOME_TTL` + :data:`CLAIM_EVERY` of its last heartbeat, used or not; and when a worker
        has gone, this process's followers are woken, so a follower of a stream that worker was
        writing ends now, not at its next keep-alive."""
        held = self._held
        if held is None:
            return
        before = self._workers_seen[1]
        alive = self._read_workers(held)
        if alive is None:  # not known: nothing is claimed, no follower ended
            return
        sessions = self.app.shared_held()
        self._unmark_idle(sessions)
        for session in sessions:
            if not session.home and session.home_worker not in alive and not session.closed:
                session.claim_after = 0.0
                self.claim(session)
        if before and before - alive:
            for session in sessions:
                self.app.event_store.wake(cast(str, session.id))

    def store(self) -> Any:
        """The shared state's held sets (None: stores given without a state; the home never moves);
        made once, with this worker's name held among the live ones and its watcher started."""
        if self._held is None:
            with self._lock:
                if self._held is None and not self._watching.is_set():
                    state = self.app.server.shared_state
                    made = getattr(state, "held_sets", None)
                    held = None
                    if made is not None:
                        try:  # a short lease: a dead worker's sessions move within seconds (HOME_TTL)
                            held = made(holder_ttl=HOME_TTL)
                        except TypeError:  # a state of the user's, its held sets without a lease
                            held = made()
                    if held is not None:
                        held.hold(WORKERS, [self._worker()], None)  # alive while this process beats
                        threading.Thread(
                            target=self._watch,
                            args=(self._watching,),
                            daemon=True,
                            name="mcp_ref-shared-sessions-watcher",
                        ).start()
                    self._held = held
        return self._held

    def close(self) -> None:
        """Stop the watcher and let go of every home this worker held (the application closes)."""
        with self._lock:
            held, self._held = self._held, None
            self._watching.set()  # the watcher ends (and no new one starts)
        if held is not None:
            held.close()  # every home this worker held is free for another worker now

    def _read_workers(self, held: Any) -> set[str] | None:
        """The live workers, read now and kept for :meth:`worker_alive`; None when Redis cannot be
        reached (the held sets then answer this process's own: every other worker looks dead)."""
        alive: set[str] | None = held.members(WORKERS)
        if not self._reachable():
            alive = None
        self._workers_seen = (time.monotonic(), alive)
        return alive

    def _reachable(self) -> bool:
        """Whether the shared state answers now (one read of the session table's size)."""
        try:
            len(self.app.session_table)
        except ConnectionError:
            return False
        return True

    def _watch(self, stop: threading.Event) -> None:
        while not stop.wait(CLAIM_EVERY):
            try:
                self.watch()
            except Exception:  # a fault never ends the watcher (Redis's are the stores' to log)
                log.exception("shared sessions: a look at the live workers failed")


def home_key(session: HttpSession) -> str:
    """The held-set key of a session's home: a digest of its id (the id is a credential without
    a token)."""
    return "home:" + hashlib.sha256(cast(str, session.id).encode()).hexdigest()[:32]


def use_key(session: HttpSession) -> str:
    """The held-set key of the workers that mark a session in use (:meth:`Homes.mark_in_use`)."""
    return "use:" + hashlib.sha256(cast(str, session.id).encode()).hexdigest()[:32]
