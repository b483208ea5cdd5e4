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

attention(name, q, k, v, causal=...) and attention_backward(...) run a context-parallel
attention schedule (ring, zigzag, stripe, p2p, all-gather, Ulysses, RingX) on this rank's shards
(layout(name, seq=...) gives each rank's rows). Under NCCL transfers go in the schedule's one
global order (the stream order). Not yet: receives from any rank, a reduce-scatter of attention
partials, bf16 backward bundles; they raise NotImplementedError naming the step's line
(docs/python.md).
"""

import atexit
import os
import threading
import time
from typing import Any, Dict, List, Optional, Tuple, Union

import torch
import torch.distributed as dist

import stepgraph as _sg

__all__ = ["init_process_group", "launcher_env", "run", "allreduce", "attention", "attention_backward", "layout", "RunStats"]

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
        # Below Linux's ephemeral ports (32768 and up by default), which the launcher's own
        # connections take: a port derived into them was found in use once, failing a test.
        lo, hi = 20000, 32768
        try:
            with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
                first = int(f.read().split()[0])
            if first - 1024 > 4096:
                hi = first
                lo = max(1024, min(lo, hi - 12768))
        except (OSError, ValueError, IndexError):
            pass
        e["MASTER_PORT"] = str(lo + sum(ord(c) * (i + 1) for i, c in enumerate(job)) % (hi - lo))
    if backend == "nccl":
        torch.cuda.set_device(local % max(1, torch.cuda.device_count()))
    import datetime
    dist.init_process_group(backend, rank=rank, world_size=size, timeout=datetime.timedelta(seconds=timeout_s))
    atexit.register(_shutdown)


def _shutdown():
    """The group this module started ends before the interpreter does: left to static destruction,
    gloo's process group can end a process with std::terminate (seen 1 run in ~10, torch 1.13)."""
    if dist.is_initialized():
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 (at exit, nothing more to do)
            pass


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
_staging: Dict[int, Dict[int, torch.Tensor]] = {}  # id(graph) -> receive step -> its staging tensor


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


_ALLTOALL_TAG = 1 << 30  # above every step id: a message's tag is its sending step's id
_CV = threading.Condition()  # operations in flight wake the runner through it


class _Waiters:
    """Threads that wait on point-to-point works. Gloo's send and receive works say they are
    complete only once wait() has returned, so someone must block in wait() (it releases the GIL)
    for each operation in flight. Threads are kept and reused: starting one costs about a
    millisecond on a loaded machine, more than a small message. A new one starts only when every
    kept thread is blocked, so an operation never waits behind another."""

    def __init__(self):
        self.lock = threading.Lock()
        self.jobs: List[Any] = []
        self.have_job = threading.Condition(self.lock)
        self.idle = 0  # threads waiting for a job
        self.waking = 0  # of those, told to take one and not yet awake

    def submit(self, op: "_Op"):
        with self.lock:
            self.jobs.append(op)
            if self.idle - self.waking > 0:
                self.waking += 1
                self.have_job.notify()
                return
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            with self.lock:
                while not self.jobs:
                    self.idle += 1
                    self.have_job.wait()
                    self.idle -= 1
                    if self.waking > 0:
                        self.waking -= 1
                op = self.jobs.pop(0)
            op._wait()


_WAITERS = _Waiters()


class _Op:
    """A point-to-point operation in flight; a waiter thread marks it done and wakes the runner
    through `cv`."""

    finished_count = 0  # operations finished, over all runs (under cv)

    def __init__(self, work, cv: threading.Condition, staging=None, waiter: bool = True):
        self.work = work
        self.staging = staging
        self.done = False
        self.error: Optional[BaseException] = None
        self.cv = cv
        if waiter:
            _WAITERS.submit(self)

    def wait_here(self):
        """For a send: every receive of the run is posted when it starts, on every rank, so a
        send completes without anything more from this rank, and the runner may block on it."""
        self.work.wait()
        self.done = True

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


def _apply(dst: torch.Tensor, src: torch.Tensor, op: Optional[str], merge_dim: int = 0):
    if op and merge_dim:
        _merge_rows(dst.view(-1, merge_dim + 1), src.view(-1, merge_dim + 1))
        return
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
        kernels: Optional[Dict[str, Any]] = None, ordered: Optional[bool] = None, **params) -> RunStats:
    """Runs this rank's steps of a schedule on `buffers` (name -> tensor; buffers not given are
    allocated as zeros of the graph's size and dtype). The graph is built for the group's size with
    `params` (e.g. size=...), or given as a stepgraph.Graph; either way it is checked first.
    A user buffer must hold at least the graph's bytes (chunk sizes are in the tensor's own
    element size). Attention tiles (`compute attn`) run on the kernels' layout (docs/exec.md,
    "Attention"): q [batch, heads, rows, dim], kv [2, batch, heads, rows, dim], O rows of dim + 1
    fp32 (the normalised output, then its log-sum-exp), merged with the online-softmax rule.
    Other compute steps call kernels[NAME](step, reads, writes) with the chunks as flat tensors.
    Raises TimeoutError naming what each waiting step waits on.

    ordered: issue transfers in the schedule's one global order of groups (the stream order that
    exec --transport nccl uses: NCCL matches a pair's transfers by issue order and has no
    buffered send), each group as one batch_isend_irecv, local work between groups. The default
    under NCCL; gloo runs dataflow order (ordered=True runs the NCCL order on gloo, as a test)."""
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
    if isinstance(graph_or_name, _sg.Graph) and g.digest() != getattr(g, "built_digest", None):
        raise _sg.StepgraphError("this graph was changed after stepgraph.compile built it, and only what was built can be checked "
                                 "before it runs: write the change in the schedule and compile that")
    stats = RunStats()
    stats.check = _check_first(req)
    t0 = time.perf_counter()

    # Buffers: the user's, flat; the rest allocated.
    device = next((t.device for t in buffers.values()), torch.device("cpu"))
    if not hasattr(g, "_merging"):  # what a graph implies, once per graph
        g._merging = _merge_set(g)
        g._collective_groups = sorted({s.raw["group"] for s in g.steps if s.kind == "collective"})
    merging = g._merging
    dim = int(g.params.get("dim", 0))
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
            # Bytes move between buffers unchanged: a user buffer of the same chunk size (a double
            # buffer beside its KV, a gradient partial beside dKV) gives the element type, else the
            # first user buffer of the same graph type.
            dt = _DTYPES.get(b.dtype, torch.float32)
            same = [ut for un, ut in buffers.items() if un in g.buffers and g.buffers[un].chunk_bytes == b.chunk_bytes]
            like = [ut for un, ut in buffers.items() if un in g.buffers and g.buffers[un].dtype == b.dtype and un not in merging]
            if same or like:
                dt = (same or like)[0].dtype
            if name in merging:  # attention partials: O|lse rows in fp32, empty (o = 0, lse = -inf)
                dt = torch.float32
            es = torch.empty((), dtype=dt).element_size()
            t = torch.zeros(b.chunks * b.chunk_bytes // es, dtype=dt, device=device)
            if name in merging:
                if not dim or t.numel() % (dim + 1):
                    raise _sg.StepgraphError(f"buffer {name}: attention rows need the parameter dim (rows of dim + 1 floats)")
                t.view(-1, dim + 1)[:, dim] = float("-inf")
            flat[name] = _Flat(t, b.chunk_bytes // es)

    comm = group
    steps = g.steps_of(me)
    # Refuse what this runner does not do yet, before anything moves.
    kernels = kernels or {}
    for s in steps:
        if s.kind == "compute" and s.raw.get("kernel") not in ("attn", "attn_bwd", "lse_max") and s.raw.get("kernel") not in kernels:
            raise NotImplementedError(f"{_where(s)}: compute {s.raw.get('kernel')}: stepgraph.torch runs attn tiles, and other kernels "
                                      f"given as run(..., kernels={{'{s.raw.get('kernel')}': fn}})")
        if s.kind == "collective" and s.buffer in merging and s.raw.get("collective") == "reduce_scatter":
            raise NotImplementedError(f"{_where(s)}: a reducing collective on attention partials ({s.buffer}) does not run under "
                                      "stepgraph.torch yet")
        if s.kind in ("send", "recv") and (s.peer == "any" or s.match is None):
            raise NotImplementedError(f"{_where(s)}: a {s.kind} without a matched peer (any source) does not run under stepgraph.torch yet")
    coll_groups = {}
    for gi, gr in enumerate(g.json.get("groups", [])):
        ranks = tuple(members[gr["start"] + k * gr["stride"]] for k in range(gr["count"]))
        coll_groups[gi] = ranks
    torch_groups = {gi: _group(coll_groups[gi], group) for gi in g._collective_groups}

    def local(s) -> None:  # a copy, reduction, compute or wait step, its dependencies done
        if s.kind in ("copy", "reduce"):
            src = s.raw["source"]
            _apply(flat[s.buffer].chunks(s.lo, s.count), flat[src["buffer"]].chunks(src["lo"], src["count"]),
                   s.raw.get("op", "sum") if s.kind == "reduce" else None, dim if s.buffer in merging else 0)
        elif s.kind == "compute":
            reads = [flat[r["buffer"]].chunks(r["lo"], r["count"]) for r in s.raw.get("reads", [])]
            writes = [flat[w["buffer"]].chunks(w["lo"], w["count"]) for w in s.raw.get("writes", [])]
            if s.raw.get("kernel") == "attn":
                _attn_tile(s, reads, writes, g, dim)
            elif s.raw.get("kernel") == "attn_bwd":
                _attn_bwd_tile(s, reads, writes, g, dim)
            elif s.raw.get("kernel") == "lse_max" and s.raw["kernel"] not in kernels:
                # RingX's: the partial's per-row lse (-inf where no tile wrote it), for the all-reduce
                # (op max) that rescales partials against the global maximum.
                writes[0].copy_(reads[0].view(-1, dim + 1)[:, dim].reshape(writes[0].shape))
            else:
                kernels[s.raw["kernel"]](s, reads, writes)
        elif s.kind != "wait":
            raise NotImplementedError(f"{_where(s)}: {s.kind} steps do not run under stepgraph.torch yet")

    if ordered is None:
        ordered = dist.get_backend(group) == "nccl"
    if ordered:
        _run_ordered(g, req, me, steps, flat, members, comm, merging, dim, local, torch_groups, coll_groups, me_world, stats)
        stats.steps = len(steps)
        stats.seconds = time.perf_counter() - t0
        return stats

    done = set()
    cv = _CV
    started: Dict[int, _Op] = {}
    # Collectives on one set of members run in this rank's program order, as the language matches
    # them (the k-th on a group is one instance) and as gloo needs (a group's collectives pair up
    # by their order of issue). Issued as each became ready, two collectives of one group could
    # run in different orders on two members: gloo then paired the wrong ones (a message of 2,048
    # bytes met a receive of 1,024, and the process aborted).
    coll_order: Dict[Any, List[int]] = {}
    for s in steps:
        if s.kind == "collective":
            coll_order.setdefault(coll_groups[s.raw["group"]], []).append(s.id)
    coll_next = {k: 0 for k in coll_order}
    # Receives are posted at once into staging (the language's choreographic receive) and applied
    # once the steps before them on this rank are done; sends start when their dependencies are
    # done and are done when torch says the message went.
    stage = _staging.setdefault(id(g), {})  # kept per graph: fresh pages cost more than the copy
    for s in steps:
        if s.kind == "recv":
            dst = flat[s.buffer].chunks(s.lo, s.count)
            staging = stage.get(s.id)
            if staging is None or staging.dtype != dst.dtype or staging.device != dst.device or staging.numel() != dst.numel():
                staging = stage[s.id] = torch.empty_like(dst)
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
                    started[s.id] = _Op(dist.isend(src, dst=members[s.peer], group=comm, tag=s.id), cv, waiter=False)
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
                _apply(flat[s.buffer].chunks(s.lo, s.count), op.staging, s.reduce, dim if s.buffer in merging else 0)
            elif s.kind == "collective":
                key = coll_groups[s.raw["group"]]
                if coll_order[key][coll_next[key]] != s.id:  # an earlier one on these members first
                    rest.append(s)
                    continue
                _collective(s, flat, torch_groups[s.raw["group"]], key, members, me_world, dim if s.buffer in merging else 0)
                coll_next[key] += 1
            elif s.kind == "wait" and any(h not in done for h in s.raw.get("handles", [])):
                rest.append(s)
                continue
            else:
                local(s)
            done.add(s.id)
            progress = True
        pending = rest
        if progress:
            deadline = time.monotonic() + timeout_s
        elif pending:
            # A send in flight: block on it (safe, see _Op.wait_here) rather than wake a thread.
            send = next((started[x.id] for x in pending if x.kind == "send" and x.id in started and not started[x.id].done), None)
            if send is not None:
                send.wait_here()
                continue
            if time.monotonic() > deadline:
                raise TimeoutError(_stuck(me, pending, done, timeout_s))
            with cv:  # until another operation finishes
                if _Op.finished_count == seen:
                    cv.wait(timeout=0.05)
                seen = _Op.finished_count
    stats.steps = len(steps)
    stats.seconds = time.perf_counter() - t0
    return stats


_orders: Dict[Any, dict] = {}


def _run_ordered(g, req, me, steps, flat, members, comm, merging, dim, local, torch_groups, coll_groups, me_world, stats):
    """The stream order (core/graph/stream_order.hpp): for L = 0, 1, …, G: group L's transfers,
    in their key order, as one batch (receives into staging, applied after), its collectives in
    key order, then the local work of level L in program order. One global order on every rank:
    the earliest unfinished group has every member issued, so it cannot deadlock."""
    key = (req["target"], req["n"], tuple(sorted((k, str(v)) for k, v in req["set"].items())))
    so = _orders.get(key)
    if so is None:
        so = _orders[key] = _sg.stream_order(req["target"], req["n"], req["set"], max_memory=req.get("max_memory"))
    level, order, groups = so["level"][me], so["key"][me], so["groups"][me]
    if len(level) != len(steps):
        raise _sg.StepgraphError(f"the stream order has {len(level)} steps for rank {me}, the graph {len(steps)}")
    transfers: Dict[int, List[Any]] = {}
    work: Dict[int, List[Any]] = {}
    for k, s in enumerate(steps):
        if s.kind in ("send", "recv", "collective"):
            transfers.setdefault(level[k], []).append((order[k], k, s))
        else:
            work.setdefault(level[k], []).append(s)
    for lv in range(groups + 1):
        items = sorted(transfers.get(lv, []), key=lambda x: (x[0], x[1]))
        ops, applies = [], []
        for _, _, s in items:
            chunk = flat[s.buffer].chunks(s.lo, s.count)
            if s.kind == "send":
                ops.append(dist.P2POp(dist.isend, chunk, members[s.peer], comm, s.id))
                stats.messages += 1
                stats.bytes_sent += chunk.numel() * chunk.element_size()
            elif s.kind == "recv":
                staging = torch.empty_like(chunk)
                ops.append(dist.P2POp(dist.irecv, staging, members[s.peer], comm, s.match))
                applies.append((s, chunk, staging))
        if ops:
            for w in dist.batch_isend_irecv(ops):
                w.wait()
        for s, chunk, staging in applies:
            _apply(chunk, staging, s.reduce, dim if s.buffer in merging else 0)
        for _, _, s in items:
            if s.kind == "collective":
                _collective(s, flat, torch_groups[s.raw["group"]], coll_groups[s.raw["group"]], members, me_world,
                            dim if s.buffer in merging else 0)
        for s in work.get(lv, []):
            local(s)


def _merge_set(g: "_sg.Graph") -> set:
    """The buffers that hold attention partials (O|lse rows): every buffer a forward tile writes,
    the expect's O, and every buffer joined to those by a copy, a reduce, a message or a
    collective's `into` (docs/exec.md, "Merging")."""
    out = set()
    for e in g.json.get("expect", []):
        if e["kind"] == "attention":
            out.add(e["buffers"][-1]["buffer"])
    for s in g.steps:
        if s.kind == "compute" and s.raw.get("kernel") == "attn":
            out.update(w["buffer"] for w in s.raw.get("writes", []))
    edges = []
    for s in g.steps:
        if s.kind in ("copy", "reduce"):
            edges.append((s.buffer, s.raw["source"]["buffer"]))
        elif s.kind == "send" and s.match is not None:
            edges.append((s.buffer, g.steps[s.match].buffer))
        elif s.kind == "collective" and s.raw.get("into"):
            edges.append((s.buffer, s.raw["into"]["buffer"]))
    changed = True
    while changed:
        changed = False
        for a, b in edges:
            if (a in out) != (b in out):
                out.update((a, b))
                changed = True
    return out


def _merge_rows(dst: torch.Tensor, src: torch.Tensor):
    """dst ⊕= src on O|lse rows (dim + 1 floats): the online-softmax merge of two partial outputs
    of the same query rows. An empty row (lse = -inf) leaves the other as it is."""
    d = dst.shape[-1] - 1
    l1, l2 = dst[:, d], src[:, d]
    lse = torch.logaddexp(l1, l2)
    safe = torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)
    w1 = torch.exp(l1 - safe).unsqueeze(1)
    w2 = torch.exp(l2 - safe).unsqueeze(1)
    out = dst[:, :d] * w1 + src[:, :d] * w2
    dst[:, :d] = torch.where(torch.isinf(lse).unsqueeze(1), dst[:, :d], out)
    dst[:, d] = lse


def _matmul_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool):
    q32, k32, v32 = q.float(), k.float(), v.float()
    s = torch.matmul(q32, k32.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    if causal:
        rows, keys = s.shape[-2], s.shape[-1]
        mask = torch.ones(rows, keys, dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse.unsqueeze(-1))
    return torch.matmul(p, v32), lse


def _fused_candidates(device_type: str):
    """PyTorch's attention kernels that return the lse, where this version has them (torch >= 2.0
    on CUDA: flash for fp16/bf16, memory-efficient for fp32 too; >= 2.3 on CPU: flash)."""
    aten = torch.ops.aten
    out = []
    if device_type == "cuda":
        if hasattr(aten, "_scaled_dot_product_flash_attention"):
            out.append(("flash", lambda q, k, v, c: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, c)[:2]))
        if hasattr(aten, "_scaled_dot_product_efficient_attention"):
            out.append(("efficient", lambda q, k, v, c: aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, c)[:2]))
    elif device_type == "cpu" and hasattr(aten, "_scaled_dot_product_flash_attention_for_cpu"):
        out.append(("flash_cpu", lambda q, k, v, c: aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, c)[:2]))
    return out


