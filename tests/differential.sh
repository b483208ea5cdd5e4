#!/usr/bin/env bash
# differential.sh — a behaviour-differential run for refactors: the same thousand or so stepgraph
# commands run with an OLD and a NEW binary, and every command whose standard output, standard
# error, exit code or written files (traces, CSV, JSON, plots, DOT, MSCCL XML, platform files …)
# differ is reported. A refactor that means to change nothing should report nothing.
#
#   bash tests/differential.sh OLD_BIN NEW_BIN [OUTDIR]
#
# e.g. build the tree before the change into /tmp/old-build (mkdir /tmp/old-src && git archive HEAD
# | tar -x -C /tmp/old-src; cmake -S /tmp/old-src -B /tmp/old-build; make -C /tmp/old-build -j2
# stepgraph), the tree after it into build/ as usual, then
#
#   bash tests/differential.sh /tmp/old-build/stepgraph build/stepgraph /tmp/diff_out
#
# It prints one line per differing command (`DIFF id [what differed]: command`, then the first
# lines of the diff, indented) and a summary `N commands, M differ`; exit 0 if none differ, 1 if
# some do, 2 on bad usage. OUTDIR (default: a new /tmp/stepgraph-differential.XXXXXX) keeps, per
# command, old/ID and new/ID (raw.stdout and raw.stderr as printed, stdout and stderr normalised,
# rc, ms: its time, files/: the command's directory afterwards, normalised) and
# diffs/ID.diff for each difference; commands.txt lists every command with its id.
# DIFFERENTIAL_ONLY=REGEX (grep -E) runs only the commands that match, e.g. to rerun those that
# differed: DIFFERENTIAL_ONLY='sim .*--trace' bash tests/differential.sh OLD NEW.
#
# How: the inputs (schedules/, tests/*_cases, tests/golden, tests/msccl, bench/nccl_accuracy) are
# copied into OUTDIR/in once, so edits to the tree during the run cannot tell the binaries apart.
# Each command runs twice, once per binary, in a fresh directory at the same path (OUTDIR/work,
# moved away afterwards), with TMPDIR inside it (so what `demo` writes to the temporary directory is
# compared too), in a clean environment (env -i: PATH, HOME, TMPDIR and Open MPI's run-as-root
# variables only; Open MPI's session directory outside it), under `timeout 120`, with the binary
# under test as `stepgraph` on PATH (a symlink, OUTDIR/bin/stepgraph). Same path, same
# environment: most output needs no masking. What still varies from run to run is masked by the
# filters of normalise() below, and only there.
# Commands run one after another: about 7 to 8 minutes for both binaries on 2 cores (demo alone
# takes a minute of it); `exec` and `calibrate` run under mpiexec at 2 and 4 processes on CPUs.
set -u

