"""stepgraph.torch: run a verified schedule's step graph inside a torch.distributed job.

    import torch, stepgraph.torch as sgt
    sgt.init_process_group()                          # from mpiexec / srun / torchrun variables
    x = torch.randn(1 << 20)
    sgt.allreduce("ring_allreduce", x)                # x now holds the sum over every rank

`run(graph_or_name, buffers)` executes this rank's steps with the graph's dependencies: sends and
receives as torch.distributed point-to-point operations (matched by the graph, one tag per
message), copies and reductions as torch operations on the buffers' chunks, collective steps as
torch.distributed collectives on subgroups. Before anything runs, the schedule is checked at this
N (the check `sim` and `exec` run, cached per schedule, N and parameters): a schedule with a
defect raises stepgraph.DefectError with the verdict and the source line, and nothing is sent.

Not yet: attention tiles (compute steps) and receives from any rank; they raise
NotImplementedError naming the step's line (docs/python.md).
"""

import os
import threading
import time
from typing import Any, Dict, List, Optional, Tuple, Union

import torch
import torch.distributed as dist

import stepgraph as _sg

__all__ = ["init_process_group", "launcher_env", "run", "allreduce", "RunStats"]

_DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16, "i32": torch.int32,
           "i64": torch.int64}
_OPS = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN, "prod": dist.ReduceOp.PRODUCT}