_TILE_KERNEL: Dict[Any, Any] = {}  # (device type, dtype, dim) -> (name, fn): the kernel tiles run with


def _tile_kernel(q: torch.Tensor):
    """The first fused kernel that agrees with matmul + logsumexp on a small problem of this
    device, type and head dim (both masks, output and lse), else matmul + logsumexp. Checked once:
    an internal op whose signature or lse layout changed between versions is left out, not trusted."""
    key = (q.device.type, q.dtype, q.shape[-1])
    if key in _TILE_KERNEL:
        return _TILE_KERNEL[key]
    chosen = ("matmul", None)
    gen = torch.Generator(device="cpu").manual_seed(11)
    t = [torch.rand(1, 2, 64, q.shape[-1], generator=gen).to(q.device, q.dtype) * 2 - 1 for _ in range(3)]
    tol = 1e-4 if q.dtype == torch.float32 else 3e-2
    for name, fn in _fused_candidates(q.device.type):
        try:
            ok = True
            for causal in (False, True):
                out, lse = fn(*t, causal)
                ref_out, ref_lse = _matmul_attention(*t, causal)
                lse = lse[..., :64].float()
                ok = ok and out.shape == ref_out.shape and lse.shape == ref_lse.shape and \
                    (out.float() - ref_out).abs().max().item() <= tol and (lse - ref_lse).abs().max().item() <= tol
            if ok:
                chosen = (name, fn)
                break
        except Exception:  # noqa: BLE001 (an op this version does not take so: not used)
            continue
    _TILE_KERNEL[key] = chosen
    return chosen


