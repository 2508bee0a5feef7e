"""`voe serve`: the replay environment as an MCP server (the official `mcp` SDK), so that an agent on its own surface
(a coding agent, an MCP-speaking IDE) plays the tasks and what it does is a voe run.

One server is one run: `list_tasks` names the tasks (policy-visible text only) and how many passes of each are
left, `start_task` opens an episode of one (one at a time: the environment is a single episode, as a player has
one board), and the seven actions are tools with MCP annotations — the three requests take `entry_id`, an entry
of the open task's menu (another id is an `off_menu` step, as for every policy, and the answer names the menu's
entries for that request), the three
terminals a payload of entry ids, `abstain_or_escalate` nothing. Each call returns what the environment answered
(the outcome, the observation of a request), exactly as an `openai:` agent reads it. The resource
`voe://task` is the open task's text. Every step goes through the same `ReplayEnv`; when an episode ends, the run
folder is written again whole, aside and swapped in (run.json, steps.jsonl, observations.jsonl, trajectories.jsonl,
schema/), so it is always a complete voe run of the finished episodes that `voe score`, `voe report` and
`voe export --runs` read, whenever the server is killed. A new session of the client (its MCP servers restart with
it) continues that run. run.json names the first client (`policy` is `mcp:NAME/VERSION`, `settings.client`; every
client that played is in `settings.clients`).

The answers file is never read: the package is loaded and its verifier-only answers dropped at once, so no tool
or resource can reach them. Calls of one session may arrive concurrently; a lock keeps each step whole. An open
episode belongs to the session that started it: another client's session (over HTTP any local program may
connect) can neither act on it nor start another while it is open; it is told whose it is. The ownership ends
with the session (the SDK's per-connection teardown: the client closed it, or the SDK dropped it as idle): the
episode it left open is then the next session's to continue (its first action claims it, the steps so far
stand) or to drop by starting a task (that one again, or another; the dropped episode's task keeps its pass), as
a client that reconnects mid-episode expects.
"""

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from voe.artifacts.package import REQUESTS, TERMINALS, Action, TaskView, load_package
from voe.artifacts.run import (
    RunInfo,
    StepRecord,
    TrajectorySummary,
    read_run_info,
    read_steps,
    staged_folder,
    write_run_files,
    write_run_schemas,
)
from voe.errors import UsageError
from voe.jsonl import read_jsonl
from voe.replay.agent import DESCRIPTIONS, observation_text, task_text
from voe.replay.env import ReplayEnv
from voe.replay.run_audit import write_audit

NAME = "voe"


