"""`voe serve`: the replay environment as an MCP server (the official `mcp` SDK), so that an agent on its own surface
(a coding agent, an MCP-speaking IDE) plays the tasks and what it does is a voe run.

One server is one run: `list_tasks` names the tasks (policy-visible text only) and how many passes of each are
left, `start_task` opens an episode of one (one at a time: the environment is a single episode, as a player has
one board), and the seven actions are tools — the three requests take a menu entry id (an enum of the package's
entry ids; the environment checks it against the open task's menu, as it does for every policy), the three
terminals a payload of entry ids, `abstain_or_escalate` nothing. Each call returns what the environment answered
(the outcome, the observation of a request), exactly as an `openai:` agent reads it. The resource
`voe://task` is the open task's text. Every step goes through the same `ReplayEnv`; when an episode ends, the run
folder is written again whole (run.json, steps.jsonl, observations.jsonl, trajectories.jsonl, schema/), so it is
always a complete voe run of the finished episodes that `voe score`, `voe report` and `voe export --runs` read.
run.json names the client (`policy` is `mcp:NAME/VERSION`, `settings.client` its name and version).

The answers file is never read: the package is loaded and its verifier-only answers dropped at once, so no tool
or resource can reach them. Calls of one session may arrive concurrently; a lock keeps each step whole.
"""

import asyncio
import json
import time
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from voe.artifacts.package import REQUESTS, TERMINALS, Action, TaskView, load_package
from voe.artifacts.run import RunInfo, StepRecord, TrajectorySummary, write_run_files, write_run_schemas
from voe.errors import UsageError
from voe.replay.agent import DESCRIPTIONS, observation_text, task_text
from voe.replay.env import ReplayEnv

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
        self.played: Counter[str] = Counter()
        self.steps: list[StepRecord] = []
        self.summaries: list[TrajectorySummary] = []
        self.client: dict[str, str] = {"name": "unknown", "version": "unknown"}
        self.started = time.perf_counter()
        self.lock = asyncio.Lock()
        self.entry_ids = sorted({e.entry_id for v in views for e in v.menu}, key=lambda x: (len(x), x))

    @property
    def policy(self) -> str:
        return f"mcp:{self.client['name']}/{self.client['version']}"

    @property
    def run_id(self) -> str:
        return f"run:mcp:{self.content_hash[:12]}:p{self.passes}"

    def tasks(self) -> list[dict[str, Any]]:
        return [{"task_id": t, "workflow_title": self.views[t].workflow_title, "question": self.views[t].question,
                 "passes_left": self.passes - self.played[t]} for t in self.order]

    def start(self, task_id: str) -> dict[str, Any]:
        if self.current is not None:
            raise UsageError(f"task {self.current.task_id} is still open: end it with a terminal action first")
        view = self.views.get(task_id)
        if view is None:
            raise UsageError(f"no task {task_id!r} in this package; list_tasks names them")
        if self.played[task_id] >= self.passes:
            raise UsageError(f"task {task_id} was played {self.passes} time(s), all its passes (voe serve --passes)")
        pass_index = self.played[task_id]
        self.env.reset(view, f"{self.run_id}/{task_id}/{pass_index}", self.policy, pass_index)
        self.current = view
        return {"task_id": task_id, "pass": pass_index, "task": task_text(view),
                "menu": [e.model_dump(mode="json") for e in view.menu]}

    def act(self, action: dict[str, Any]) -> dict[str, Any]:
        if self.current is None:
            raise UsageError("no task is open: call start_task first")
        rec, done = self.env.step(action)
        self.steps.append(rec)
        answer: dict[str, Any] = {"t": rec.t, **json.loads(observation_text(rec)), "done": done}
        if done:
            summary = self.env.summary.model_copy(deep=True)
            self.summaries.append(summary)
            self.played[self.current.task_id] += 1
            self.current = None
            answer["end"] = summary.end
            self.write()
        return answer

    def write(self) -> RunInfo:
        """The run folder as it stands: every finished episode, in the order played."""
        self.out.mkdir(parents=True, exist_ok=True)
        finished = {s.trajectory_id for s in self.summaries}
        write_run_files(self.out, [s for s in self.steps if s.trajectory_id in finished], self.summaries)
        info = RunInfo(run_id=self.run_id, policy=self.policy, passes=self.passes, seed=0,
                       package=str(self.pkg.resolve()), content_hash=self.content_hash, tasks=len(self.views),
                       trajectories=len(self.summaries), seconds=round(time.perf_counter() - self.started, 3),
                       settings={"client": dict(self.client), "surface": "mcp"})
        (self.out / "run.json").write_text(json.dumps(info.model_dump(), indent=2, sort_keys=True) + "\n")
        write_run_schemas(self.out)
        return info