def tile_kernel_name(q: torch.Tensor) -> str:
    """Which kernel attention tiles of q's device, type and head dim run with: flash, efficient,
    flash_cpu (PyTorch's) or matmul (matmul + logsumexp)."""
    return _tile_kernel(q)[0]


def _tile_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool):
    """One tile: (out, lse) of softmax(q·kᵀ/√dim)·v over [batch, heads, rows, dim], in fp32;
    causal is the diagonal tile (key u visible to query t iff u <= t). PyTorch's fused kernel with
    the lse where this version has one that checks out (_tile_kernel), else matmul + logsumexp
    (Debian's torch 1.13 has no such kernel)."""
    name, fn = _tile_kernel(q)
    if fn is not None:
        out, lse = fn(q, k, v, causal)
        return out.float(), lse[..., :q.shape[-2]].float()
    return _matmul_attention(q, k, v, causal)


def _item_heads(g: "_sg.Graph") -> int:
    """Heads in one attention item: all of them, or heads / H for head-parallel items (`heads H`
    in the expect: item x is sequence block x / H of head group x % H)."""
    h = getattr(g, "_item_heads", None)
    if h is None:
        groups = max([int(e.get("heads", 1)) for e in g.json.get("expect", []) if e["kind"].startswith("attention")] or [1])
        h = g._item_heads = int(g.params.get("heads", 1)) // groups
    return h


