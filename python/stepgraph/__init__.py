"""stepgraph from Python: the commands as functions, results as the command's --json gives them.

    import stepgraph
    stepgraph.verify("ring_allreduce", n=8)            # == stepgraph verify ring_allreduce -n 8 --json
    g = stepgraph.compile("ring_allreduce", n=4, set={"size": "1MiB"})
    g.steps_of(0)                                       # rank 0's steps: kind, peer, chunks, bytes, deps, line

Every function takes what the command line takes (a target: a library name, FILE or
FILE:SCHEDULE; n: a rank count or a list of them; set: the schedule's parameters) and calls the
same library (api/api.hpp) the command line calls. Bad input raises StepgraphError, which carries
the located diagnostics (file, line, column, message) as data and rendered with the source line
and a caret. stepgraph.torch runs a verified schedule on torch tensors (docs/python.md).
"""

import json as _json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Union

from . import _stepgraph

__version__ = _stepgraph.version

__all__ = ["StepgraphError", "DefectError", "Graph", "Step", "Buffer", "list", "compile", "check", "verify", "analyze", "sim",
           "precheck", "stream_order"]


class StepgraphError(ValueError):
    """Bad input: what the command line reports with exit code 2.

    message: one line; rendered: the diagnostics as the command line prints them
    ("file:line:col: error: ...", the source line, a caret); diagnostics: the same as a list
    of dicts (severity, file, line, col, message, notes).
    """

    def __init__(self, message: str, rendered: str = "", diagnostics: Optional[List[dict]] = None):
        super().__init__(message + ("\n" + rendered.rstrip("\n") if rendered else ""))
        self.message = message
        self.rendered = rendered
        self.diagnostics = diagnostics or []


class DefectError(StepgraphError):
    """A schedule with a defect was refused before it ran (stepgraph.torch): verdict and where."""

    def __init__(self, message: str, verdict: str, result: Any):
        super().__init__(message)
        self.verdict = verdict
        self.result = result


def _call(fn, *args):
    try:
        return fn(*args)
    except _stepgraph.BadInput as e:
        message, rendered, diags = e.args
        raise StepgraphError(message, rendered, _json.loads(diags)) from None


def _ranks(n) -> List[int]:
    if n is None:
        return []
    if isinstance(n, bool):
        raise TypeError("n is a rank count or a list of them")
    out = [n] if isinstance(n, int) else [int(x) for x in n]
    if not out:
        raise StepgraphError("n: an empty list of rank counts")
    for x in out:
        if not 1 <= x < 1 << 31:
            raise StepgraphError(f"n: {x} is not a rank count (at least 1)")
    return out


def _params(set: Optional[Dict[str, Any]]):
    if not set:
        return []
    return [(str(k), str(v)) for k, v in set.items()]


def _memory(max_memory) -> Optional[int]:
    if max_memory is None:
        return None
    if isinstance(max_memory, int):
        return max_memory
    return _call(_stepgraph.size_bytes, str(max_memory))


def list() -> List[dict]:  # noqa: A001 (the command's name)
    """The schedule library: [{"name", "path", "description"}], as `stepgraph list --json`."""
    return _json.loads(_stepgraph.list_json())


@dataclass
class Buffer:
    name: str
    dims: List[int]
    chunk_bytes: int
    dtype: str
    accumulator: bool

    @property
    def chunks(self) -> int:
        c = 1
        for d in self.dims:
            c *= d
        return c


@dataclass
class Step:
    """One step of one rank. kind: send, recv, copy, reduce, compute, collective, wait, ...;
    buffer/lo/count: the chunks it touches (chunk indices into the buffer, flattened); bytes:
    their size; peer and match: the other rank and its step (sends and receives); deps: the
    steps it waits for; file/line/col: the statement that made it."""

    id: int
    rank: int
    kind: str
    buffer: Optional[str]
    lo: int
    count: int
    bytes: int
    peer: Optional[int]
    match: Optional[int]
    reduce: Optional[str]
    deps: List[int]
    file: str
    line: int
    col: int
    raw: dict = field(repr=False)


