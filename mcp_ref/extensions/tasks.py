"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663), server side.

A ``tools/call`` may answer with a *task* instead of its result: a handle the
client polls with ``tasks/get`` until the work is done, answers with
``tasks/update`` when the task needs input, and may stop with ``tasks/cancel``.
It exists only at 2026-07-28, and only for a request whose client capabilities
declare the extension (SEP-2663 §Capability Negotiation: a server "MUST NOT
return CreateTaskResult to a client that did not include the extension
capability on its request").

How a tool becomes a task (the server decides, per request):

* ``@server.tool(task="optional")`` — the handler runs as a call normally does
  until it calls ``ctx.start_task()``.  For a client that declared the extension
  that is where the task begins: the client gets a ``CreateTaskResult`` and the
  handler is run again on the server's task workers, where ``start_task()``
  returns True and the work goes on.  For any other client ``start_task()``
  returns False and the call simply goes on synchronously.  Asks made before
  ``start_task()`` are ordinary ``input_required`` rounds, answered before the
  task exists (§Composition with Multi Round-Trip Requests: "SHOULD resolve all
  MRTR exchanges synchronously before responding with a CreateTaskResult"); the
  re-run finds their answers, as an MRTR retry does.
* ``@server.tool(task="required")`` — the same, but a client that did not
  declare the extension gets -32021 naming it, before the handler runs.

Inside the task an ask (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``)
parks the task in ``input_required`` with the ask in ``inputRequests``; the
handler's thread waits until ``tasks/update`` brings every answer, the task is
cancelled, its ``input_timeout`` passes (the task fails, -31005, saying so) or
its time to live runs out.  ``ctx.report_progress`` sets the task's
``statusMessage``; log messages are not sent (SEP-2663: progress and log
notifications "are not supported on tasks").

:class:`TaskStore` (``server.tasks``) holds the tasks and runs them: at most ``max_tasks`` (past it
the caller's oldest finished one is forgotten, else the oldest finished one; if none has finished, a
new task is refused with -31000), at most ``max_tasks_per_principal`` unfinished ones per caller
(past it, -31005), each kept ``ttl_ms`` after its creation; at most ``workers`` run at once and
``max_waiting`` wait for input, each at most ``input_timeout`` seconds (the threads:
:mod:`mcp_ref.extensions.task_pool`).

The same store serves the experimental tasks of 2025-11-25 (``params.task`` on a handshake-era
``tools/call``): :mod:`mcp_ref.extensions.tasks_2025`, installed with this extension by ``server.tasks``.

A task belongs to whoever created it: over HTTP with authorization, another
principal's ``taskId`` is "not found".

The state is behind the seams of :mod:`mcp_ref.state.stores`: each task's record
(:class:`~mcp_ref.state.stores.TaskRecords`, JSON keyed by task id) is the truth
``tasks/get``, ``tasks/update`` and ``tasks/cancel`` answer from, in any process
sharing it; the handler's thread and its waits stay in the process running it,
which hears of an update or a cancel at once (its own process) or on the bus.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..cancellation import Cancellation
from ..errors import (
    INTERNAL_ERROR,
    InvalidParams,
    LimitExceeded,
    McpError,
    MissingRequiredClientCapabilityError,
    RequestCancelled,
    ServerBusy,
)
from ..request import DEFAULT, RequestContext
from ..server.input_required import Ask, answer_all
from ..state.stores import TERMINAL, MemoryTaskQueue, MemoryTaskRecords, iso_now
from .task_pool import IDLE_SECONDS, TaskPool

if TYPE_CHECKING:
    from ..state.stores import Bus, TaskQueue, TaskRecords

__all__ = ["Task", "TaskStore", "TaskRun", "IDLE_SECONDS", "wire_of"]

log = logging.getLogger(__name__)

EXTENSION = "io.modelcontextprotocol/tasks"
#: ``resultType`` of a CreateTaskResult (SEP-2663 §Polymorphic Results).
TASK = "task"
#: What ``Server.tool(task=...)`` accepts (the tool's ``options["task"]``).
OPTIONAL, REQUIRED = "optional", "required"
WORKING, INPUT_REQUIRED, COMPLETED, FAILED, CANCELLED = (
    "working",
    "input_required",
    "completed",
    "failed",
    "cancelled",
)

DEFAULT_MAX_TASKS = 1024
LEASE_SECONDS = 30.0  #: seconds a task's lease lasts in shared records (renewed every third of it)
DEFAULT_TTL_MS = 60 * 60 * 1000
#: The longest time to live a task is given (ms, about 31.7 years): the store's ``ttl_ms`` is at
#: most this, and a longer 2025-11-25 ``task.ttl`` (a JSON integer of any size) is granted as this,
#: also by a store without a ceiling (2025-11-25 basic/utilities/tasks §TTL and Resource Management:
#: "Receivers MAY override the requested ttl duration"; §Resource Management: "Enforce maximum ttl
#: durations").  Its seconds are a float, and fit every wait.
LONGEST_TTL_MS = 10**12
DEFAULT_POLL_INTERVAL_MS = 250
DEFAULT_WORKERS = 16
#: Tasks that may wait for input at once (each keeps its thread, not its run slot), and for how long (seconds).
DEFAULT_MAX_WAITING = 64
DEFAULT_INPUT_TIMEOUT = 5 * 60.0
#: Unfinished tasks one caller (``Principal.limit_id``) may have at once.
DEFAULT_MAX_TASKS_PER_PRINCIPAL = 16
#: Input requests one task may have outstanding at once, and keys it may hand out over its life.
MAX_OUTSTANDING = 64
MAX_KEYS = 4096
RECHECK = (
    1.0  #: seconds at most between a waiting handler's looks at its record (a lost bus message)
)
#: The characters of the task ids this server mints (``secrets.token_urlsafe``: 22 of them), and
#: the longest id it looks up; any other ``taskId`` names no task and reaches no store.
ID_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
MAX_ID_LENGTH = 64
#: Seconds a task whose start could not be written waits before it is queued again (see
#: :meth:`TaskStore.start_again`).
START_AGAIN_SECONDS = 1.0


def declared(context: RequestContext) -> bool:
    """True when a request's own client capabilities declare the tasks extension (2026-07-28 only)."""
    modern = context.envelope
    if modern is None:
        return False
    extensions = modern.client_capabilities.get("extensions")
    return isinstance(extensions, dict) and EXTENSION in extensions


def missing(why: str) -> MissingRequiredClientCapabilityError:
    """-32021 naming the extension (SEP-2663 §Capability Negotiation)."""
    return MissingRequiredClientCapabilityError.needing({"extensions": {EXTENSION: {}}}, why)


class StartTask(BaseException):
    """Raised by ``ctx.start_task()`` where a call becomes a task; ``tools/call`` catches it.

    A BaseException, so a handler's ``except Exception`` does not swallow it.
    """


def wire_of(record: dict, detailed: bool = True) -> dict:
    """The Task object of a record (:class:`~mcp_ref.state.stores.TaskRecords`); ``detailed`` adds
    what its status carries (DetailedTask: ``inputRequests``, ``result`` or ``error``)."""
    status = record["status"]
    fields = ("taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs")
    wire: dict[str, Any] = {field: record[field] for field in fields}
    if record.get("statusMessage") is not None:
        wire["statusMessage"] = record["statusMessage"]
    if detailed:
        if status == INPUT_REQUIRED:
            wire["inputRequests"] = dict(record["inputRequests"])
        elif status == COMPLETED:
            wire["result"] = record.get("result")
        elif status == FAILED:
            wire["error"] = record.get("error")
    return wire


class Task:
    """One task: a handle on its record (:class:`~mcp_ref.state.stores.TaskRecords`, the truth
    ``tasks/get`` shows), and, in the process running it, what its handler waits for.

    The live parts never leave the process: the asks it is waiting for (:attr:`outstanding`, which
    read their answers), :attr:`lock` (its handler waits on it) and :attr:`cancelled`.  A handle made
    from the record alone (another process's task, :meth:`TaskStore.find`) answers ``tasks/get``,
    ``tasks/update`` and ``tasks/cancel`` all the same; the process running the task learns of an
    update or a cancel from the store's bus (``TaskStore(bus=...)``) or, in its own process, at once.
    Without ``records`` the task keeps its record in a store of its own.
    """

    def __init__(
        self,
        task_id: str,
        owner: str | None,
        ttl_ms: int | None,
        poll_interval_ms: int,
        caller: str | None = None,
        *,
        records: TaskRecords | None = None,
    ):
        self.id = task_id
        #: Who may see and answer it (``Principal.id`` of a verified caller; None: whoever has the id).
        self.owner = owner
        #: Whose count of unfinished tasks it is in (``Principal.id``, token or not).
        self.caller = caller if caller is not None else owner
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.created = time.monotonic()
        #: The asks this process's handler waits for, by key; and the answers it read.
        self.outstanding: dict[str, Ask] = {}
        self.answers: dict[str, dict] = {}
        self._keys = 0
        self.lock = threading.Condition()
        self.cancelled = Cancellation()
        if records is None:
            records = MemoryTaskRecords()
            records.create(
                task_id,
                self.new_record(),
                ttl=None,
                caller=self.caller,
                max_per_caller=None,
                max_total=1,
            )
        self.records: TaskRecords = records
        self._last: dict | None = None  # the record last read (shown once it expired)

    def new_record(self) -> dict:
        """The record of a task just created (``working``, not started)."""
        now = iso_now()
        return {
            "taskId": self.id,
            "owner": self.owner,
            "caller": self.caller,
            "status": WORKING,
            "statusMessage": None,
            "createdAt": now,
            "lastUpdatedAt": now,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": self.poll_interval_ms,
            "started": False,
            "cancelRequested": False,
            "result": None,
            "error": None,
            "inputRequests": {},
            "inputResponses": {},
        }

    @classmethod
    def of_record(cls, record: dict, records: TaskRecords) -> Task:
        """A handle on a task known only by its record (run elsewhere, or by no one any more)."""
        task = cls(
            record["taskId"],
            record["owner"],
            record["ttlMs"],
            record["pollIntervalMs"],
            record["caller"],
            records=records,
        )
        task._last = record
        return task

    def record(self) -> dict:
        """The task's record now (the last one read, once it has expired)."""
        record = self.records.get(self.id)
        if record is not None:
            self._last = record
        elif self._last is None:
            raise InvalidParams(
                f"Invalid params: no task {self.id!r} (it does not exist, or has expired)"
            )
        return self._last

    @property
    def status(self) -> str:
        """``working``, ``input_required``, ``completed``, ``failed`` or ``cancelled`` (the record's)."""
        return self.record()["status"]

    @property
    def started(self) -> bool:
        """True once its handler got a run slot and started (see :meth:`begin_run`)."""
        return bool(self.record()["started"])

    @property
    def terminal(self) -> bool:
        """True once the task ended: its status never changes again."""
        return self.status in TERMINAL

    def to_wire(self, detailed: bool = True) -> dict:
        """The Task object, from the record (see :func:`wire_of`)."""
        return wire_of(self.record(), detailed)

    def _change(self, changes: dict, when: dict | None = None) -> bool:
        """One atomic change of the record (never of a terminal one); wakes the handler."""
        changed = self.records.transition(
            self.id, {**changes, "lastUpdatedAt": iso_now()}, when=when
        )
        self.wake()
        return changed is not None

    def wake(self, message: dict | None = None) -> None:
        """Wake the handler waiting on this task (an update or a cancel: ``message`` from the bus)."""
        if message is not None and message.get("event") == "cancel":
            self.cancelled.set()
        with self.lock:
            self.lock.notify_all()

    def finish(
        self,
        status: str,
        *,
        result: dict | None = None,
        error: dict | None = None,
        message: str | None = None,
    ) -> None:
        """End the task: ``completed`` with a result, ``failed`` with a JSON-RPC error, or ``cancelled``."""
        changes: dict[str, Any] = {
            "status": status,
            "result": result,
            "error": error,
            "inputRequests": {},
        }
        if message is not None:
            changes["statusMessage"] = message
        with self.lock:
            self.outstanding.clear()
        self._change(changes)

    def report(self, message: str) -> None:
        """Set ``statusMessage`` (what ``ctx.report_progress`` does inside a task)."""
        self._change({"statusMessage": message})

    def ask(
        self, asks: list[Ask], deadline: float | None, input_timeout: float | None = None
    ) -> list:
        """Park in ``input_required`` until ``tasks/update`` answered every ask; their answers, read.

        ``deadline`` (monotonic) is the task's time to live; ``input_timeout`` (seconds) bounds this
        wait: past it the asks are withdrawn and LimitExceeded (-31005) says so.

        SEP-2663 §Task Update Requests: "Each request key in inputRequests MUST be unique over the
        lifetime of a single task": a key already used gets a number.
        """
        waited_until = None if input_timeout is None else time.monotonic() + input_timeout
        with self.lock:
            if (
                len(asks) + len(self.outstanding) > MAX_OUTSTANDING
                or self._keys + len(asks) > MAX_KEYS
            ):
                raise McpError(f"task {self.id}: too many input requests", code=INTERNAL_ERROR)
            keyed = []
            for ask in asks:
                self._keys += 1
                keyed.append(
                    replace(
                        ask, key=f"{ask.key}.{self._keys}" if ask.key in self.answers else ask.key
                    )
                )
            keys = [ask.key for ask in keyed]
            for ask in keyed:
                self.answers.pop(ask.key, None)
                self.outstanding[ask.key] = ask
            try:
                if not self.records.put_inputs(
                    self.id, {ask.key: ask.input_request() for ask in keyed}
                ):
                    raise RequestCancelled(
                        f"task {self.id} was cancelled"
                    )  # ended (or expired) meanwhile
                self.lock.notify_all()
                while True:
                    record = self.records.get(self.id)
                    if (
                        record is None
                        or record["status"] in TERMINAL
                        or record["cancelRequested"]
                        or self.cancelled.is_set()
                    ):
                        if record is None and deadline is not None and time.monotonic() >= deadline:
                            raise McpError(
                                f"task {self.id}: its time to live ran out while it waited for input",
                                code=INTERNAL_ERROR,
                            )
                        raise RequestCancelled(f"task {self.id} was cancelled")
                    if all(key in record["inputResponses"] for key in keys):
                        break
                    now = time.monotonic()
                    if deadline is not None and now >= deadline:
                        self.records.withdraw_inputs(self.id, keys)
                        raise McpError(
                            f"task {self.id}: its time to live ran out while it waited for input",
                            code=INTERNAL_ERROR,
                        )
                    if waited_until is not None and now >= waited_until:
                        self.records.withdraw_inputs(self.id, keys)
                        raise LimitExceeded(
                            f"no input came within {input_timeout:g} s (tasks/update); "
                            "the task stopped waiting",
                            data={"limit": input_timeout},
                        )
                    ends = [end for end in (deadline, waited_until) if end is not None]
                    self.lock.wait(min(min(ends) - now, RECHECK) if ends else RECHECK)
                answers = self.records.take_responses(self.id, keys)
            finally:
                for key in keys:
                    self.outstanding.pop(key, None)
            self.answers.update(answers)
        return answer_all(keyed, answers)

    def update(self, responses: dict) -> None:
        """``tasks/update``: take the answers to outstanding asks; others are ignored.

        SEP-2663: a server "SHOULD ignore any inputResponses responses mapped to a key that is not
        currently outstanding"; an answer to an outstanding ask that cannot be read is -32602 (the
        ask stays outstanding).  Read here with the ask itself when this process runs the task; a
        handle on the record alone checks the answer is an object, and the handler reads it.
        """
        outstanding = self.record()["inputRequests"]
        taken = {}
        for key, value in responses.items():
            if key not in outstanding:
                continue
            with self.lock:
                ask = self.outstanding.get(key)
            if ask is not None:
                answer_all([ask], {key: value})  # -32602 for an answer that is not a valid result
            elif not isinstance(value, dict):
                raise InvalidParams(
                    f"Invalid params: inputResponses[{key!r}] must be a result object"
                )
            taken[key] = value
        if taken and self.records.put_responses(self.id, taken):
            self.wake()

    def cancel(self) -> None:
        """``tasks/cancel``: ask the handler to stop (cooperative: it may still finish otherwise).

        A task still waiting for a run slot is cancelled at once: its handler will never run (no
        side effect after the caller said stop), and it no longer counts against its caller's
        ``max_tasks_per_principal``.  SEP-2663 §Task Cancellation: the server "decides whether and
        when to honor it"; one that has not started can always be honoured, and so can one parked in
        ``input_required``: its handler cannot go on without the input, and wakes only to stop, so
        a ``tasks/get`` just after the cancel already says ``cancelled``.  Each step is one atomic
        change of the record.
        """
        self.cancelled.set()
        if self.records.transition(self.id, {"cancelRequested": True}) is not None:
            cancelled = {"status": CANCELLED}
            if not self._change(cancelled, when={"status": [INPUT_REQUIRED]}):
                self._change(cancelled, when={"started": [False]})
        self.wake()

    def begin_run(self) -> bool:
        """A run slot came: True if the handler may start now, False if the task was cancelled (or
        ended) while it waited for one; then it never runs."""
        if (
            self.cancelled.is_set()
            or self.records.transition(
                self.id, {"started": True}, when={"cancelRequested": [False]}
            )
            is None
        ):
            self._change({"status": CANCELLED})
            return False
        return True


class TaskStore(TaskPool):
    """The tasks of one server, and the threads that run them (see the module docstring).

    ``workers``: tasks running at once; ``max_waiting``: tasks waiting for input at once (each
    keeps a thread, so the threads are at most ``workers + max_waiting``); ``input_timeout``:
    seconds a task waits for one round of input (None: until its TTL); ``max_tasks_per_principal``:
    unfinished tasks per caller (None: no cap but ``max_tasks``).

    The state seams (:mod:`mcp_ref.state.stores`): ``records`` holds the tasks' records (default in
    memory); ``queue`` the ids of tasks waiting for a run slot (default: in memory, at most
    ``max_tasks``; full, a new task is refused with -31000); ``bus``, when several processes share
    ``records``, carries ``tasks/update`` and ``tasks/cancel`` to the process running the task
    (channel ``tasks/<id>``).
    """

    def __init__(
        self,
        *,
        max_tasks: int = DEFAULT_MAX_TASKS,
        ttl_ms: int | None = DEFAULT_TTL_MS,
        poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS,
        workers: int = DEFAULT_WORKERS,
        max_waiting: int = DEFAULT_MAX_WAITING,
        input_timeout: float | None = DEFAULT_INPUT_TIMEOUT,
        max_tasks_per_principal: int | None = DEFAULT_MAX_TASKS_PER_PRINCIPAL,
        records: TaskRecords | None = None,
        queue: TaskQueue | None = None,
        bus: Bus | None = None,
    ):
        if ttl_ms is not None and (
            not isinstance(ttl_ms, int)
            or isinstance(ttl_ms, bool)
            or not 0 < ttl_ms <= LONGEST_TTL_MS
        ):
            # tasks-wire-field-renames: ttlMs is null (unlimited) or a positive integer.
            raise ValueError(
                f"ttl_ms must be a positive number of milliseconds (at most {LONGEST_TTL_MS}), "
                "or None for unlimited"
            )
        _whole("max_tasks", max_tasks, 1)
        # 2025-11-25 schema Task.pollInterval and SEP-2663 pollIntervalMs: integer milliseconds
        _whole("poll_interval_ms", poll_interval_ms, 1)
        _whole("workers", workers, 1)
        _whole("max_waiting", max_waiting, 0)
        if max_tasks_per_principal is not None:
            _whole("max_tasks_per_principal", max_tasks_per_principal, 1)
        if input_timeout is not None and (
            isinstance(input_timeout, bool)
            or not isinstance(input_timeout, (int, float))
            or not input_timeout > 0
        ):
            raise ValueError(
                "input_timeout must be a positive number of seconds, or None (until the task's TTL)"
            )
        self.max_tasks = max_tasks
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.input_timeout = input_timeout
        self.max_tasks_per_principal = max_tasks_per_principal
        self.records: TaskRecords = records if records is not None else MemoryTaskRecords()
        self.bus = bus
        #: The tasks this process made (their live parts), until they end or expire; at most max_tasks.
        self._live: dict[str, Task] = {}
        self._lock = threading.Lock()
        self._leases: threading.Thread | None = (
            None  # renews the leases of shared records (see _hold_lease)
        )
        self._leases_stop = threading.Event()
        TaskPool.__init__(
            self, workers, max_waiting, queue if queue is not None else MemoryTaskQueue(max_tasks)
        )

    def __len__(self) -> int:
        return self.records.count()

    def create(
        self, owner: str | None, caller: str | None = None, *, ttl_ms: Any = DEFAULT, **fields: Any
    ) -> Task:
        """A new task of ``owner`` (who may find it), counted against ``caller`` (default: ``owner``);
        ``ttl_ms``: its own time to live (default: the store's); ``fields``: more of its record.

        Findable at once (SEP-2663: the server "MUST NOT return CreateTaskResult until the task is
        durably created").  LimitExceeded (-31005) when ``caller`` has ``max_tasks_per_principal``
        unfinished tasks; ServerBusy (-31000) when ``max_tasks`` unfinished tasks exist.  Counting and
        adding are one atomic call of the records."""
        self._forget_expired()
        ttl_ms = self.ttl_ms if ttl_ms is DEFAULT else ttl_ms
        task = Task(
            secrets.token_urlsafe(16),  # of ID_ALPHABET: find() looks up no other id
            owner,
            ttl_ms,
            self.poll_interval_ms,
            caller,
            records=self.records,
        )
        cap = self.max_tasks_per_principal
        verdict = self.records.create(
            task.id,
            {**task.new_record(), **fields},
            caller=task.caller,
            max_per_caller=cap,
            max_total=self.max_tasks,
            ttl=None if ttl_ms is None else ttl_ms / 1000,
        )
        if verdict == "caller_full":
            raise LimitExceeded(
                f"Too many tasks: at most {cap} unfinished tasks per caller; wait for one to "
                "finish, or cancel one (tasks/cancel)",
                data={"limit": cap},
            )
        if verdict != "created":
            raise ServerBusy(
                f"Busy: {self.max_tasks} tasks are in progress; retry later",
                data={"maxTasks": self.max_tasks},
            )
        with self._lock:
            if (
                len(self._live) >= self.max_tasks
            ):  # forget the handles of tasks the records no longer hold
                for task_id in [t for t in self._live if self.records.get(t) is None]:
                    del self._live[task_id]
            self._live[task.id] = task
        self._hold_lease(task)
        return task

    def _hold_lease(self, task: Task) -> None:
        """Shared records (several processes) carry a lease: this process renews it for every task it
        holds, every third of :data:`LEASE_SECONDS`; a task whose process died reads ``failed`` once its
        lease runs out (the records say so), instead of ``working`` for ever.  In-memory records die
        with the process that runs their tasks: no lease."""
        renew = getattr(self.records, "renew_lease", None)
        if renew is None:
            return
        try:
            renew(task.id, LEASE_SECONDS)
        except McpError as exc:
            log.warning("task %s: its lease could not be taken (%s)", task.id, exc.message)
        with self._lock:
            if self._leases is None:
                self._leases = threading.Thread(
                    target=self._renew_leases,
                    args=(renew,),
                    daemon=True,
                    name="mcp_ref-task-leases",
                )
                self._leases.start()

    def _renew_leases(self, renew: Callable[[str, float], bool]) -> None:
        while not self._leases_stop.wait(LEASE_SECONDS / 3):
            with self._lock:
                held = list(self._live.values())
                if not held:  # nothing to renew: the thread ends (the next task held starts one)
                    self._leases = None
                    return
            for task in held:
                try:
                    if not renew(
                        task.id, LEASE_SECONDS
                    ):  # ended elsewhere, failed by its lease, or expired
                        self.ended(task)
                        task.wake({"event": "cancel"})
                except McpError as exc:  # the store is unreachable: try again next round
                    log.warning(
                        "task %s: its lease could not be renewed (%s)", task.id, exc.message
                    )

    def find(self, task_id: object, owner: str | None) -> Task:
        """The task ``task_id`` of ``owner``, or -32602 (SEP-2663 §Protocol Errors: "Invalid or
        nonexistent taskId: -32602"; §Security Implications: servers "MUST perform authentication
        and authorization checks on each task-related request").  Answered from the records: a task
        another process runs is found too (a handle on its record)."""
        if not isinstance(task_id, str):
            raise InvalidParams("Invalid params: taskId must be a string")
        if not 0 < len(task_id) <= MAX_ID_LENGTH or not ID_ALPHABET.issuperset(task_id):
            # not an id this server mints: no task, as a nonexistent one (and never looked up: a
            # shared store's keys are made of ids, "<id>:in" would name one of a task's own keys)
            raise InvalidParams("Invalid params: no task with that taskId")
        self._forget_expired()
        record = self.records.get(task_id)
        if record is None:
            self._forget_expired()  # it may have expired just now: a handler running it stops
        if record is None or record["owner"] != owner:
            raise InvalidParams(
                f"Invalid params: no task {task_id!r} (it does not exist, or has expired)"
            )
        with self._lock:
            task = self._live.get(task_id)
        return task if task is not None else Task.of_record(record, self.records)

    def update(self, task: Task, responses: dict) -> None:
        """``tasks/update`` of ``task``: its answers recorded, and the process running it told."""
        task.update(responses)
        self._tell(task, "update")

    def cancel(self, task: Task) -> None:
        """``tasks/cancel`` of ``task``: recorded, and the process running it told.  Still queued for
        a run slot here, it leaves the queue now (:meth:`withdraw`): a cancelled task holds no place
        there, which every caller's new task needs (2025-11-25 basic/utilities/tasks §Resource
        Management: receivers SHOULD "Clean up expired tasks promptly to free resources")."""
        task.cancel()
        self.withdraw(task.id)
        self._tell(task, "cancel")

    def _tell(self, task: Task, event: str) -> None:
        if self.bus is not None:
            self.bus.publish(f"tasks/{task.id}", {"taskId": task.id, "event": event})

    def watch(self, task: Task) -> Callable[[], None]:
        """While ``task`` runs here: hear of its updates and cancels from other processes (the bus);
        returns the function that stops listening."""
        if self.bus is None:
            return lambda: None
        return self.bus.subscribe(f"tasks/{task.id}", task.wake)

    def start(self, task: Task, work: Callable[[], None]) -> None:
        """Run ``work`` for the new ``task`` on a task thread; ServerBusy (every thread taken): the task is forgotten."""
        try:
            self.run(work, task.id)
        except ServerBusy:
            self.records.delete(task.id)
            self.ended(task)
            raise

    def start_again(self, task: Task, work: Callable[[], None], why: str) -> bool:
        """``task``'s run could not record that it began (its shared records unreachable past the
        write's own tries): queue ``work`` again after :data:`START_AGAIN_SECONDS`, its lease still
        renewed here, rather than drop a task that reads ``working`` (its lease would then say it
        failed, though no worker stopped).  spec_notes/deployment.md "Faults": a task is retried,
        not lost, and after Redis is back everything works again.  False (the task is given up)
        once its time to live has passed (its record is gone), after :meth:`cancel_all`, or when
        the queue is full."""
        expires = None if task.ttl_ms is None else task.created + task.ttl_ms / 1000
        if self._leases_stop.is_set() or (expires is not None and time.monotonic() >= expires):
            log.warning("task %s: %s; its run never began", task.id, why)
            return False
        log.warning("task %s: %s; its run is queued again", task.id, why)
        threading.Event().wait(START_AGAIN_SECONDS)  # never set: a bounded pause between tries
        try:
            self.run(work, task.id)
        except ServerBusy:
            log.warning("task %s: the queue is full; its run never began", task.id)
            return False
        return True

    def ended(self, task: Task) -> None:
        """``task``'s work is over in this process: forget its live parts (its record stays)."""
        with self._lock:
            self._live.pop(task.id, None)

    def _forget_expired(self) -> None:
        # SEP-2663: after its TTL a server "MAY ... delete it at any time"; a handler still running stops
        for task_id in self.records.sweep():
            with self._lock:
                task = self._live.pop(task_id, None)
            if task is not None:
                task.wake({"event": "cancel"})
                self.withdraw(task_id)  # expired while queued: its place in the queue is free

    def cancel_all(self) -> None:
        """Cancel every unfinished task this process runs, and renew no lease any more (at shutdown:
        the client's hosted tasks when its connection ends, :mod:`mcp_ref.extensions.hosted_tasks`).
        A server has no such moment (an extension is never told its host closed): its lease thread
        ends by itself once no task is held, and is a daemon."""
        self._leases_stop.set()
        with self._lock:
            tasks = list(self._live.values())
        for task in tasks:
            task.cancel()


def _whole(name: str, value: object, least: int) -> None:
    """ValueError unless ``value`` is a whole number >= ``least``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be a whole number >= {least}")


@dataclass
class TaskRun:
    """What a handler running as a task has: its :class:`Task`, and the answers of the
    ``input_required`` rounds that came before the task (replayed as they were)."""

    task: Task
    before: dict[str, Any]
    store: TaskStore | None = None

    def report(self, message: str) -> None:
        """Set the task's ``statusMessage`` (``ctx.report_progress`` inside a task)."""
        self.task.report(message)

    def ask(self, asks: list[Ask]) -> list:
        """The answers to ``asks``: from the rounds before the task if it had them all, else from
        ``tasks/update`` (the task parks in ``input_required`` meanwhile, without its run slot, for
        at most the store's ``input_timeout``)."""
        if all(ask.key in self.before for ask in asks):
            return answer_all(asks, self.before)
        task = self.task
        deadline = None if task.ttl_ms is None else task.created + task.ttl_ms / 1000
        store = self.store
        if store is None:
            return task.ask(asks, deadline)
        with store.waiting_for_input():
            return task.ask(asks, deadline, store.input_timeout)