class ServedRun:
    """The run an MCP session plays: the environment, the finished episodes, the run folder."""

    def __init__(self, pkg: Path, out: Path, passes: int = 1) -> None:
        views, evidence, _, manifest = load_package(pkg)  # the answers are dropped here, never kept
        self.pkg, self.out, self.passes = pkg, out, passes
        self.views = {v.task_id: v for v in views}
        self.order = [v.task_id for v in views]
        self.content_hash = manifest.content_hash
        self.env = ReplayEnv(evidence)
        self.current: TaskView | None = None
        self.owner: object | None = None  # the session that opened the current episode
        self.orphaned = False  # the current episode's session ended: the next session may continue or drop it
        self.played: Counter[str] = Counter()
        self.steps: list[StepRecord] = []
        self.summaries: list[TrajectorySummary] = []
        self.client: dict[str, str] = {"name": "unknown", "version": "unknown"}
        self.clients: list[dict[str, str]] = []  # every client that played here, first the one the run is named by
        self.started = time.perf_counter()
        self.earlier_seconds = 0.0  # the time of the sessions this run resumed
        self.lock = asyncio.Lock()

    def resume(self) -> int:
        """Continue the served run in `out` (a new session of the client: its MCP server restarted): the finished
        episodes are kept, the client plays the rest. Refused for a run of another package or of another kind, or
        with another number of passes (one folder, one package). Returns the episodes kept."""
        info = read_run_info(self.out, self.content_hash)
        settings = info.settings or {}
        if settings.get("surface") != "mcp":
            raise UsageError(f"{self.out} holds a run of {info.policy}, not a served one: name another --out, or "
                             "--fresh to replace it")
        if info.passes != self.passes:
            raise UsageError(f"{self.out} is served with --passes {info.passes}; resume it with that, or --fresh")
        self.summaries = [TrajectorySummary.model_validate(x) for x in read_jsonl(self.out / "trajectories.jsonl")]
        finished = {s.trajectory_id for s in self.summaries}
        self.steps = [r for r in read_steps(self.out) if r.trajectory_id in finished]
        self.played = Counter(s.task_id for s in self.summaries)
        self.clients = [dict(c) for c in settings.get("clients", [settings["client"]] if "client" in settings else [])]
        if self.clients:
            self.client = dict(self.clients[0])
        self.earlier_seconds = info.seconds
        return len(self.summaries)

    def met(self, name: str, version: str) -> None:
        """A client's session: the first names the run (its trajectories carry one policy, so a run stays
        scoreable); any other is recorded beside it."""
        client = {"name": name, "version": version}
        if not self.clients:
            self.client = client
        if client not in self.clients:
            self.clients.append(client)

    def off_menu_note(self, rec: StepRecord) -> str:
        """What a client is told of a request the menu does not hold (the step is `off_menu`, as for any policy)."""
        assert self.current is not None
        fits = [e.entry_id for e in self.current.menu if e.request_action.value == rec.action]
        return (f"{rec.evidence_id!r} is no entry of this task's menu for {rec.action}; its entries for it are "
                f"{', '.join(fits) or 'none'} (the menu gives each entry's request action)")

    @property
    def policy(self) -> str:
        return f"mcp:{self.client['name']}/{self.client['version']}"

    @property
    def run_id(self) -> str:
        return f"run:mcp:{self.content_hash[:12]}:p{self.passes}"

    def tasks(self) -> list[dict[str, Any]]:
        return [{"task_id": t, "workflow_title": self.views[t].workflow_title, "question": self.views[t].question,
                 "passes_left": self.passes - self.played[t]} for t in self.order]

    def _not_yours(self, session: object | None) -> bool:
        return session is not None and self.owner is not None and session is not self.owner and not self.orphaned

    def _refuse_if_not_yours(self, session: object | None) -> None:
        if self.current is not None and self._not_yours(session):
            raise UsageError(f"task {self.current.task_id} is open in another client's session; only that session "
                             "may act on it or end it (until that session ends)")

    def ended(self, session: object) -> None:
        """`session` is over (its client closed it, or the SDK dropped it as idle): an episode it left open is the
        next session's, to continue or drop."""
        if self.current is not None and self.owner is session:
            self.orphaned = True

    def _drop_open(self) -> str:
        """The open episode, left by a session that ended, dropped: its steps go, its task keeps its pass."""
        assert self.current is not None
        finished = {s.trajectory_id for s in self.summaries}
        self.steps = [r for r in self.steps if r.trajectory_id in finished]
        dropped, self.current, self.owner, self.orphaned = self.current.task_id, None, None, False
        return (f"the episode of task {dropped} left open by a session that ended was dropped; that task keeps its "
                "pass")

    def start(self, task_id: str, session: object | None = None) -> dict[str, Any]:
        self._refuse_if_not_yours(session)
        if self.current is not None and not self.orphaned:
            raise UsageError(f"task {self.current.task_id} is still open: end it with a terminal action first")
        view = self.views.get(task_id)
        if view is None:
            raise UsageError(f"no task {task_id!r} in this package; list_tasks names them")
        if self.played[task_id] >= self.passes:
            raise UsageError(f"task {task_id} was played {self.passes} time(s), all its passes (voe serve --passes)")
        note = self._drop_open() if self.current is not None else None
        pass_index = self.played[task_id]
        self.env.reset(view, f"{self.run_id}/{task_id}/{pass_index}", self.policy, pass_index)
        self.current, self.owner = view, session
        opened: dict[str, Any] = {"task_id": task_id, "pass": pass_index, "task": task_text(view),
                                  "menu": [e.model_dump(mode="json") for e in view.menu]}
        if note is not None:
            opened["note"] = note
        return opened

    def act(self, action: dict[str, Any], session: object | None = None) -> dict[str, Any]:
        if self.current is None:
            raise UsageError("no task is open: call start_task first")
        self._refuse_if_not_yours(session)
        if self.orphaned:  # continued by a new session (the client reconnected): it is that session's now
            self.owner, self.orphaned = session, False
        rec, done = self.env.step(action)
        self.steps.append(rec)
        answer: dict[str, Any] = {"t": rec.t, **json.loads(observation_text(rec)), "done": done}
        if rec.outcome == "off_menu" and "evidence_id" in action:
            answer["note"] = self.off_menu_note(rec)
        if done:
            summary = self.env.summary.model_copy(deep=True)
            self.summaries.append(summary)
            self.played[self.current.task_id] += 1
            self.current, self.owner, self.orphaned = None, None, False
            answer["end"] = summary.end
            self.write()
        return answer

    def write(self) -> RunInfo:
        """The run folder as it stands: every finished episode, in the order played. Written aside and swapped in
        whole, so a kill at any moment leaves the previous complete run (or none), never a truncated file."""
        finished = {s.trajectory_id for s in self.summaries}
        info = RunInfo(run_id=self.run_id, policy=self.policy, passes=self.passes, seed=0,
                       package=str(self.pkg.resolve()), content_hash=self.content_hash, tasks=len(self.views),
                       trajectories=len(self.summaries),
                       seconds=round(self.earlier_seconds + time.perf_counter() - self.started, 3),
                       settings={"client": dict(self.client), "clients": [dict(c) for c in self.clients],
                                 "surface": "mcp"})
        with staged_folder(self.out) as folder:
            write_run_files(folder, [s for s in self.steps if s.trajectory_id in finished], self.summaries)
            (folder / "run.json").write_text(json.dumps(info.model_dump(), indent=2, sort_keys=True) + "\n")
            write_run_schemas(folder)
            write_audit(folder, self.pkg)
        return info


