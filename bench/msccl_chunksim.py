#!/usr/bin/env python3
"""An independent chunk-level simulator of MSCCL XML: the test oracle for stepgraph's MSCCL front
end and its export (tests/msccl_oracle.sh). Written from RCCL's and msccl-tools' sources (the
rules and their source lines are in docs/msccl.md), not from stepgraph's code.

Usage: python3 bench/msccl_chunksim.py FILE.xml [...]     one line per file and mode (in/out of place)

Model: every chunk holds a multiset of (rank, chunk) contributions; thread blocks run their steps
in order; a step waits for its (depid, deps) and for data on its receive connection (sender,
receiver, chan), matched in FIFO order; FIFOs are unbounded (no slot limit: stepgraph's verify
checks that). Postconditions from msccl-tools' collectives.py (allreduce, allgather, alltoall,
reducescatter). In-place files run with RCCL's i/o aliasing; files with outofplace=1 (or no
outofplace attribute and inplace=0) without. 'custom' colls are only executed (deadlock check).
"""
import sys, collections
import xml.etree.ElementTree as ET

SENDS = {'s', 'rcs', 'rrs', 'rrcs'}
RECVS = {'r', 'rcs', 'rrs', 'rrc', 'rrcs'}


def run(path, inplace):
    root = ET.parse(path).getroot()
    coll, N, C = root.get('coll'), int(root.get('ngpus')), int(root.get('nchunksperloop'))
    cf = C if coll == 'allreduce' else C // N

    def canon(r, buf, k):               # aliasing for in-place calls (docs/msccl.md)
        if not inplace:
            return (buf, k)
        if coll in ('allreduce', 'alltoall') and buf == 'o':
            return ('i', k)
        if coll == 'allgather' and buf == 'i':
            return ('o', r * cf + k)
        if coll in ('reducescatter', 'reduce_scatter') and buf == 'o':
            return ('i', r * cf + k)
        return (buf, k)

    mem = [dict() for _ in range(N)]
    nin = {'allreduce': C, 'allgather': cf, 'alltoall': C, 'reducescatter': C, 'reduce_scatter': C}.get(coll, C)
    for r in range(N):
        for k in range(nin):
            mem[r][canon(r, 'i', k)] = collections.Counter({(r, k): 1})

    def rd(r, buf, k):
        return mem[r].get(canon(r, buf, k))

    def wr(r, buf, k, v):
        mem[r][canon(r, buf, k)] = v

    def add(a, b):
        if a is None or b is None:
            return None
        return a + b

    tbs = {}   # (rank, tbid) -> dict
    for gpu in root.iter('gpu'):
        r = int(gpu.get('id'))
        for tb in gpu.findall('tb'):
            tbs[(r, int(tb.get('id')))] = dict(send=int(tb.get('send')), recv=int(tb.get('recv')),
                                               chan=tb.get('chan'), steps=tb.findall('step'), pc=0)
    fifo = collections.defaultdict(collections.deque)
    progress = True
    while progress:
        progress = False
        for (r, b), t in tbs.items():
            while t['pc'] < len(t['steps']):
                st = t['steps'][t['pc']]
                d = int(st.get('depid'))
                if d >= 0 and tbs[(r, d)]['pc'] <= int(st.get('deps')):
                    break
                ty, cnt = st.get('type'), int(st.get('cnt'))
                sb, so, db, do = st.get('srcbuf'), int(st.get('srcoff')), st.get('dstbuf'), int(st.get('dstoff'))
                rq = fifo[(t['recv'], r, t['chan'])]
                if ty in RECVS and len(rq) < cnt:
                    break
                for c in range(cnt if ty != 'nop' else 0):
                    x = rq.popleft() if ty in RECVS else None
                    if ty in ('rrs', 'rrc', 'rrcs'):
                        x = add(x, rd(r, sb, so + c))
                    elif ty == 's':
                        x = rd(r, sb, so + c)
                    elif ty == 'cpy':
                        wr(r, db, do + c, rd(r, sb, so + c))
                    elif ty == 're':
                        wr(r, db, do + c, add(rd(r, db, do + c), rd(r, sb, so + c)))
                    if ty in ('r', 'rcs', 'rrc', 'rrcs'):
                        wr(r, db, do + c, x)
                    if ty in SENDS:
                        fifo[(r, t['send'], t['chan'])].append(x)
                t['pc'] += 1
                progress = True
    stuck = [(k, t['pc']) for k, t in tbs.items() if t['pc'] < len(t['steps'])]
    if stuck:
        return f'DEADLOCK ({len(stuck)} tbs stuck, e.g. rank,tb,pc={stuck[0][0] + (stuck[0][1],)})'
    left = sum(len(q) for q in fifo.values())
    if coll not in ('allreduce', 'allgather', 'alltoall', 'reducescatter', 'reduce_scatter'):
        return f'ran to completion (coll={coll}, not checked)' + (f'; {left} unreceived' if left else '')
    bad = 0
    for r in range(N):
        for k in range(cf):
            if coll == 'allreduce':
                exp, got = collections.Counter({(q, k): 1 for q in range(N)}), rd(r, 'o', k)
                chk = [(exp, got)]
            elif coll == 'allgather':
                chk = [(collections.Counter({(i, k): 1}), rd(r, 'o', i * cf + k)) for i in range(N)]
            elif coll == 'alltoall':
                chk = [(collections.Counter({(i, r * cf + k): 1}), rd(r, 'o', i * cf + k)) for i in range(N)]
            elif coll in ('reducescatter', 'reduce_scatter'):
                chk = [(collections.Counter({(q, r * cf + k): 1 for q in range(N)}), rd(r, 'o', k))]
            bad += sum(1 for e, g in chk if g != e)
    return ('OK' if bad == 0 else f'WRONG ({bad} output chunks)') + (f'; {left} unreceived' if left else '')


def main():
    for f in sys.argv[1:]:
        root = ET.parse(f).getroot()
        ip = root.get('inplace') == '1'
        oop = root.get('outofplace')
        modes = []
        if ip:
            modes.append(True)
        if oop == '1' or (oop is None and not ip):
            modes.append(False)
        for m in modes:
            print(f'{f}\t{"inplace" if m else "outofplace"}\t{run(f, m)}')


if __name__ == '__main__':
    main()