def build_server(run: ServedRun) -> Any:
    """The MCP server over `run` (mcp's MCPServer, the 2.x name of FastMCP)."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from voe import __version__

    server = MCPServer(NAME, version=__version__, log_level="WARNING",
                       instructions="Review the evidence behind decisions of a published experiment archive: "
                                    "list_tasks, start_task, then request items and end with one terminal action. "
                                    "Only what the archive holds is shown; every step counts.")
    entry = Literal[tuple(run.entry_ids)]  # type: ignore[valid-type]  # the package's entry ids, as an enum

    def who(ctx: Context) -> None:
        params = ctx.session.client_params
        if params is not None and params.client_info is not None:
            run.client = {"name": params.client_info.name, "version": params.client_info.version}

    async def step(ctx: Context, action: dict[str, Any]) -> dict[str, Any]:
        who(ctx)
        async with run.lock:
            try:
                return run.act(action)
            except UsageError as exc:  # the client's mistake: told to it, no traceback in the server's log
                raise ToolError(str(exc)) from None

    @server.tool(description="The tasks of this package: id, workflow, question and passes left.")
    async def list_tasks(ctx: Context) -> dict[str, Any]:
        who(ctx)
        return {"tasks": run.tasks()}

    @server.tool(description="Open an episode of one task: its question, menu (entry ids), actions and horizon.")
    async def start_task(task_id: Annotated[str, Field(description="a task id from list_tasks")],
                         ctx: Context) -> dict[str, Any]:
        who(ctx)
        async with run.lock:
            try:
                return run.start(task_id)
            except UsageError as exc:
                raise ToolError(str(exc)) from None

    def request_tool(action: Action) -> Any:
        async def request(evidence_id: Any, ctx: Context) -> dict[str, Any]:
            return await step(ctx, {"action": action.value, "evidence_id": evidence_id})
        request.__annotations__ = {"evidence_id": Annotated[entry, Field(description="a menu entry id")],
                                   "ctx": Context, "return": dict[str, Any]}
        return request

    def terminal_tool(action: Action) -> Any:
        async def terminal(payload: Any, ctx: Context) -> dict[str, Any]:
            return await step(ctx, {"action": action.value, "payload": list(payload)})
        terminal.__annotations__ = {"payload": Annotated[list[entry], Field(description="menu entry ids")],  # type: ignore[valid-type]
                                    "ctx": Context, "return": dict[str, Any]}
        return terminal

    async def abstain(ctx: Context) -> dict[str, Any]:
        return await step(ctx, {"action": Action.ABSTAIN_OR_ESCALATE.value})

    for action in REQUESTS:
        server.add_tool(request_tool(action), name=action.value, description=DESCRIPTIONS[action])
    for action in TERMINALS:
        fn = abstain if action == Action.ABSTAIN_OR_ESCALATE else terminal_tool(action)
        server.add_tool(fn, name=action.value, description=DESCRIPTIONS[action])

    @server.resource("voe://task", name="task", mime_type="text/plain",
                     description="The open task as a policy sees it (its question, menu, actions and horizon).")
    def task() -> str:
        return task_text(run.current) if run.current is not None else "No task is open: call start_task."

    return server


def serve(pkg: Path, out: Path, *, passes: int = 1, transport: str = "stdio", host: str = "127.0.0.1",
          port: int = 0, ready: Any = None) -> RunInfo:
    """Serve until the client disconnects (stdio) or the process is stopped (http); the run folder is current
    after every finished episode. `ready(port)` is called once an http server accepts connections."""
    run = ServedRun(pkg, out, passes)
    run.write()  # an empty run at once: the folder exists and says what is being played
    server = build_server(run)
    if transport == "stdio":
        server.run()
        return run.write()
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
    return run.write()