ANONYMOUS = object()  # requests that carry no client session (a stateless request without its handshake)


def _session_of(ctx: Any) -> object:
    """Who is asking: the client's session, as one object for every request of it (the handshake's parameters the
    SDK keeps per connection; ServerSession itself is made anew for each request)."""
    params = ctx.session.client_params
    return params if params is not None else ANONYMOUS


ENDS_TOLD = "voe.served_run.ends_told"  # a connection's state key: its end is reported to the run


def _tell_end(ctx: Any, run: ServedRun) -> None:
    """Have the run told when the asking session ends, once per session: the SDK unwinds each connection's
    `exit_stack` as it closes (the client's DELETE, the idle timeout, stdio's end). The connection is private to the
    request's ServerSession; an SDK without it leaves ownership as it was (held until the server restarts)."""
    connection = getattr(ctx.session, "_connection", None)
    state = getattr(connection, "state", None)
    if connection is None or not isinstance(state, dict) or state.get(ENDS_TOLD):
        return
    state[ENDS_TOLD] = True
    connection.exit_stack.callback(run.ended, _session_of(ctx))


def build_server(run: ServedRun) -> Any:
    """The MCP server over `run` (mcp's MCPServer, the 2.x name of FastMCP)."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from voe import __version__

    server = MCPServer(NAME, version=__version__, log_level="WARNING",
                       instructions="Review the evidence behind decisions of a published experiment archive: "
                                    "list_tasks, start_task, then request items and end with one terminal action. "
                                    "Only what the archive holds is shown; every step counts.")

    def who(ctx: Context) -> None:
        _tell_end(ctx, run)
        params = ctx.session.client_params
        if params is not None and params.client_info is not None:
            run.met(params.client_info.name, params.client_info.version)

    async def step(ctx: Context, action: dict[str, Any]) -> dict[str, Any]:
        who(ctx)
        async with run.lock:
            try:
                return run.act(action, _session_of(ctx))
            except UsageError as exc:  # the client's mistake: told to it, no traceback in the server's log
                raise ToolError(str(exc)) from None

    # hints for the client (MCP tool annotations): nothing here reaches outside the package; listing is read-only;
    # a request changes the open episode (it spends a step); a terminal ends the episode for good
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    steps = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
    ends = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)

    @server.tool(description="The tasks of this package: id, workflow, question and passes left.", annotations=reads)
    async def list_tasks(ctx: Context) -> dict[str, Any]:
        who(ctx)
        return {"tasks": run.tasks()}

    @server.tool(description="Open an episode of one task: its question, menu (entry ids), actions and horizon.",
                 annotations=steps)
    async def start_task(task_id: Annotated[str, Field(description="a task id from list_tasks")],
                         ctx: Context) -> dict[str, Any]:
        who(ctx)
        async with run.lock:
            try:
                return run.start(task_id, _session_of(ctx))
            except UsageError as exc:
                raise ToolError(str(exc)) from None

    def request_tool(action: Action) -> Any:
        async def request(entry_id: Annotated[str, Field(description="an entry id of the open task's menu (E1, "
                                                                     "E2, ...; not the item's evidence_id)")],
                          ctx: Context,
                          page: Annotated[int | None, Field(description="another page of an item already "
                                                                        "requested (its observation's page header "
                                                                        "says how many); reading one spends no "
                                                                        "step")] = None) -> dict[str, Any]:
            move: dict[str, Any] = {"action": action.value, "evidence_id": entry_id}  # the environment's key
            if page is not None:
                move["page"] = page
            return await step(ctx, move)
        return request

    def terminal_tool(action: Action) -> Any:
        async def terminal(payload: Annotated[list[str], Field(description="entry ids of the open task's menu "
                                                                           "(E1, E2, ...)")],
                           ctx: Context) -> dict[str, Any]:
            return await step(ctx, {"action": action.value, "payload": list(payload)})
        return terminal

    async def abstain(ctx: Context) -> dict[str, Any]:
        return await step(ctx, {"action": Action.ABSTAIN_OR_ESCALATE.value})

    for action in REQUESTS:
        server.add_tool(request_tool(action), name=action.value, description=DESCRIPTIONS[action], annotations=steps)
    for action in TERMINALS:
        fn = abstain if action == Action.ABSTAIN_OR_ESCALATE else terminal_tool(action)
        server.add_tool(fn, name=action.value, description=DESCRIPTIONS[action], annotations=ends)

    @server.resource("voe://task", name="task", mime_type="text/plain",
                     description="The open task as a policy sees it (its question, menu, actions and horizon).")
    def task() -> str:
        return task_text(run.current) if run.current is not None else "No task is open: call start_task."

    return server


def serve(pkg: Path, out: Path, *, passes: int = 1, transport: str = "stdio", host: str = "127.0.0.1",
          port: int = 0, ready: Any = None, fresh: bool = False, resumed: Any = None) -> RunInfo | None:
    """Serve until the client disconnects (stdio) or the process is stopped (http; Ctrl-C); the run folder is
    current after every finished episode, and written once more (with its audit) when the server ends, Ctrl-C
    included. A served run already in `out` is continued (a new session of the client), unless `fresh`;
    `resumed(n)` is told how many finished episodes were kept. Nothing is written before the first episode ends,
    so a start that fails leaves no folder. `ready(port)` is called once an http server accepts connections.
    Returns the run as written (None when no episode was ever played)."""
    run = ServedRun(pkg, out, passes)
    if not fresh and (out / "run.json").is_file():
        kept = run.resume()
        if resumed is not None:
            resumed(kept)
    server = build_server(run)

    def last() -> RunInfo | None:
        return run.write() if run.summaries else None

    try:
        _run_server(server, transport, host, port, ready)
    except KeyboardInterrupt:  # Ctrl-C ends a server as its client leaving does: the run written, then said
        last()
        raise
    return last()


def _run_server(server: Any, transport: str, host: str, port: int, ready: Any) -> None:
    """Until the client disconnects (stdio) or the process is stopped (http; uvicorn stops gracefully on Ctrl-C and
    raises it again after)."""
    if transport == "stdio":
        server.run()
        return
    import socket
    import threading

    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    app = server.streamable_http_app(host=host)
    uv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    if ready is not None:
        def announce() -> None:
            while not uv.started:
                time.sleep(0.01)
            ready(sock.getsockname()[1])
        threading.Thread(target=announce, daemon=True).start()
    try:
        uv.run(sockets=[sock])
    finally:
        sock.close()