def _attn_tile(s, reads: List[torch.Tensor], writes: List[torch.Tensor], g: "_sg.Graph", dim: int):
    p = g.params
    batch, heads = int(p.get("batch", 1)), _item_heads(g)
    o_rows = writes[0].view(-1, dim + 1)
    ops = [r for r, spec in zip(reads, s.raw["reads"]) if spec != s.raw["writes"][0]]
    rows = o_rows.shape[0] // (batch * heads)
    q = ops[0].view(batch, heads, rows, dim)
    if len(ops) == 2:  # packed kv: K then V
        kv = ops[1].view(2, batch, heads, -1, dim)
        k, v = kv[0], kv[1]
    else:
        k, v = ops[1].view(batch, heads, -1, dim), ops[2].view(batch, heads, -1, dim)
    out, lse = _tile_attention(q, k, v, s.raw.get("mask") == "causal")
    tile = torch.cat([out, lse.unsqueeze(-1)], dim=-1).reshape(-1, dim + 1)
    _merge_rows(o_rows, tile)


def _attn_bwd_tile(s, reads: List[torch.Tensor], writes: List[torch.Tensor], g: "_sg.Graph", dim: int):
    """FlashAttention-2's backward tile on a q bundle (rows of q, dO, lse, D = rowsum(dO ∘ O), fp32):
    P = exp(S − lse), dV += Pᵀ·dO, dS = P ∘ (dO·Vᵀ − D), dQ += dS·K·scale, dK += dSᵀ·Q·scale."""
    p = g.params
    batch, heads = int(p.get("batch", 1)), _item_heads(g)
    if int(p.get("elem", 4)) != 4 or reads[0].dtype != torch.float32:
        raise NotImplementedError(f"{_where(s)}: the backward tile takes fp32 bundles (elem = 4) under stepgraph.torch")
    wspecs = s.raw["writes"]
    ops = [r for r, spec in zip(reads, s.raw["reads"]) if spec not in wspecs]
    bundle = ops[0].view(batch, heads, -1, 2 * dim + 2)
    q, do, lse, dd = bundle[..., :dim], bundle[..., dim:2 * dim], bundle[..., 2 * dim], bundle[..., 2 * dim + 1]
    if len(ops) == 2:
        kv = ops[1].view(2, batch, heads, -1, dim)
        k, v = kv[0].float(), kv[1].float()
        dkv = writes[1].view(2, batch, heads, -1, dim)
        dk, dv = dkv[0], dkv[1]
    else:
        k, v = ops[1].view(batch, heads, -1, dim).float(), ops[2].view(batch, heads, -1, dim).float()
        dk, dv = writes[1].view(batch, heads, -1, dim), writes[2].view(batch, heads, -1, dim)
    dq = writes[0].view(batch, heads, -1, dim)
    scale = dim ** -0.5
    sc = torch.matmul(q, k.transpose(-1, -2)) * scale
    if s.raw.get("mask") == "causal":
        mask = torch.ones(sc.shape[-2], sc.shape[-1], dtype=torch.bool, device=sc.device).tril()
        sc = sc.masked_fill(~mask, float("-inf"))
    pr = torch.exp(sc - lse.unsqueeze(-1))
    dv.add_(torch.matmul(pr.transpose(-1, -2), do))
    ds = pr * (torch.matmul(do, v.transpose(-1, -2)) - dd.unsqueeze(-1))
    dq.add_(torch.matmul(ds, k) * scale)
    dk.add_(torch.matmul(ds.transpose(-1, -2), q) * scale)