def launcher_env() -> Tuple[int, int, int, str]:
    """(rank, world size, local rank, launcher) from the variables the launcher sets: torchrun
    (RANK, WORLD_SIZE, LOCAL_RANK), Open MPI's mpiexec (OMPI_COMM_WORLD_*), MPICH's Hydra
    (PMI_RANK, PMI_SIZE), Slurm's srun (SLURM_PROCID, SLURM_NTASKS); (0, 1, 0, "none") alone."""
    e = os.environ
    for launcher, r, n, lr in (("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
                               ("mpiexec (Open MPI)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
                               ("mpiexec (Hydra)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
                               ("srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID")):
        if r in e and n in e:
            return int(e[r]), int(e[n]), int(e.get(lr, "0") or 0), launcher
    return 0, 1, 0, "none"


def init_process_group(backend: Optional[str] = None, timeout_s: float = 120) -> None:
    """Joins the job the launcher started: gloo on CPU, NCCL where CUDA is available (or
    `backend`). The rendezvous is MASTER_ADDR:MASTER_PORT where the launcher (torchrun) or the user
    set them, else this machine and a port derived from the job's id, so that every rank of one
    mpiexec or srun picks the same one."""
    if dist.is_initialized():
        return
    rank, size, local, launcher = launcher_env()
    e = os.environ
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    if "MASTER_ADDR" not in e:
        e["MASTER_ADDR"] = "127.0.0.1"
    if "MASTER_PORT" not in e:
        job = e.get("OMPI_MCA_orte_hnp_uri", "") or e.get("OMPI_MCA_ess_base_jobid", "") or e.get("SLURM_JOB_ID", "") or \
            e.get("PMI_ID", "") or str(os.getppid())
        e["MASTER_PORT"] = str(20000 + sum(ord(c) * (i + 1) for i, c in enumerate(job)) % 20000)
    if backend == "nccl":
        torch.cuda.set_device(local % max(1, torch.cuda.device_count()))
    import datetime
    dist.init_process_group(backend, rank=rank, world_size=size, timeout=datetime.timedelta(seconds=timeout_s))


class RunStats:
    """What one run did on this rank: steps run, messages and bytes sent, seconds."""

    def __init__(self):
        self.steps = 0
        self.messages = 0
        self.bytes_sent = 0
        self.seconds = 0.0
        self.check = ""  # the check's line ("checked: ok (verify at N = 4, ...)")

    def __repr__(self):
        return (f"RunStats(steps={self.steps}, messages={self.messages}, bytes_sent={self.bytes_sent}, "
                f"seconds={self.seconds:.6f}, check={self.check!r})")


_checked: Dict[Any, dict] = {}
_graphs: Dict[Any, "_sg.Graph"] = {}
_groups: Dict[Tuple[int, ...], Any] = {}


def _check_first(req: dict) -> str:
    """The check before the run, once per schedule, N and parameters; raises DefectError."""
    key = (req["target"], req["n"], tuple(sorted((k, str(v)) for k, v in req["set"].items())))
    pc = _checked.get(key)
    if pc is None:
        pc = _sg.precheck(req["target"], req["n"], req["set"], max_memory=req.get("max_memory"), rendezvous=True)
        _checked[key] = pc
    if pc["state"] == "defect":
        raise _sg.DefectError(f"{req['target']} at N = {req['n']} was not run: {pc['line']}\n{pc.get('detail', '')}".rstrip(),
                              pc.get("verdict", ""), pc)
    return pc["line"]


def _graph_for(target, n: int, params: Dict[str, Any]) -> "_sg.Graph":
    if isinstance(target, _sg.Graph):
        return target
    key = (target, n, tuple(sorted((k, str(v)) for k, v in params.items())))
    g = _graphs.get(key)
    if g is None:
        g = _sg.compile(target, n=n, set=params)
        _graphs[key] = g
    return g


def _group(members: Tuple[int, ...], world_group):
    """A torch.distributed group of the graph's ranks. new_group is collective over the job: every
    rank asks for the same groups in the same order (they all hold the same graph)."""
    if len(members) == dist.get_world_size(world_group) and world_group is None:
        return None
    if members not in _groups:
        _groups[members] = dist.new_group(list(members))
    return _groups[members]


class _Flat:
    """A buffer as a flat tensor, cut into chunks of `chunk` elements."""

    def __init__(self, t: torch.Tensor, chunk_elems: int):
        self.t = t
        self.flat = t.view(-1)
        self.ce = chunk_elems

    def chunks(self, lo: int, count: int) -> torch.Tensor:
        return self.flat[lo * self.ce:(lo + count) * self.ce]


_CV = threading.Condition()  # operations in flight wake the runner through it


class _Op:
    """A point-to-point operation in flight. Gloo's send and receive works say they are complete
    only once wait() has returned, so a thread per operation waits (wait() releases the GIL) and
    wakes the runner through `cv`."""

    finished_count = 0  # operations finished, over all runs (under cv)

    def __init__(self, work, cv: threading.Condition, staging=None):
        self.work = work
        self.staging = staging
        self.done = False
        self.error: Optional[BaseException] = None
        self.cv = cv
        threading.Thread(target=self._wait, daemon=True).start()

    def _wait(self):
        try:
            self.work.wait()
        except BaseException as e:  # noqa: BLE001 (handed to the runner)
            self.error = e
        with self.cv:
            self.done = True
            _Op.finished_count += 1
            self.cv.notify_all()

    def finished(self) -> bool:
        if self.done and self.error is not None:
            raise self.error
        return self.done


def _where(s) -> str:
    return f"{s.file}:{s.line}:{s.col}"


def _apply(dst: torch.Tensor, src: torch.Tensor, op: Optional[str]):
    if not op:
        dst.copy_(src)
    elif op == "sum":
        dst.add_(src)
    elif op == "max":
        torch.maximum(dst, src, out=dst)
    elif op == "min":
        torch.minimum(dst, src, out=dst)
    elif op == "prod":
        dst.mul_(src)
    else:
        raise NotImplementedError(f"reduction '{op}'")


def run(graph_or_name: Union[str, "_sg.Graph"], buffers: Dict[str, torch.Tensor], group=None, *, timeout_s: float = 60,
        **params) -> RunStats:
    """Runs this rank's steps of a schedule on `buffers` (name -> tensor; buffers not given are
    allocated as zeros of the graph's size and dtype). The graph is built for the group's size with
    `params` (e.g. size=...), or given as a stepgraph.Graph; either way it is checked first.
    A user buffer must hold at least the graph's bytes (chunk sizes are in the tensor's own
    element size). Raises TimeoutError naming what each waiting step waits on."""
    if not dist.is_initialized():
        raise RuntimeError("stepgraph.torch.run: call stepgraph.torch.init_process_group() first")
    me_world = dist.get_rank()
    if group is None:
        members = tuple(range(dist.get_world_size()))
    elif hasattr(dist, "get_process_group_ranks"):
        members = tuple(dist.get_process_group_ranks(group))
    else:
        raise NotImplementedError("run(group=...) needs torch >= 2.0 (dist.get_process_group_ranks)")
    n = len(members)
    me = members.index(me_world)
    g = _graph_for(graph_or_name, n, params)
    if g.ranks != n:
        raise _sg.StepgraphError(f"the graph is built for {g.ranks} ranks; the group has {n}")
    req = getattr(g, "request", None)
    if req is None:
        raise _sg.StepgraphError("run needs a graph from stepgraph.compile (one it can check)")
    stats = RunStats()
    stats.check = _check_first(req)
    t0 = time.perf_counter()

    # Buffers: the user's, flat; the rest allocated.
    device = next((t.device for t in buffers.values()), torch.device("cpu"))
    flat: Dict[str, _Flat] = {}
    for name, b in g.buffers.items():
        if name in buffers:
            t = buffers[name]
            if not t.is_contiguous():
                raise _sg.StepgraphError(f"buffer {name}: the tensor must be contiguous")
            es = t.element_size()
            if b.chunk_bytes % es:
                raise _sg.StepgraphError(f"buffer {name}: a chunk of {b.chunk_bytes} bytes is not a whole number of {t.dtype} elements")
            if t.numel() * es < b.chunks * b.chunk_bytes:
                raise _sg.StepgraphError(f"buffer {name}: the graph needs {b.chunks * b.chunk_bytes} bytes, the tensor holds {t.numel() * es}")
            flat[name] = _Flat(t, b.chunk_bytes // es)
        else:
            # A buffer of the schedule's own (a staging or scratch buffer) holds the user's element
            # type where it has the same one in the graph: sizes came from the user's bytes.
            dt = _DTYPES.get(b.dtype, torch.float32)
            for un, ut in buffers.items():
                if un in g.buffers and g.buffers[un].dtype == b.dtype:
                    dt = ut.dtype
                    break
            es = torch.empty((), dtype=dt).element_size()
            flat[name] = _Flat(torch.zeros(b.chunks * b.chunk_bytes // es, dtype=dt, device=device), b.chunk_bytes // es)

    comm = group
    steps = g.steps_of(me)
    # Refuse what this runner does not do yet, before anything moves.
    for s in steps:
        if s.kind == "compute":
            raise NotImplementedError(f"{_where(s)}: compute steps ({s.raw.get('kernel')}) do not run under stepgraph.torch yet")
        if s.kind in ("send", "recv") and (s.peer == "any" or s.match is None):
            raise NotImplementedError(f"{_where(s)}: a {s.kind} without a matched peer (any source) does not run under stepgraph.torch yet")
    coll_groups = {}
    for gi, gr in enumerate(g.json.get("groups", [])):
        ranks = tuple(members[gr["start"] + k * gr["stride"]] for k in range(gr["count"]))
        coll_groups[gi] = ranks
    uses = sorted({s.raw["group"] for s in g.steps if s.kind == "collective"})
    torch_groups = {gi: _group(coll_groups[gi], group) for gi in uses}

    done = set()
    cv = _CV
    started: Dict[int, _Op] = {}
    # Receives are posted at once into staging (the language's choreographic receive) and applied
    # once the steps before them on this rank are done; sends start when their dependencies are
    # done and are done when torch says the message went.
    for s in steps:
        if s.kind == "recv":
            dst = flat[s.buffer].chunks(s.lo, s.count)
            staging = torch.empty_like(dst)
            started[s.id] = _Op(dist.irecv(staging, src=members[s.peer], group=comm, tag=s.match), cv, staging)
    pending = list(steps)
    deadline = time.monotonic() + timeout_s
    seen = -1
    while pending:
        progress = False
        with cv:
            seen = _Op.finished_count
        rest = []
        for s in pending:
            if any(d not in done for d in s.deps):
                rest.append(s)
                continue
            if s.kind == "send":
                if s.id not in started:
                    src = flat[s.buffer].chunks(s.lo, s.count)
                    started[s.id] = _Op(dist.isend(src, dst=members[s.peer], group=comm, tag=s.id), cv)
                    stats.messages += 1
                    stats.bytes_sent += src.numel() * src.element_size()
                    progress = True
                if started[s.id].finished():
                    done.add(s.id)
                    progress = True
                else:
                    rest.append(s)
                continue
            if s.kind == "recv":
                op = started[s.id]
                if not op.finished():
                    rest.append(s)
                    continue
                _apply(flat[s.buffer].chunks(s.lo, s.count), op.staging, s.reduce)
            elif s.kind in ("copy", "reduce"):
                src = s.raw["source"]
                _apply(flat[s.buffer].chunks(s.lo, s.count), flat[src["buffer"]].chunks(src["lo"], src["count"]),
                       s.raw.get("op", "sum") if s.kind == "reduce" else None)
            elif s.kind == "collective":
                _collective(s, flat, torch_groups[s.raw["group"]], coll_groups[s.raw["group"]], members, me_world)
            elif s.kind == "wait":
                if any(h not in done for h in s.raw.get("handles", [])):
                    rest.append(s)
                    continue
            else:
                raise NotImplementedError(f"{_where(s)}: {s.kind} steps do not run under stepgraph.torch yet")
            done.add(s.id)
            progress = True
        pending = rest
        if progress:
            deadline = time.monotonic() + timeout_s
        elif pending:
            if time.monotonic() > deadline:
                raise TimeoutError(_stuck(me, pending, done, timeout_s))
            with cv:  # until another operation finishes
                if _Op.finished_count == seen:
                    cv.wait(timeout=0.05)
                seen = _Op.finished_count
    stats.steps = len(steps)
    stats.seconds = time.perf_counter() - t0
    return stats


def _stuck(me: int, pending, done, timeout_s: float) -> str:
    lines = [f"rank {me}: no progress for {timeout_s:g} s; waiting:"]
    for s in pending[:8]:
        deps = [d for d in s.deps if d not in done]
        what = f"{s.kind} {'to' if s.kind == 'send' else 'from'} rank {s.peer}" if s.kind in ("send", "recv") else s.kind
        lines.append(f"  step {s.id} ({what}, {_where(s)})" + (f" on steps {deps}" if deps else " for its message"))
    if len(pending) > 8:
        lines.append(f"  ... and {len(pending) - 8} more")
    return "\n".join(lines)


def _collective(s, flat: Dict[str, _Flat], tg, members: Tuple[int, ...], outer: Tuple[int, ...], me_world: int):
    """A collective step on its chunks (docs/language.md's semantics: a slice of g*k chunks over a
    group of g members, member k owns block k)."""
    kind = s.raw["collective"]
    op = _OPS.get(s.raw.get("op", "sum"), dist.ReduceOp.SUM)
    x = flat[s.buffer].chunks(s.lo, s.count) if s.buffer else None
    gsize = len(members)
    k = members.index(me_world)
    if kind == "allreduce":
        dist.all_reduce(x, op=op, group=tg)
    elif kind == "bcast":
        dist.broadcast(x, src=outer[s.raw["root"]], group=tg)
    elif kind == "reduce":
        dist.reduce(x, dst=outer[s.raw["root"]], op=op, group=tg)
    elif kind == "barrier":
        dist.barrier(group=tg)
    elif kind == "allgather":
        blocks = list(x.chunk(gsize))
        mine = blocks[k].clone()
        dist.all_gather(blocks, mine, group=tg)
    elif kind == "reduce_scatter":
        blocks = [b.clone() for b in x.chunk(gsize)]
        for j, b in enumerate(blocks):  # gloo has no reduce_scatter: a reduce per block
            dist.reduce(b, dst=members[j], op=op, group=tg)
        x.chunk(gsize)[k].copy_(blocks[k])
    elif kind == "alltoall":
        into = s.raw.get("into")
        out = flat[into["buffer"]].chunks(into["lo"], into["count"]) if into else x
        ins = [b.clone() for b in x.chunk(gsize)]
        outs = list(out.chunk(gsize))
        reqs = []
        for j in range(gsize):
            if j == k:
                outs[j].copy_(ins[j])
                continue
            reqs.append(dist.isend(ins[j], dst=members[j], group=tg, tag=1 << 20))
            reqs.append(dist.irecv(outs[j], src=members[j], group=tg, tag=1 << 20))
        for r in reqs:
            r.wait()
    else:
        raise NotImplementedError(f"{_where(s)}: collective {kind}")


def allreduce(name: str, tensor: torch.Tensor, group=None, **params) -> RunStats:
    """All-reduces `tensor` in place (sum) with the library schedule `name` (ring_allreduce,
    recursive_doubling_allreduce, ...), as dist.all_reduce would. The schedule's size is the
    tensor's bytes, rounded up to what its chunks divide (the padding is zeros)."""
    n = dist.get_world_size(group)
    es = tensor.element_size()
    numel = tensor.numel()
    size = numel * es
    g = _graph_for(name, n, dict(params, size=size))
    bufs = [b for b in g.buffers.values()]
    data = g.buffers.get("data") or bufs[0]
    need = data.chunks * data.chunk_bytes
    if need < size or data.chunk_bytes % es:
        # Round up to a multiple of the chunk count in whole elements.
        per = data.chunks * es
        size = -(-size // per) * per
        g = _graph_for(name, n, dict(params, size=size))
        data = g.buffers.get("data") or list(g.buffers.values())[0]
        need = data.chunks * data.chunk_bytes
    flat = tensor.view(-1) if tensor.is_contiguous() else tensor.reshape(-1).clone()
    if need == numel * es:
        work = flat
    else:
        work = torch.zeros(need // es, dtype=tensor.dtype, device=tensor.device)
        work[:numel].copy_(flat)
    stats = run(g, {data.name: work}, group=group)
    if work is not flat:
        flat.copy_(work[:numel])
    if flat.data_ptr() != tensor.data_ptr():
        tensor.copy_(flat.view_as(tensor))
    return stats