usage() {
  echo "usage: bash tests/differential.sh OLD_BIN NEW_BIN [OUTDIR]" >&2
  exit 2
}
if [ $# -lt 2 ] || [ $# -gt 3 ]; then usage; fi
for b in "$1" "$2"; do
  [ -x "$b" ] || { echo "differential: '$b' is not an executable" >&2; exit 2; }
done
OLD_BIN=$(realpath "$1")
NEW_BIN=$(realpath "$2")
OLD_DIR=$(dirname "$OLD_BIN")
NEW_DIR=$(dirname "$NEW_BIN")
if [ $# -eq 3 ]; then
  OUT=$3
  mkdir -p "$OUT" || exit 2
  [ -z "$(ls -A "$OUT")" ] || { echo "differential: OUTDIR '$OUT' is not empty" >&2; exit 2; }
else
  OUT=$(mktemp -d /tmp/stepgraph-differential.XXXXXX) || exit 2
fi
OUT=$(realpath "$OUT")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IN=$OUT/in
BIN=$OUT/bin
WORK=$OUT/work
mkdir -p "$IN/tests" "$BIN" "$OUT/old" "$OUT/new" "$OUT/diffs"
SYSPATH=${PATH:-/usr/local/bin:/usr/bin:/bin}

# ---------------------------------------------------------------------------------------------
# Normalisation: every filter that masks run-to-run variation, in one place. Each masks a field
# seen to vary between two runs of the same binary (or, for the binary's path, between two copies
# of the same program); nothing else is masked. Applied to stdout, stderr and every text file a
# command writes, the same way for both binaries.
#   $1: the file (rewritten in place);
#   $2: the command's class, a comma list: "measured" (it times real work: exec, calibrate under
#       mpiexec, demo), "mpi" (several processes write to the same stream: mpiexec, demo), or "-";
#   $3: "stream" for standard output and error, "file" for a file the command wrote.
# ---------------------------------------------------------------------------------------------
normalise() {
  local f=$1 class=$2 kind=$3
  local a=(
    # The binaries' own directories (demo prints PYTHONPATH=<its dir>/python): differ whenever
    # OLD and NEW live in different places. Both are masked in every output, since a NEW that is a
    # wrapper script may run a binary from OLD's directory.
    -e "s#${OLD_DIR//#/\\#}/#<bindir>/#g"
    -e "s#${NEW_DIR//#/\\#}/#<bindir>/#g"
    # Wall-clock time of stepgraph's own work, beside the results: sim's "simulated in 0.002 s",
    # its JSON "wall_s", its comparison table's last column ("wall s") and CSV's last (wall_s);
    # a memoised collective's "simulated once: N steps, 0.097 s" and "simulated alone (2.017 s)";
    # verify --time's "explicit 0.000 s, z3 0.100 s, total 0.101 s".
    -e 's/(simulated in )[0-9]+\.[0-9]+ s/\1<wall> s/g'
    -e 's/("wall_s": )[-+0-9.e]+/\1<wall>/g'
    -e 's/^([A-Za-z0-9_.:-]+ +[0-9]+ +(-|[0-9.]+ [KMGTPE]?i?B) +[0-9.]+ [mun]?s +(-|[0-9.]+) +(-|[0-9.]+) +[0-9,]+) +[0-9]+\.[0-9]+$/\1 <wall>/'
    -e '/,wall_s$/,$ {/^[^ ]+,[^ ]+$/s/,[0-9]+\.[0-9]+$/,<wall>/}'
    -e 's/(simulated once: [0-9,]+ steps?, )[0-9]+\.[0-9]+ s/\1<wall> s/g'
    -e 's/(simulated alone \()[0-9]+\.[0-9]+ s\)/\1<wall> s)/g'
    -e 's/\<(explicit|z3|total) [0-9]+\.[0-9]+ s\>/\1 <wall> s/g'
    # A search stopped by a time limit (verify --timeout, demo) gets as far as the machine lets it.
    -e 's/(stopped at the time limit after )[0-9]+ executions/\1<n> executions/g'
    # Open MPI's own words when a job fails (under mpiexec, also inside demo): its framed
    # messages ("Primary job terminated …", "mpiexec detected …", "MPI_ABORT was invoked on rank
    # …", between lines of dashes) name whichever process failed first, and at an abort come or
    # not; its "[host:pid] …" lines (help aggregation, ORTE_ERROR_LOG) come or not. Its exit code
    # is compared.
    -e '/^-{70,}$/,/^-{70,}$/d'
    -e '/^\[[^] ]+:[0-9]+\] /d'
  )
  case ",$class," in
    *,measured,*)
      a+=(
        # Measured on the machine (exec, calibrate, and their parts of demo): time, algbw, busbw,
        # MPI's time, speed and the prediction's error in exec's rows; time and TFLOP/s in its
        # attention rows; calibrate's rows, fit, gamma and platform (also in its platform file);
        # exec's overlap line; their JSON values. The spaces before a number go with it: a
        # number's width moves the columns.
        -e '/^ +[0-9]+ +[0-9]+ +[a-z][a-z0-9]* +[a-z]+ /{s/ +[-+]?[0-9]+\.[0-9]+x?/ <m>/g; s/ +[-+]?[0-9]+%/ <m>%/g}'
        -e '/^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9-]+ *$/s/ +[0-9]+\.[0-9]+/ <m>/g'
        -e '/^ +[0-9]+ +[0-9]+\.[0-9]+ +[0-9]+\.[0-9]+$/s/ +[0-9]+\.[0-9]+/ <m>/g'
        -e '/: compute .* hidden$/{s/[0-9]+\.[0-9]+/<m>/g; s/[0-9]+%/<m>%/g}'
        -e "/(on rank [0-9]+'s core|\\(ranks [0-9]+ and [0-9]+\\)|^# same node|^# other node):/{s/[0-9]+\\.[0-9]+/<m>/g; s/[0-9]+%/<m>%/g}"
        -e 's/^(# gamma=)[0-9.e+-]+/\1<m>/'
        -e '/^(platform )?star:bw=/s/[0-9]+\.?[0-9]*(e[-+]?[0-9]+)?(GBps|MBps|us|ns)/<m>\2/g'
        -e 's/("(time_us|native_time_us|comm_alone_us|compute_us|algbw_GBps|busbw_GBps|tflops|tflops_per_rank|predict_error|alpha_us|bw_GBps|max_rel_err|one_way_us|gamma_ns_per_byte)": )[-+0-9.e]+/\1<m>/g'
        -e '/"platform": "star:bw=/s/[0-9]+\.?[0-9]*(e[-+]?[0-9]+)?(GBps|MBps|us|ns)/<m>\2/g'
      )
      ;;
  esac
  sed -E -i "${a[@]}" "$f"
  # Under mpiexec every process writes to the same stdout and stderr, in an order the scheduler
  # picks: those are compared as sorted lines (class mpi: commands under mpiexec, and demo,
  # which shows the output of several mpiexec jobs).
  if [ "$kind" = stream ] && [[ ",$class," == *,mpi,* ]]; then
    LC_ALL=C sort -o "$f" "$f"
  fi
}

# ---------------------------------------------------------------------------------------------
# Inputs: a snapshot of the tree's test inputs, plus a few generated here.
# ---------------------------------------------------------------------------------------------
cp -r "$ROOT/schedules" "$IN/schedules"
for d in golden verify_cases trail_cases sim_cases msccl; do cp -r "$ROOT/tests/$d" "$IN/tests/$d"; done
mkdir -p "$IN/nccl"
cp "$ROOT/bench/nccl_accuracy/manifest.tsv" "$IN/nccl/"
cp -r "$ROOT/bench/nccl_accuracy/tables" "$IN/nccl/tables"
G=$IN/gen
mkdir -p "$G"
cat >"$G/cluster.xml" <<'EOF'
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <cluster id="c" prefix="h-" suffix="" radical="0-7" speed="1Gf" bw="10GBps" lat="1us"
             bb_bw="40GBps" bb_lat="1us"/>
  </zone>
</platform>
EOF
cat >"$G/bad_bw.xml" <<'EOF'
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <host id="a" speed="1Gf"/>
    <host id="b" speed="1Gf"/>
    <link id="l" bandwidth="-5MBps" latency="50us"/>
    <route src="a" dst="b"><link_ctn id="l"/></route>
  </zone>
</platform>
EOF
printf 'fat-tree:leaves=2,per_leaf=4,oversub=2,bw=50Gbps\n' >"$G/fat.platform"
printf 'star:bw=1e-300bps\n' >"$G/tiny_bw.platform"
printf '%s\n' 7 6 5 4 3 2 1 0 >"$G/reverse.map"
printf '%s\n' 0 1 1 2 3 4 5 6 >"$G/repeat.map"
cat >"$G/syntax.sched" <<'EOF'
schedule syntax(size = 1KiB) {
  buffer a[N] bytes size / N
  init a contrib;
  for r in 0 .. N { send a[r] from r to (r + 1) % N }
}
EOF
cat >"$G/index.sched" <<'EOF'
# out-of-range index: a[N] on a buffer of N chunks
schedule index(size = 1KiB) {
  buffer a[N] bytes size / N;
  init a contrib;
  for r in 0 .. N { send a[r + 1] from r to (r + 1) % N; }
}
EOF
cat >"$G/peer.sched" <<'EOF'
# out-of-range rank: the last rank sends to rank N
schedule peer(size = 1KiB) {
  buffer a[N] bytes size / N;
  init a contrib;
  for r in 0 .. N { send a[r] from r to r + 1; }
}
EOF
cat >"$G/pow2.sched" <<'EOF'
# wrong rank count: refuses an N that is not a power of two
schedule pow2(size = 1KiB) {
  require ispow2(N), "N must be a power of two";
  buffer a[N] bytes size / N;
  init a owned;
  expect allgather(a);
  for s in 0 .. N - 1 {
    for r in 0 .. N { send a[(r - s) % N] from r to (r + 1) % N; }
  }
}
EOF
cat >"$G/stall.sched" <<'EOF'
# both ranks receive first: a deadlock verify finds, and a hang exec reports
schedule stall(size = 1KiB) {
  buffer a[2] bytes size / 2;
  init a contrib;
  on r in 0 .. 2 {
    recv a[1 - r] from 1 - r;
    send a[r] to 1 - r;
  }
}
EOF
printf 'schedule empty() {\n}\n' >"$G/empty.sched"
printf '<algo name="broken" ngpus="2"><gpu id="0">\n' >"$G/truncated.xml"
mkdir -p "$G/a_directory.sched"

# ---------------------------------------------------------------------------------------------
# The command list. add CLASS COMMAND [SETUP]: COMMAND is a bash command line run in the fresh
# directory (`stepgraph` is the binary under test; $IN, $G are the inputs); SETUP, if any, runs
# there first (copying a golden case's files). CLASS is "-", or "measured", "mpi" or both
# (see normalise).
# ---------------------------------------------------------------------------------------------
CLS=()
CMD=()
SET=()
add() { CLS+=("$1"); CMD+=("$2"); SET+=("${3:-}"); }

# --- the command line itself: help and version of every subcommand, bad subcommands
add - "stepgraph"
add - "stepgraph --help"
add - "stepgraph --version"
add - "stepgraph bogus"
add - "stepgraph compile"
add - "stepgraph sim"
for c in list compile check analyze verify sim exec calibrate env demo; do
  add - "stepgraph $c --help"
done
add - "stepgraph verify --version"
add - "stepgraph list"
add - "stepgraph list --json"

# --- every schedule of the library (schedules/): compile, check (from its file), verify,
#     sim with both engines
TS="--set tp=2 --set pp=2 --set layers=2 --set microbatches=2 --set buckets=1 --set seq=1024"
for f in "$IN"/schedules/*.sched; do
  s=$(basename "$f" .sched)
  n=4 x=
  [ "$s" = train_step ] && n=8 x=$TS
  add - "stepgraph compile $s -n $n $x --format json -o $s.json"
  add - "stepgraph check \$IN/schedules/$s.sched -n 2..5,8 $x"
  add - "stepgraph verify $s -n $n $x --json"
  add - "stepgraph sim $s -n $n $x --model analytic --json"
  add - "stepgraph sim $s -n 8 $x"
done
add - "stepgraph check train_step -n 4"
add - "stepgraph sim train_step -n 32 --set tp=4 --set pp=4 --set layers=8 --set buckets=2 --set microbatches=4 --set seq=4096 --platform dgx-h100:nodes=8,gpus=4 --model analytic"
add - "stepgraph sim train_step -n 1024 --platform dgx-h100:nodes=128 --collectives memo --model analytic"
add - "stepgraph sim train_step -n 64 $TS --set cp=2 --platform dgx-h100:nodes=8 --collectives memo --model analytic"
add - "stepgraph sim train_step -n 64 $TS --set cp=2 --platform dgx-h100:nodes=8 --collectives memo"

# --- compile: every format, to stdout and to a file, and its options
for fmt in text json dot stats goal msccl stream; do
  add - "stepgraph compile ring_allreduce -n 4 --set size=4KiB --format $fmt"
  add - "stepgraph compile recursive_doubling_allreduce -n 8 --set size=1KiB --format $fmt -o out.$fmt"
done
add - "stepgraph compile zigzag_ring_attention -n 4 --format stream --rank 1"
add - "stepgraph compile hierarchical_allreduce -n 8 --set mp=2 --format dot"
add - "stepgraph compile ring_allreduce -n 4 --rank 2"
add - "stepgraph compile linear_alltoall -n 4 --rank 3 --format json"
add - "stepgraph compile ring_allreduce -n 6 --max-steps 5"
add - "stepgraph compile ring_allreduce -n 6 --format stats --time"
add - "stepgraph compile ring_allreduce -n 4 --format goal --ns-per-byte 0.5 --ns-per-flop 0.01"
add - "stepgraph compile ring_attention -n 4 --set seq=4096 --format goal"
for p in parse elaborate match totals collectives unused prune validate all; do
  add - "stepgraph compile \$IN/tests/sim_cases/allreduce_wrapper.sched -n 4 --dump-after $p --format stats"
done
for pr in Simple LL LL128; do
  add - "stepgraph compile ring_allgather -n 4 --set size=8KiB --format msccl --proto $pr -o ag_$pr.xml"
done
add - "stepgraph compile \$IN/tests/sim_cases/allreduce_wrapper.sched -n 8 --expand --format text"
add - "stepgraph compile \$IN/tests/sim_cases/alltoall_wrapper.sched -n 8 --expand --format stats"
for a in allreduce={ring,recursive_doubling,rabenseifner,reduce_bcast,binomial,nccl_ring,nccl_tree,nccl_nvls}; do
  add - "stepgraph compile \$IN/tests/sim_cases/allreduce_wrapper.sched -n 8 --set size=64KiB --algo $a --format stats"
done
for a in alltoall={pairwise,bruck,linear}; do
  add - "stepgraph compile \$IN/tests/sim_cases/alltoall_wrapper.sched -n 6 --set size=6KiB --algo $a --format stats"
done
for a in allgather={ring,recursive_doubling,bruck,nccl_ring} reduce_scatter={ring,recursive_halving,nccl_ring} \
  bcast={binomial,pipeline,scatter_allgather,nccl_ring} reduce=binomial barrier=dissemination; do
  add - "stepgraph compile \$IN/tests/golden/compile_expand/coll.sched -n 8 --algo $a --format stats"
done
add - "stepgraph compile \$IN/tests/golden/compile_expand/coll.sched -n 6 --algo allgather=recursive_doubling --format stats"
for a in openmpi nccl nccl:gpus=4; do
  add - "stepgraph compile \$IN/tests/sim_cases/allreduce_wrapper.sched -n 16 --algo $a --format stats"
done
for s in ring_allreduce dp_bucketed_step hierarchical_allreduce ringx1_attention stripe_ring_attention_bwd ulysses_attention te_p2p_attention; do
  add - "stepgraph analyze $s -n 4 --per-rank"
done
add - "stepgraph analyze train_step -n 8 $TS --json"
add - "stepgraph analyze ring_attention -n 8 --unit Q --json"
add - "stepgraph analyze zigzag_ring_attention -n 4 --unit Q --per-rank --json"
add - "stepgraph analyze \$IN/tests/sim_cases/allreduce_wrapper.sched -n 8 --algo nccl:gpus=8"
add - "stepgraph analyze ring_allreduce -n 2..6 --json"

# --- check: ranges, JSON, quiet, the trail cases (where a wrong chunk's terms went)
add - "stepgraph check ring_allreduce -n 2..17,32,64 -q"
add - "stepgraph check recursive_doubling_allreduce -n 2..64:x2 --json"
add - "stepgraph check bruck_alltoall -n 2..12:+5"
add - "stepgraph check ring_allreduce -n 4 --dump-after match"
for f in "$IN"/tests/trail_cases/*.sched; do
  f=\$IN/${f#"$IN"/}
  add - "stepgraph check $f:bad -n 8"
  add - "stepgraph check $f:bad -n 8 --json"
  add - "stepgraph verify $f:bad -n 8"
  add - "stepgraph check $f:fixed -n 8"
done
add - "stepgraph check \$IN/tests/trail_cases/misrouted_hop.sched:bad -n 4"
add - "stepgraph check \$IN/tests/trail_cases/misrouted_hop.sched:bad -n 12 --set mp=3"

# --- the golden cases (tests/golden/*/cmd), each in a copy of its directory
for d in "$IN"/tests/golden/*/; do
  c=$(basename "$d")
  add - "stepgraph $(cat "$d/cmd")" "cp -r \$IN/tests/golden/$c/. ."
done

# --- verify on every defect case (tests/verify_cases): each `# expect NAME N=K` line, as text and
#     JSON; the defects also with Z3 alone under rendezvous sends (--time), and the interpreter's
#     check
for path in "$IN"/tests/verify_cases/*.sched; do
  f=\$IN/${path#"$IN"/}
  while read -r _ _ name nk _; do
    k=${nk#N=}
    k=${k%:}
    add - "stepgraph verify $f:$name -n $k"
    add - "stepgraph verify $f:$name -n $k --json"
    if [ "$name" != fixed ]; then
      add - "stepgraph verify $f:$name -n $k --engine z3 --semantics rendezvous --time"
      add - "stepgraph check $f:$name -n $k --json"
    fi
  done < <(grep '^# expect ' "$path")
done
add - "stepgraph verify \$IN/tests/verify_cases/wildcard_sum.sched:bad -n 3 --max-executions 2"
add - "stepgraph verify \$IN/tests/verify_cases/ring_shift.sched -n 2..6"
add - "stepgraph verify \$IN/tests/verify_cases/ring_shift.sched:bad -n 4 --engine both --semantics eager -q"
add - "stepgraph verify \$IN/tests/verify_cases/wildcard_gather.sched:bad -n 4 --engine both -q"
add - "stepgraph verify \$IN/tests/verify_cases/attn_kv_overwrite.sched:bad -n 3 --engine explicit --semantics both --json"
add - "stepgraph verify ring_allreduce -n 4 --semantics bounded --slots 1"
add - "stepgraph verify parity_ring_allgather -n 2..16 -q"
add - "stepgraph verify recursive_doubling_allgather -n 2..8 --json"

# --- MSCCL XML in (every file of tests/msccl, also bad/ and generated/) and out (compile --format
#     msccl, then the file read back)
for f in $(cd "$IN" && find tests/msccl -name '*.xml' | sort); do
  f=\$IN/$f
  add - "stepgraph verify $f"
  add - "stepgraph verify $f --json"
  case $f in */bad/*) continue ;; esac
  add - "stepgraph sim $f --model analytic"
  add - "stepgraph compile $f --format stats"
done
for f in "$IN"/tests/msccl/allgather_*.xml; do
  f=\$IN/${f#"$IN"/}
  add - "stepgraph check $f"
done
add - "stepgraph verify \$IN/tests/msccl/allgather_window.xml --semantics both"
add - "stepgraph verify \$IN/tests/msccl/send3_simple.xml --slots 1"
add - "stepgraph verify \$IN/tests/msccl/send3_ll.xml --slots 1 --json"
add - "stepgraph verify \$IN/tests/msccl/allgather_pair.xml -n 4"
add - "stepgraph sim \$IN/tests/msccl/allgather_window.xml --sweep size=512..128KiB --model analytic"
add - "stepgraph sim \$IN/tests/msccl/allgather_race.xml --allow-defects --model analytic"
add - "stepgraph sim \$IN/tests/msccl/generated/allreduce_a100_ring_8gpu_1ch_1inst_Simple.xml,ring_allreduce --platform dgx-a100:nodes=1 --set size=1MiB"
add - "stepgraph compile \$IN/tests/msccl/generated/alltoall_allpairs_8gpu_1inst_Simple.xml --format msccl"
for s in ring_allreduce ring_allgather ring_reduce_scatter pairwise_alltoall binomial_bcast recursive_doubling_allreduce nccl_ring_allreduce; do
  add - "stepgraph compile $s -n 4 --set size=4KiB --format msccl -o x.xml && stepgraph verify x.xml && stepgraph sim x.xml --model analytic --json"
done
add - "stepgraph compile ring_attention -n 4 --format msccl"
add - "stepgraph compile \$IN/tests/verify_cases/recv_first.sched:bad -n 2 --format msccl"

# --- sim: platform kinds and presets, both engines
for p in "" star star:bw=10Gbps,lat=5us star:hosts=16,model=lv08 star:model=cm02 fat-tree \
  fat-tree:leaves=2,per_leaf=4 fat-tree:leaves=2,per_leaf=4,oversub=2 fat-tree:levels=2,down=4x2,up=1x2,links=1x1 \
  torus torus:2x2x2 torus:4x2,bw=50Gbps,lat=2us dragonfly dragonfly:groups=2,chassis=1,routers=2,nodes=2 \
  nodes:count=2,gpus=4 nodes:count=1,gpus=8,nics=2,nvlink=300GBps,nic=200Gbps dgx-a100 dgx-h100 hgx-h100 \
  dgx-h200 dgx-b200 gb200-nvl72 dgx-h100:nodes=2,gpus=4,nic=200Gbps,nics=2,transport=ethernet \
  "\$G/cluster.xml" "\$G/cluster.xml,model=lv08" "@\$G/fat.platform"; do
  for m in simgrid analytic; do
    add - "stepgraph sim ring_allreduce -n 8 --set size=1MiB ${p:+--platform $p} --model $m"
  done
done
add - "stepgraph sim ring_allreduce,recursive_doubling_allreduce,rabenseifner_allreduce -n 8 --platform \$G/cluster.xml --model analytic --json"
# --- sim: errors in a platform
for p in star:bw=100Gb star:bw=1e-300bps torus:2x2 mesh:4 star:hosts=4,hosts=8 dragonfly:groups=4,routers=2 \
  nodes:gpus=3,nics=2 dgx-h100:transport=sockets "\$G/bad_bw.xml" "\$G/missing.xml" "@\$G/tiny_bw.platform" \
  "@\$G/missing.platform" "\$G/cluster.xml,bw=1Gbps"; do
  add - "stepgraph sim ring_allreduce -n 8 --platform $p --model analytic"
done
add - "stepgraph sim ring_allreduce -n 16 --platform \$G/cluster.xml"
# --- sim: options
R="stepgraph sim ring_allreduce -n 8 --set size=1MiB"
for o in "--protocol eager" "--protocol rendezvous" "--protocol auto --eager-limit 256KiB" "--message-latency 2us" \
  "--gamma 0.1ns" "--loggp o=1us,g=100ns,O=0.1ns" "--loggp o=1us,g=100ns,O=0.1ns,L=2us,G=0.08ns" "--no-symmetry" \
  "--map 0,2,1,3,4,5,6,7" "--map @\$G/reverse.map" "--top 2" "--envelope 16" "--window 2" "--algo allreduce=ring"; do
  add - "$R $o --model analytic"
  add - "$R $o"
done
for o in "--map 0,1,2" "--map @\$G/repeat.map" "--map 0,1,2,3,4,5,6,9" "--loggp o=2h" "--gamma -1ns" "--window 0" \
  "--protocol lazy" "--eager-limit 1Q" "--set size=1KiB --sweep size=1KiB..2KiB"; do
  add - "$R $o --model analytic"
done
add - "$R --sweep size=1KiB..1MiB --csv points.csv --model analytic"
add - "$R --sweep size=1KiB,64KiB,1MiB --csv - --json"
add - "$R --sweep size=1KiB..64KiB --plot sweep.svg"
add - "stepgraph sim ring_allreduce,recursive_doubling_allreduce -n 2..16:x2 --set size=64KiB --plot n.svg --csv n.csv --model analytic"
add - "stepgraph sim ring_allreduce -n 4 --set size=64KiB --sweep size=1KiB..64KiB --plot sweep.png --model analytic"
add - "stepgraph sim ring_allreduce -n 4 --set size=64KiB --trace trace.json"
add - "stepgraph sim ring_allreduce -n 4 --set size=64KiB --sweep size=1KiB,2KiB --trace trace.json --model analytic"
add - "stepgraph sim zigzag_ring_attention -n 4 --set seq=8192 --trace attn.json --platform nodes:count=1,gpus=4,speed=400Tf"
add - "stepgraph sim dp_bucketed_step -n 8 --set layers=8 --set buckets=4 --model analytic --json"
add - "stepgraph sim ring_attention,zigzag_ring_attention,allgather_attention,ringx4_attention,ulysses_ring_attention -n 8 --model analytic --platform nodes:count=1,gpus=8,speed=400Tf"
add - "stepgraph sim binomial_bcast,pipeline_bcast -n 8 --set binomial_bcast:root=3 --set pipeline_bcast:segments=4 --model analytic"
add - "stepgraph sim recursive_doubling_allgather -n 5..8 -q --model analytic"
add - "stepgraph sim recursive_doubling_allgather -n 5..8 --model analytic"
add - "stepgraph sim \$IN/tests/verify_cases/recv_first.sched:bad -n 2"
add - "stepgraph sim \$IN/tests/verify_cases/recv_first.sched:bad -n 2 --allow-defects"
add - "stepgraph sim \$IN/tests/verify_cases/ring_shift.sched:bad -n 4 --protocol rendezvous --allow-defects --model analytic"
add - "stepgraph sim \$IN/tests/verify_cases/skipped_reduce.sched:bad -n 4 --allow-defects --json"
add - "stepgraph sim ring_allreduce -n 8 --model magic"
add - "stepgraph sim ring_allreduce -n 8 --csv /nonexistent/dir/points.csv --model analytic"
# the sim cases (tests/sim_cases) with the flags they were written for
S=\$IN/tests/sim_cases
add - "stepgraph sim $S/allreduce_wrapper.sched -n 8 --platform nodes:count=1,gpus=8,model=ideal --sweep size=1MiB..64MiB"
add - "stepgraph sim $S/allreduce_wrapper.sched -n 32 --platform nodes:count=4,gpus=8,model=ideal --set size=256MiB --model analytic"
add - "stepgraph sim $S/allreduce_wrapper.sched -n 16 --algo nccl --set size=1MiB --model analytic --json"
add - "stepgraph sim $S/alltoall_wrapper.sched -n 16 --platform fat-tree:leaves=4,per_leaf=4,oversub=4 --set size=16MiB"
add - "stepgraph sim $S/alltoall_wrapper.sched -n 16 --platform fat-tree:leaves=4,per_leaf=4,oversub=4 --set size=16MiB --model analytic"
add - "stepgraph sim $S/chain_bcast_dataflow.sched -n 4 --window 1"
add - "stepgraph sim $S/chain_bcast_dataflow.sched -n 4"
add - "stepgraph sim $S/nccl_beside_send.sched -n 8 --platform dgx-h100:nodes=2,gpus=4"
add - "stepgraph sim $S/nccl_beside_send.sched -n 8 --platform dgx-h100:nodes=2,gpus=4 --model analytic --collectives memo"
add - "env NCCL_ALGO=Ring stepgraph sim $S/allreduce_wrapper.sched -n 32 --platform dgx-h100:nodes=4 --set size=1MiB --model analytic"
add - "env NCCL_ALGO=Tree NCCL_PROTO=LL stepgraph sim $S/allreduce_wrapper.sched -n 32 --platform dgx-a100:nodes=4 --set size=1MiB --model analytic"
# sim against measured nccl-tests tables (bench/nccl_accuracy's manifest; the slowest left out)
while IFS=$'\t' read -r file platform ranks coll envs _; do
  case "$file" in '' | \#* | *_10node_allreduce* | *_10node_allgather* | *_10node_reducescatter*) continue ;; esac
  a="sim --nccl-tests \$IN/nccl/tables/$file --platform $platform --model analytic"
  [ "$ranks" != - ] && a+=" -n $ranks"
  [ "$coll" != - ] && a+=" --nccl-collective $coll"
  e=
  [ "$envs" != - ] && e="env $envs "
  add - "${e}stepgraph $a"
done <"$IN/nccl/manifest.tsv"
T=\$IN/nccl/tables
add - "env NCCL_ALGO=Ring stepgraph sim ring_allreduce --nccl-tests $T/h100_8gpu_1node_allreduce_together-ring.txt --platform dgx-h100:nodes=1 --json"
add - "stepgraph sim --nccl-tests $T/h100_8gpu_1node_allgather_together-ring.txt --platform dgx-h100:nodes=1 --model simgrid"
add - "stepgraph sim --nccl-tests $T/README.md --platform dgx-h100:nodes=1"
add - "stepgraph sim --nccl-tests $T/missing.txt --platform dgx-h100:nodes=1"
add - "stepgraph calibrate --nccl-tests $T/h100_8gpu_1node_allreduce_together-ring.txt $T/h100_8gpu_1node_allgather_together-ring.txt --platform dgx-h100:nodes=1 -o fitted.platform"
add - "stepgraph calibrate --nccl-tests $T/a100_8gpu_2node_allreduce_alcf-sophia-hdr.txt:all_reduce --platform dgx-a100:nodes=2 --json"
add - "stepgraph calibrate --nccl-tests $T/h100_8gpu_1node_allgather_together-ring.txt --platform star"

# --- exec under mpiexec, at 2 and 4 ranks, on CPUs
MPI="mpiexec -n"
E="stepgraph exec"
Q="--iters 2 --warmup 1"
for np in 2 4; do
  add mpi,measured "$MPI $np $E ring_allreduce --set size=64KiB --check --compare native $Q"
  add mpi,measured "$MPI $np $E ring_allreduce --sweep size=1KiB..16KiB --check --json $Q"
  add mpi,measured "$MPI $np $E pairwise_alltoall --set size=16KiB --check --compare native $Q"
  add mpi,measured "$MPI $np $E zigzag_ring_attention --set seq=256 --set heads=2 --set dim=32 --check --iters 1 --warmup 0"
  add mpi,measured "$MPI $np $E ring_attention_bwd --set seq=256 --set heads=2 --set dim=32 --check --iters 1 --warmup 0"
  add mpi,measured "$MPI $np $E ring_allreduce --set size=16KiB --check $Q --device host-staged"
  add mpi "$MPI $np $E ring_allreduce --set size=16KiB --check $Q --device cuda"
  add mpi "$MPI $np $E ring_allreduce -n 3 --set size=16KiB"
  add mpi "$MPI $np $E \$G/stall.sched --timeout 1 --iters 1 --warmup 0"
  add mpi "$MPI $np stepgraph env --export"
done
add mpi,measured "$MPI 2 $E recursive_doubling_allreduce --set size=16KiB --check --compare native --native-algo ring $Q"
add mpi,measured "$MPI 2 $E ring_allgather --set size=16KiB --check $Q --dtype i32"
add mpi,measured "$MPI 2 $E binomial_bcast --set size=16KiB --set root=1 --check --compare native $Q"
add mpi,measured "$MPI 2 $E ring_reduce_scatter --set size=16KiB --check $Q --predict star:bw=10Gbps"
add mpi,measured "$MPI 2 $E ring_allreduce --set size=16KiB --check $Q --device host-staged --transport ipc"
for t in f32 f64 f16 bf16 i32 i64 i8 u8; do
  add mpi,measured "$MPI 2 $E ring_allreduce --set size=4KiB --check --compare native --dtype $t $Q"
done
for t in staged cuda-aware nccl; do
  add mpi,measured "$MPI 4 $E ring_allreduce --set size=16KiB --check $Q --device host-staged --transport $t"
done
add mpi,measured "$MPI 2 $E ring_allreduce --set size=16KiB --check $Q --device host-staged --device-sync"
add mpi,measured "$MPI 4 $E zigzag_ring_attention --set seq=512 --set heads=2 --set dim=32 --check --iters 1 --warmup 0 --device host-staged --transport nccl"
add mpi,measured "$MPI 4 $E dp_bucketed_step --set size=256KiB --set flops=1000000 --check --iters 1 --warmup 0"
add mpi,measured "$MPI 4 $E tp_allreduce_forward --set size=64KiB --set mp=2 --set flops=100000 --check --compare native --iters 1 --warmup 0"
add mpi "$MPI 2 $E \$G/stall.sched --allow-defects --timeout 1 --iters 1 --warmup 0"
add mpi,measured "$MPI 2 $E \$IN/tests/verify_cases/ring_shift.sched:bad --check $Q"
add mpi,measured "$MPI 2 $E \$IN/tests/msccl/allgather_race_fixed.xml --set size=64KiB --check --compare native $Q"
add mpi,measured "$MPI 2 $E \$IN/tests/msccl/send3_ll.xml --check $Q"
add mpi "$MPI 2 $E \$G/index.sched --check"
add mpi "$MPI 2 $E ring_allreduce --set size=16KiB --dtype f8"
add measured "$E ring_allreduce --set size=16KiB --check $Q"
add mpi,measured "$MPI 2 stepgraph calibrate --sizes 8..4KiB --iters 2 -o cal.platform"
add mpi,measured "$MPI 2 stepgraph calibrate --sizes 64,1KiB --iters 2 --json"
add mpi,measured "$MPI 2 stepgraph calibrate --sizes 8..4KiB --iters 2 -o cal.platform >/dev/null && $MPI 2 $E ring_allreduce --set size=64KiB $Q --predict @cal.platform"
add mpi "$MPI 2 stepgraph sim ring_allreduce -n 2..8 --set size=64KiB --model analytic"

# --- env: alone, and with each launcher's variables
add - "stepgraph env"
add - "stepgraph env --json"
add - "stepgraph env --export"
add - "stepgraph env --no-mpi --json"
add - "stepgraph env --json --export"
add - "env SLURM_JOB_ID=77 SLURM_STEP_ID=0 SLURM_PROCID=5 SLURM_NTASKS=8 SLURM_LOCALID=1 SLURM_NODEID=1 SLURM_JOB_NODELIST=gpu[01-02] SLURM_STEP_NODELIST=gpu[01-02] SLURM_TASKS_PER_NODE='4(x2)' stepgraph env --no-mpi"
add - "env SLURM_JOB_ID=77 SLURM_STEP_ID=0 SLURM_PROCID=5 SLURM_NTASKS=8 SLURM_LOCALID=1 SLURM_NODEID=1 SLURM_JOB_NODELIST=gpu[01-02] SLURM_STEP_NODELIST=gpu[01-02] SLURM_TASKS_PER_NODE='4(x2)' stepgraph env --no-mpi --export"
add - "env RANK=3 WORLD_SIZE=8 LOCAL_RANK=3 LOCAL_WORLD_SIZE=4 GROUP_RANK=0 MASTER_ADDR=10.1.2.3 MASTER_PORT=29400 TORCHELASTIC_RUN_ID=job TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 stepgraph env --json"
add - "env RANK=3 WORLD_SIZE=8 LOCAL_RANK=3 LOCAL_WORLD_SIZE=4 MASTER_ADDR=10.1.2.3 MASTER_PORT=29400 TORCHELASTIC_RUN_ID=job stepgraph env --export"
add - "env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 stepgraph env --no-mpi"
add - "env PMI_RANK=2 PMI_SIZE=4 MPI_LOCALRANKID=0 MPI_LOCALNRANKS=2 stepgraph env --no-mpi --json"
add - "env PMIX_RANK=1 PMIX_SIZE=2 stepgraph env --no-mpi"
add - "env MV2_COMM_WORLD_RANK=1 MV2_COMM_WORLD_SIZE=2 MV2_COMM_WORLD_LOCAL_RANK=1 MV2_COMM_WORLD_LOCAL_SIZE=2 stepgraph env --no-mpi --export"
add - "env PMI_RANK=0 PMI_SIZE=2 I_MPI_ROOT=/opt/intel/mpi stepgraph env --no-mpi"
add - "env RANK=1 WORLD_SIZE=4 stepgraph env --export"
add - "env RANK=9 WORLD_SIZE=4 stepgraph env --no-mpi"
add - "env PMI_RANK=0 PMI_SIZE=2 PMI_PORT=localhost:1 stepgraph exec ring_allreduce --set size=1KiB"

# --- errors: malformed input, missing files, out-of-range indices, wrong rank counts, bad options
add - "stepgraph compile \$G/syntax.sched -n 4"
add - "stepgraph verify \$G/syntax.sched -n 4 --json"
add - "stepgraph check \$G/index.sched -n 4"
add - "stepgraph verify \$G/index.sched -n 4"
add - "stepgraph compile \$G/peer.sched -n 4"
add - "stepgraph sim \$G/peer.sched -n 4"
add - "stepgraph compile \$G/pow2.sched -n 6"
add - "stepgraph check \$G/pow2.sched -n 2..8"
add - "stepgraph check \$G/pow2.sched -n 2..8 --json"
add - "stepgraph verify \$G/stall.sched -n 2"
add - "stepgraph verify \$G/stall.sched -n 3"
add - "stepgraph compile \$G/empty.sched -n 2 --format stats"
add - "stepgraph verify \$G/truncated.xml"
add - "stepgraph compile \$G/a_directory.sched -n 2"
add - "stepgraph compile /dev/null -n 2"
add - "stepgraph compile no_such.sched -n 4"
add - "stepgraph verify no_such.xml"
add - "stepgraph sim no_such_schedule -n 4"
add - "stepgraph compile ring_allreduce -n 4 --rank 4"
add - "stepgraph compile ring_allreduce -n 4 --format stream --rank 9"
add - "stepgraph compile ring_allreduce -n 4 -o /nonexistent/dir/out.txt"
add - "stepgraph compile ring_allreduce -n 4 --max-memory 1KiB"
add - "stepgraph compile ring_allreduce -n 4 --max-memory lots"
add - "stepgraph compile ring_allreduce -n 4 --format msccl --proto LL256"
add - "stepgraph compile ring_allreduce -n 4 --format goal --ns-per-byte -1"
add - "stepgraph compile \$IN/tests/golden/compile_expand/coll.sched -n 4 --format goal"
add - "stepgraph compile ring_allreduce"
add - "stepgraph check ring_allreduce -n 5..2"
add - "stepgraph check ring_allreduce -n 2..x"
add - "stepgraph verify ring_allreduce -n 4 --engine magic"
add - "stepgraph verify ring_allreduce -n 4 --slots 0"
add - "stepgraph verify \$IN/tests/msccl/allgather_pair.xml -n 3"
add - "stepgraph sim \$IN/tests/msccl/allgather_pair.xml -n 4 --model analytic"
add - "stepgraph verify recursive_doubling_allgather -n 6"
add - "stepgraph sim ring_allreduce -n 0"
add - "stepgraph analyze ring_attention -n 4 --unit Z"
add - "stepgraph list --bogus"
add - "stepgraph env --bogus"
add - "stepgraph demo -n 0"

# --- the tour
add mpi,measured "stepgraph demo"

# ---------------------------------------------------------------------------------------------
# Running: each command with OLD then NEW, at the same path, then compared.
# ---------------------------------------------------------------------------------------------
# run BIN DEST CLASS COMMAND SETUP: runs COMMAND in a fresh $WORK with BIN as `stepgraph`, keeps
# stdout, stderr, the exit code and the directory in DEST, normalised.
run() {
  local bin=$1 dest=$2 class=$3 cmd=$4 setup=$5 f
  ln -sfn "$bin" "$BIN/stepgraph"
  rm -rf "$WORK"
  mkdir -p "$WORK/tmp" "$dest" "$OUT/ompi"
  (
    cd "$WORK" || exit 1
    [ -z "$setup" ] || IN=$IN bash -c "$setup"
    t0=$(date +%s%N)
    env -i PATH="$BIN:$SYSPATH" HOME="$WORK" TMPDIR="$WORK/tmp" IN="$IN" G="$G" \
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
      OMPI_MCA_orte_tmpdir_base="$OUT/ompi" \
      timeout -k 10 120 bash -c "$cmd" >"$dest/raw.stdout" 2>"$dest/raw.stderr" </dev/null
    echo $? >"$dest/rc"
    echo $((($(date +%s%N) - t0) / 1000000)) >"$dest/ms"
  )
  mv "$WORK" "$dest/files"
  for f in stdout stderr; do
    cp "$dest/raw.$f" "$dest/$f"
    normalise "$dest/$f" "$class" stream
  done
  while IFS= read -r -d '' f; do
    if grep -Iq . "$f" 2>/dev/null; then normalise "$f" "$class" file; fi
  done < <(find "$dest/files" -type f -print0)
}

# compare ID: prints what differs between old/ID and new/ID (nothing if equal), keeps the diff.
compare() {
  local id=$1 what=() d=$OUT/diffs/$1.diff
  : >"$d"
  diff -u --label old/stdout --label new/stdout "$OUT/old/$id/stdout" "$OUT/new/$id/stdout" >>"$d" || what+=(stdout)
  diff -u --label old/stderr --label new/stderr "$OUT/old/$id/stderr" "$OUT/new/$id/stderr" >>"$d" || what+=(stderr)
  if ! cmp -s "$OUT/old/$id/rc" "$OUT/new/$id/rc"; then
    what+=(exit)
    echo "exit code: $(cat "$OUT/old/$id/rc") -> $(cat "$OUT/new/$id/rc")" >>"$d"
  fi
  (cd "$OUT" && diff -ruN "old/$id/files" "new/$id/files") >>"$d" 2>&1 || what+=(files)
  if [ ${#what[@]} -eq 0 ]; then
    rm -f "$d"
  else
    local IFS=,
    echo "${what[*]}"
  fi
}

total=0
ndiff=0
start=$SECONDS
: >"$OUT/commands.txt"
for i in "${!CMD[@]}"; do
  id=$(printf '%03d' "$i")
  printf '%s\t%s\t%s\n' "$id" "${CLS[$i]}" "${CMD[$i]}" >>"$OUT/commands.txt"
  if [ -n "${DIFFERENTIAL_ONLY:-}" ] && ! grep -Eq -- "$DIFFERENTIAL_ONLY" <<<"${CMD[$i]}"; then continue; fi
  total=$((total + 1))
  run "$OLD_BIN" "$OUT/old/$id" "${CLS[$i]}" "${CMD[$i]}" "${SET[$i]}"
  run "$NEW_BIN" "$OUT/new/$id" "${CLS[$i]}" "${CMD[$i]}" "${SET[$i]}"
  differs=$(compare "$id")
  if [ -n "$differs" ]; then
    ndiff=$((ndiff + 1))
    echo "DIFF $id [$differs]: ${CMD[$i]}"
    grep -v '^\(---\|+++\|diff \)' "$OUT/diffs/$id.diff" | head -6 | cut -c1-200 | sed 's/^/    /'
  fi
  if [ $((total % 50)) -eq 0 ]; then
    echo "differential: $total of ${#CMD[@]} commands run, $ndiff differ, $((SECONDS - start)) s" >&2
  fi
done
rm -rf "$BIN/stepgraph" "$OUT/ompi"
echo "$total commands, $ndiff differ ($((SECONDS - start)) s; outputs in $OUT)"
[ "$ndiff" -eq 0 ]