def _stuck(me: int, pending, done, timeout_s: float) -> str:
    lines = [f"rank {me}: no progress for {timeout_s:g} s; waiting:"]
    for s in pending[:8]:
        deps = [d for d in s.deps if d not in done]
        what = f"{s.kind} {'to' if s.kind == 'send' else 'from'} rank {s.peer}" if s.kind in ("send", "recv") else s.kind
        lines.append(f"  step {s.id} ({what}, {_where(s)})" + (f" on steps {deps}" if deps else " for its message"))
    if len(pending) > 8:
        lines.append(f"  ... and {len(pending) - 8} more")
    return "\n".join(lines)


def _collective(s, flat: Dict[str, _Flat], tg, members: Tuple[int, ...], outer: Tuple[int, ...], me_world: int, merge_dim: int = 0):
    """A collective step on its chunks (docs/language.md's semantics: a slice of g*k chunks over a
    group of g members, member k owns block k)."""
    kind = s.raw["collective"]
    op = _OPS.get(s.raw.get("op", "sum"), dist.ReduceOp.SUM)
    x = flat[s.buffer].chunks(s.lo, s.count) if s.buffer else None
    gsize = len(members)
    k = members.index(me_world)
    if merge_dim and kind in ("allreduce", "reduce"):
        # Attention partials merge (online softmax), they do not add: every member's rows are
        # gathered and folded in member order, the same on every rank (MPI's merging operator).
        parts = [torch.empty_like(x) for _ in range(gsize)]
        dist.all_gather(parts, x.contiguous(), group=tg)
        if kind == "allreduce" or outer[s.raw["root"]] == me_world:
            acc = parts[0].clone().view(-1, merge_dim + 1)
            for p in parts[1:]:
                _merge_rows(acc, p.view(-1, merge_dim + 1))
            x.copy_(acc.view(-1))
    elif kind == "allreduce":
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
            reqs.append(dist.isend(ins[j], dst=members[j], group=tg, tag=_ALLTOALL_TAG))
            reqs.append(dist.irecv(outs[j], src=members[j], group=tg, tag=_ALLTOALL_TAG))
        for r in reqs:
            r.wait()
    else:
        raise NotImplementedError(f"{_where(s)}: collective {kind}")