class Graph:
    """A compiled step graph (`stepgraph compile --format json`, as objects).

    ranks, params, buffers (name -> Buffer), steps (all, by id), steps_of(rank), json (the dict
    the command prints), warnings (rendered, as the command prints them on stderr)."""

    def __init__(self, data: dict, warnings: str = ""):
        self.json = data
        self.warnings = warnings
        self.schedule: str = data["schedule"]
        self.file: str = data.get("file", "")
        self.ranks: int = data["ranks"]
        self.params: Dict[str, int] = data.get("params", {})
        self.buffers: Dict[str, Buffer] = {
            b["name"]: Buffer(b["name"], b["dims"], b["chunk_bytes"], b["dtype"], b.get("accumulator", False))
            for b in data.get("buffers", [])
        }
        self.steps: List[Step] = []
        by_rank: Dict[int, List[Step]] = {}
        for s in data.get("steps", []):
            ch = s.get("chunks") or {}
            buf = ch.get("buffer")
            count = ch.get("count", 0)
            size = count * self.buffers[buf].chunk_bytes if buf in self.buffers else 0
            st = Step(s["id"], s["rank"], s["kind"], buf, ch.get("lo", 0), count, size, s.get("peer"), s.get("match"),
                      s.get("reduce"), s.get("deps", []), s.get("file", ""), s.get("line", 0), s.get("col", 0), s)
            self.steps.append(st)
            by_rank.setdefault(st.rank, []).append(st)
        self._by_rank = by_rank

    def digest(self) -> int:
        """A fingerprint of the graph as it stands (its JSON and its steps): stepgraph.torch runs a
        graph only as stepgraph.compile built it, since that is what was checked."""
        steps = tuple((s.id, s.rank, s.kind, s.buffer, s.lo, s.count, s.peer, s.match, s.reduce, tuple(s.deps)) for s in self.steps)
        return hash((_json.dumps(self.json, sort_keys=True), steps))

    def steps_of(self, rank: int) -> List[Step]:
        """Rank `rank`'s steps, in program order."""
        return self._by_rank.get(rank, [])

    def __repr__(self) -> str:
        return f"Graph({self.schedule!r}, ranks={self.ranks}, steps={len(self.steps)}, params={self.params})"


def compile(target: str, n: Optional[int] = None, set: Optional[Dict[str, Any]] = None, *, max_memory=None,  # noqa: A001
            expand: bool = False, algo: str = "", rank: int = -1) -> Graph:
    """Builds one instance (`stepgraph compile TARGET -n N --format json`) as a Graph."""
    ranks = _ranks(n)
    if len(ranks) > 1:
        raise StepgraphError("compile takes one rank count")
    text, warnings = _call(_stepgraph.compile_json, target, ranks, _params(set), _memory(max_memory), expand, algo or "", rank)
    g = Graph(_json.loads(text), warnings)
    g.built_digest = g.digest()
    # What it was built from: stepgraph.torch checks that before it runs the graph.
    g.request = {"target": target, "n": g.ranks, "set": dict(set or {}), "max_memory": max_memory, "expand": expand or bool(algo),
                 "algo": algo or ""}
    return g


def stream_order(target: str, n: int, set: Optional[Dict[str, Any]] = None, *, max_memory=None) -> dict:
    """Every rank's stream order (`stepgraph compile --format stream`, as data): {"groups": [G per
    rank], "level": [per rank, per step in the rank's order: its group (transfers, collectives)
    or level (local work)], "key": [the order within a group]}. The one global order NCCL needs."""
    return _json.loads(_call(_stepgraph.stream_order_json, target, [int(n)], _params(set), _memory(max_memory)))


def precheck(target: str, n: int, set: Optional[Dict[str, Any]] = None, *, max_memory=None, rendezvous: bool = False) -> dict:
    """The check `sim` and `exec` run before they run a schedule (verify's explicit engine within a
    budget, at N or the largest of 64, 32, ... below it the schedule accepts): {"state": "ok" |
    "defect" | "not checked", "n", "semantics", "verdict", "summary" (with file:line), "why_not",
    "line" (one line), "detail" (the counterexample with source lines)}."""
    return _json.loads(_call(_stepgraph.precheck_json, target, int(n), _params(set), _memory(max_memory), rendezvous))


def check(target: str, n=None, set: Optional[Dict[str, Any]] = None, *, max_memory=None) -> List[dict]:
    """`stepgraph check TARGET -n N --json`: a list, one result per N (ok, deadlock, wrong-result, ...)."""
    text, _ = _call(_stepgraph.check_json, target, _ranks(n), _params(set), _memory(max_memory))
    return _json.loads(text)


def verify(target: str, n=None, set: Optional[Dict[str, Any]] = None, *, max_memory=None, semantics: str = "auto",
           engine: str = "auto", slots: int = 0, timeout: float = 0, max_executions: int = 20000, timing: bool = False):
    """`stepgraph verify TARGET -n N --json`: one dict for one N, a list for several. A defect is a
    result (its verdicts and counterexample, with source lines), not an exception."""
    text, _ = _call(_stepgraph.verify_json, target, _ranks(n), _params(set), _memory(max_memory), semantics, engine, slots,
                    float(timeout), max_executions, timing)
    return _json.loads(text)


def analyze(target: str, n=None, set: Optional[Dict[str, Any]] = None, *, max_memory=None, algo: str = "", unit: str = ""):
    """`stepgraph analyze TARGET -n N --json`: per-rank bytes, messages, compute and memory."""
    text, _ = _call(_stepgraph.analyze_json, target, _ranks(n), _params(set), _memory(max_memory), algo or "", unit or "")
    return _json.loads(text)


def sim(target: str, n=None, set: Optional[Dict[str, Any]] = None, *, platform: str = "", model: str = "simgrid",
        max_memory=None, algo: str = "", allow_defects: bool = False, collectives: str = "expand"):
    """`stepgraph sim TARGET -n N --platform P --model M --collectives C --json`: one dict for one N, a list for several."""
    text, _ = _call(_stepgraph.sim_json, target, _ranks(n), _params(set), _memory(max_memory), platform or "", model, algo or "",
                    allow_defects, collectives)
    return _json.loads(text)