def allreduce(name: str, tensor: torch.Tensor, group=None, ordered: Optional[bool] = None, **params) -> RunStats:
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
    stats = run(g, {data.name: work}, group=group, ordered=ordered)
    if work is not flat:
        flat.copy_(work[:numel])
    if flat.data_ptr() != tensor.data_ptr():
        tensor.copy_(flat.view_as(tensor))
    return stats


def _attention_graph(name: str, n: int, params: Dict[str, Any], kind: str = "attention"):
    g = _graph_for(name, n, params)
    ex = [e for e in g.json.get("expect", []) if e["kind"] == kind]
    if not ex:
        raise _sg.StepgraphError(f"{name}: not an {kind.replace('_', ' ')} schedule (no `expect {kind}`)")
    if ex[0].get("split_kv"):
        raise NotImplementedError(f"{name}: K and V apart; the conveniences take packed KV (run() takes either)")
    return g, ex[0]


def _items_of(g, buf: str, n: int) -> List[List[int]]:
    """Each rank's items of `buf`, in the order the schedule's `init … on` lists them."""
    out: List[List[int]] = [[] for _ in range(n)]
    for i in g.json.get("init", []):
        ch = i["chunks"]
        if ch["buffer"] != buf:
            continue
        if i["kind"] == "on":
            out[i["rank"]].extend(range(ch["lo"], ch["lo"] + ch["count"]))
        elif i["kind"] == "owned":  # a group's members own equal blocks, in member order
            gr = g.json["groups"][i["group"]]
            per = ch["count"] // gr["count"]
            for k in range(gr["count"]):
                out[gr["start"] + k * gr["stride"]].extend(range(ch["lo"] + k * per, ch["lo"] + (k + 1) * per))
    return out


class _Shard:
    """One rank's part of an attention schedule's items: the sequence blocks it holds (in the
    order its shard concatenates them), and for each item its block's place in the shard and its
    head group. Head-parallel items (`heads H`): item x is block x / H of head group x % H; the
    rank must hold every head group of its blocks (a shard is all heads of its rows)."""

    def __init__(self, name: str, g, ex: dict, n: int, me: int):
        self.groups = int(ex.get("heads", 1))
        self.items = ex["buffers"][0]["count"]
        mine = _items_of(g, ex["buffers"][0]["buffer"], n)[me]
        if sorted(mine) != sorted(_items_of(g, ex["buffers"][1]["buffer"], n)[me]):
            raise NotImplementedError(f"{name}: this rank's q and kv items differ; use run()")
        self.blocks: List[int] = []
        for x in mine:
            if x // self.groups not in self.blocks:
                self.blocks.append(x // self.groups)
        self.mine = mine
        if sorted(mine) != sorted(b * self.groups + h for b in self.blocks for h in range(self.groups)):
            raise NotImplementedError(f"{name}: this rank holds only some head groups of its blocks; use run()")

    def place(self, x: int, blk: int, hp: int):
        """(rows, heads) slices of the shard that item x holds."""
        j = self.blocks.index(x // self.groups)
        h = x % self.groups
        return slice(j * blk, (j + 1) * blk), slice(h * hp, (h + 1) * hp)


def layout(name: str, seq: int, n: Optional[int] = None, **params) -> List[List[Tuple[int, int]]]:
    """Each rank's query rows under an attention schedule: for rank r, the [start, stop) row
    ranges it holds, in the order its shard concatenates them (zigzag_ring_attention at N = 2,
    seq = 8: [[(0, 2), (6, 8)], [(2, 4), (4, 6)]]). Shard q, k and v by these rows (all heads);
    attention() returns the output in the same order."""
    n = n or (dist.get_world_size() if dist.is_initialized() else 1)
    g, ex = _attention_graph(name, n, dict(params, seq=seq))
    out = []
    for r in range(n):
        sh = _Shard(name, g, ex, n, r)
        blk = seq // (sh.items // sh.groups)
        out.append([(b * blk, (b + 1) * blk) for b in sh.blocks])
    return out


def attention(name: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True, group=None,
              return_lse: bool = False, ordered: Optional[bool] = None, **params):
    """Context-parallel attention with the schedule `name` (ring_attention, zigzag_ring_attention,
    stripe_ring_attention, te_p2p_attention, allgather_attention, ulysses_attention, …) on this
    rank's shards, given as torch's attention takes them: (batch, heads, rows, dim), rows in the
    order layout() lists them. Returns the output in the same form (and the lse, [batch, heads,
    rows], with return_lse). The schedule is checked for this N first."""
    n = dist.get_world_size(group)
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape:
        raise _sg.StepgraphError("attention: q, k and v are (batch, heads, rows, dim) tensors of one shape")
    batch, heads, rows, dim = q.shape
    me = dist.get_rank(group) if group is not None else dist.get_rank()
    # The sequence: this rank's rows times the number of blocks over the rows it holds.
    p = dict(params, heads=heads, dim=dim, batch=batch, causal=1 if causal else 0, elem=q.element_size())
    g, ex = _attention_graph(name, n, dict(p, seq=rows * n))
    sh = _Shard(name, g, ex, n, me)
    nblocks = sh.items // sh.groups
    seq = rows * nblocks // len(sh.blocks)
    if seq != rows * n:
        g, ex = _attention_graph(name, n, dict(p, seq=seq))
        sh = _Shard(name, g, ex, n, me)
    blk, hp = seq // nblocks, heads // sh.groups
    qn, kvn, on = [b["buffer"] for b in ex["buffers"]]
    qv = torch.zeros(sh.items, batch, hp, blk, dim, dtype=q.dtype, device=q.device)
    kvv = torch.zeros(sh.items, 2, batch, hp, blk, dim, dtype=q.dtype, device=q.device)
    ov = torch.zeros(sh.items, batch, hp, blk, dim + 1, dtype=torch.float32, device=q.device)
    ov[..., dim] = float("-inf")
    for x in sh.mine:
        rs, hs = sh.place(x, blk, hp)
        qv[x].copy_(q[:, hs, rs])
        kvv[x, 0].copy_(k[:, hs, rs])
        kvv[x, 1].copy_(v[:, hs, rs])
    run(g, {qn: qv.view(-1), kvn: kvv.view(-1), on: ov.view(-1)}, group=group, ordered=ordered)
    out = torch.empty(batch, heads, rows, dim, dtype=q.dtype, device=q.device)
    lse = torch.empty(batch, heads, rows, dtype=torch.float32, device=q.device)
    for x in sh.mine:
        rs, hs = sh.place(x, blk, hp)
        out[:, hs, rs] = ov[x, ..., :dim].to(q.dtype)
        lse[:, hs, rs] = ov[x, ..., dim]
    return (out, lse) if return_lse else out


def attention_backward(name: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                       dout: torch.Tensor, causal: bool = True, group=None, ordered: Optional[bool] = None, **params):
    """The backward of attention() with the schedule `name` (ring_attention_bwd,
    zigzag_ring_attention_bwd, …): this rank's shards of q, k, v, the forward's output and lse
    (attention(..., return_lse=True)) and the output's gradient, in layout() order. Returns
    (dq, dk, dv) in the same form; fp32 inputs (the q bundle of q, dO, lse and D in fp32)."""
    n = dist.get_world_size(group)
    batch, heads, rows, dim = q.shape
    if q.dtype != torch.float32:
        raise NotImplementedError("attention_backward: fp32 inputs (the bf16 bundle is not read yet)")
    me = dist.get_rank(group) if group is not None else dist.get_rank()
    p = dict(params, heads=heads, dim=dim, batch=batch, causal=1 if causal else 0, elem=4)
    g, ex = _attention_graph(name, n, dict(p, seq=rows * n), "attention_backward")
    sh = _Shard(name, g, ex, n, me)
    nblocks = sh.items // sh.groups
    seq = rows * nblocks // len(sh.blocks)
    if seq != rows * n:
        g, ex = _attention_graph(name, n, dict(p, seq=seq), "attention_backward")
        sh = _Shard(name, g, ex, n, me)
    blk, hp = seq // nblocks, heads // sh.groups
    qn, kvn, dqn, dkvn = [b["buffer"] for b in ex["buffers"]]
    qb = torch.zeros(sh.items, batch, hp, blk, 2 * dim + 2)
    kvb = torch.zeros(sh.items, 2, batch, hp, blk, dim)
    dqb = torch.zeros(sh.items, batch, hp, blk, dim)
    dkvb = torch.zeros(sh.items, 2, batch, hp, blk, dim)
    dd = (dout.float() * out.float()).sum(-1)  # D = rowsum(dO ∘ O)
    for x in sh.mine:
        rs, hs = sh.place(x, blk, hp)
        qb[x, ..., :dim] = q[:, hs, rs]
        qb[x, ..., dim:2 * dim] = dout[:, hs, rs]
        qb[x, ..., 2 * dim] = lse[:, hs, rs]
        qb[x, ..., 2 * dim + 1] = dd[:, hs, rs]
        kvb[x, 0] = k[:, hs, rs]
        kvb[x, 1] = v[:, hs, rs]
    run(g, {qn: qb.view(-1), kvn: kvb.view(-1), dqn: dqb.view(-1), dkvn: dkvb.view(-1)}, group=group, ordered=ordered)
    dq, dk, dv = (torch.empty(batch, heads, rows, dim) for _ in range(3))
    for x in sh.mine:
        rs, hs = sh.place(x, blk, hp)
        dq[:, hs, rs] = dqb[x]
        dk[:, hs, rs] = dkvb[x, 0]
        dv[:, hs, rs] = dkvb[x, 1]
    return dq, dk, dv
