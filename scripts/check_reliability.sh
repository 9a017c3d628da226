#!/usr/bin/env bash
# Issue 12's faults and hostile inputs, as a user meets them: each item runs the command a user
# would (the `xla-spmd` CLI, small scripts in-process and under `mpirun`), then prints what it
# printed (last lines), its exit status, how long it took, the processes it left behind, and
# PASS or FAIL against what the issue asks (the status, a message that must appear, no
# traceback, nothing left running).
#
#   source .venv/bin/activate; source /work/mpienv.sh     # or the exports of .ci/run
#   scripts/check_reliability.sh [SECTION...]             # 0 1 2 3 4; all by default
#
# Files go to $V12 (default /tmp/v12), written by scripts/reliability_files.py; each item's
# full output is $V12/ITEM.out. A process "left behind" is one still alive a few seconds after
# the command ended whose environment carries this item's marker (V12_ITEM=ITEM), so ranks
# started by mpirun count, and other jobs on the machine do not. The unit tests that cover the
# same ground are named in tests/ (test_cli_hostile.py, test_fuzz_inputs.py,
# runtime/test_no_hang.py, collectives/test_comm_faults.py, runtime/test_multi_host.py).
set -uo pipefail
cd "$(dirname "$0")/.."
V12=${V12:-/tmp/v12}
SECTIONS=${*:-0 1 2 3 4}
python scripts/reliability_files.py "$V12"
PASSED=0 FAILED=0 FAILURES=()

left_behind() {  # pids whose environment carries V12_ITEM=$1
    local pid found=()
    for pid in $(ls /proc | grep -E '^[0-9]+$'); do
        if grep -qsxz "V12_ITEM=$1" "/proc/$pid/environ"; then
            [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == Z ]] || found+=("$pid")
        fi
    done
    echo "${found[*]}"
}

rank_pid() {  # the pid of rank $1 of this item's job (run inside `check`)
    local pid
    for pid in $(ls /proc | grep -E '^[0-9]+$'); do
        if grep -qsxz "V12_ITEM=$V12_ITEM" "/proc/$pid/environ" \
           && grep -qsxz "OMPI_COMM_WORLD_RANK=$1" "/proc/$pid/environ" \
           && grep -qsa python "/proc/$pid/cmdline"; then
            echo "$pid"
            return
        fi
    done
}
export -f rank_pid

sigint_default() {  # run "$@" with SIGINT's default action (a background job's is "ignore")
    python -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); \
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}
export -f sigint_default

verdict() {  # verdict ITEM OK(0/1) WHY
    if [[ $2 == 0 ]]; then
        echo "RESULT $1: PASS"; PASSED=$((PASSED + 1))
    else
        echo "RESULT $1: FAIL ($3)"; FAILED=$((FAILED + 1)); FAILURES+=("$1: $3")
    fi
    echo
}

# check ITEM SECONDS STATUS PATTERN COMMAND: run COMMAND (bash) with at most SECONDS, then
# require its exit status to be STATUS ('0', 'nonzero', or a number) and PATTERN (grep -E) in
# its output (stdout and stderr), no 'Traceback', and nothing left running.
check() {
    local item=$1 limit=$2 want=$3 pattern=$4 command=$5 start rc elapsed left why=""
    echo "### $item"
    echo "\$ $command"
    start=$(date +%s.%N)
    V12_ITEM=$item timeout -k 5 "$limit" bash -c "$command" > "$V12/$item.out" 2>&1 < /dev/null
    rc=$?
    elapsed=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)")
    sleep 2
    left=$(left_behind "$item")
    grep -av "^\s*$" "$V12/$item.out" | tail -n "${TAIL:-4}" | cut -c1-400 | sed 's/^/    /'
    echo "exit status $rc after ${elapsed}s; left running: ${left:-none}"
    case $want in
        0) [[ $rc == 0 ]] || why="exit status $rc, expected 0" ;;
        nonzero) [[ $rc != 0 ]] || why="exit status 0, expected an error" ;;
        *) [[ $rc == "$want" ]] || why="exit status $rc, expected $want" ;;
    esac
    [[ $rc == 124 || $rc == 137 ]] && why="timed out after ${limit}s"
    [[ -z $pattern ]] || grep -aqE -- "$pattern" "$V12/$item.out" || why="${why:+$why; }no '$pattern' in the output"
    if [[ ${ALLOW_TRACEBACK:-0} == 0 ]] && grep -aq Traceback "$V12/$item.out"; then
        why="${why:+$why; }a traceback"
    fi
    if [[ -n $left ]]; then
        why="${why:+$why; }processes left: $left"
        kill -9 $left 2>/dev/null
    fi
    verdict "$item" "$([[ -z $why ]]; echo $?)" "$why"
}

count_is() {  # count_is ITEM N REGEX: the last check's output has exactly N lines matching
    local n
    n=$(grep -acE -- "$3" "$V12/$1.out")
    echo "    ('$3' printed $n times, expected $2)"
    [[ $n == "$2" ]]
}

MPIRUN="mpirun"
CLI="xla-spmd"
EXAMPLE="python examples/run_xla_partitioned_step.py --steps 3"
digest() { grep -o "digest of the last step's outputs: [0-9a-f]*" "$V12/$1.out" | awk '{print $NF}'; }

# -- 0. same bits everywhere ---------------------------------------------------------------
if [[ " $SECTIONS " == *" 0 "* ]]; then
    check 0.1-example-in-process 300 0 "digest" "$EXAMPLE"
    check 0.1-example-mpirun-8 300 0 "MPI ranks" "$MPIRUN -n 8 $EXAMPLE"
    a=$(digest 0.1-example-in-process) b=$(digest 0.1-example-mpirun-8)
    echo "### 0.1-same-digest: in-process $a, mpirun -n 8 $b"
    verdict 0.1-same-digest "$([[ -n $a && $a == "$b" ]]; echo $?)" "digests differ"
    # Another machine's Open MPI may pick another all-reduce algorithm: force each in turn
    # (1 basic linear, 2 nonoverlapping, 3 recursive doubling, 4 ring, 5 segmented ring,
    # 6 Rabenseifner). The bits must not move.
    TUNED="--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm"
    for algorithm in 1 2 3 4 5 6; do
        check "0.1-example-mpirun-8-allreduce-algorithm-$algorithm" 300 0 "MPI ranks" \
            "$MPIRUN $TUNED $algorithm -n 8 $EXAMPLE"
        b=$(digest "0.1-example-mpirun-8-allreduce-algorithm-$algorithm")
        verdict "0.1-same-digest-algorithm-$algorithm" "$([[ -n $b && $a == "$b" ]]; echo $?)" \
            "digest $b != $a"
    done
    TAIL=8 check 0.2-fold-in-process 300 0 "differs from the left fold in 0 elements" \
        "python $V12/fold.py 4"
    ! grep -E "left fold in [1-9]|reduce-scatter in [1-9]" "$V12/0.2-fold-in-process.out"
    verdict 0.2-fold-in-process-all-zero $? "an element differs from the left fold"
    TAIL=8 check 0.2-fold-mpirun-4 300 0 "differs from the left fold in 0 elements" \
        "$MPIRUN -n 4 python $V12/fold.py"
    ! grep -E "left fold in [1-9]|reduce-scatter in [1-9]" "$V12/0.2-fold-mpirun-4.out"
    verdict 0.2-fold-mpirun-4-all-zero $? "an element differs from the left fold"
    TAIL=8 check 0.2-fold-mpirun-4-no-shm 300 0 "left fold in 0 elements" \
        "XLA_SPMD_SHARED_MEMORY=0 $MPIRUN -x XLA_SPMD_SHARED_MEMORY -n 4 python $V12/fold.py"
    ! grep -E "left fold in [1-9]|reduce-scatter in [1-9]" "$V12/0.2-fold-mpirun-4-no-shm.out"
    verdict 0.2-fold-mpirun-4-no-shm-all-zero $? "an element differs from the left fold"
    TAIL=8 check 0.2-fold-mpirun-8 300 0 "left fold in 0 elements" \
        "$MPIRUN -n 8 python $V12/fold.py"
    ! grep -E "left fold in [1-9]|reduce-scatter in [1-9]" "$V12/0.2-fold-mpirun-8.out"
    verdict 0.2-fold-mpirun-8-all-zero $? "an element differs from the left fold"
    # The opt-out hands float sums to MPI: some elements then differ from the left fold.
    TAIL=8 check 0.3-opt-out-mpirun-4 300 0 "all-reduce differs from the left fold in [1-9]" \
        "XLA_SPMD_DETERMINISTIC=0 $MPIRUN -x XLA_SPMD_DETERMINISTIC -n 4 python $V12/fold.py"
    TAIL=8 check 0.3-opt-out-mpirun-4-recursive-doubling 300 0 "all-reduce differs from the \
left fold in [1-9]" "XLA_SPMD_DETERMINISTIC=0 $MPIRUN -x XLA_SPMD_DETERMINISTIC $TUNED 3 -n 4 \
python $V12/fold.py"
    check 0.3-opt-out-garbage 60 2 "XLA_SPMD_DETERMINISTIC='maybe': expected" \
        "XLA_SPMD_DETERMINISTIC=maybe $CLI run $V12/double.hlo --inputs $V12/x4.npz"
    check 0.3-opt-out-documented 10 0 "XLA_SPMD_DETERMINISTIC" \
        "grep -n 'XLA_SPMD_DETERMINISTIC=0' README.md; python -c \
'import xla_spmd as xs; print(xs.config.describe())' | grep -i determin"
fi

# -- 1. ranks that disagree --------------------------------------------------------------
if [[ " $SECTIONS " == *" 1 "* ]]; then
    for how in op kind size size-large shape dtype; do
        TAIL=6 check "1.1-disagree-$how" 120 nonzero "ranks disagree on collective call" \
            "$MPIRUN -n 4 python $V12/disagree.py $how"
        out="$V12/1.1-disagree-$how.out"
        ok=0
        count_is "1.1-disagree-$how" 1 "ranks disagree on collective call" || ok=1
        grep -q "which it should not" "$out" && { echo "    a rank returned"; ok=1; }
        grep -q "rank [0-9] called .* but rank [0-9] called" "$out" || ok=1
        verdict "1.1-disagree-$how-once-naming-both" $ok "not one report naming both calls"
    done
    TAIL=6 check 1.2-batch-size-runtime 300 nonzero "ranks disagree" \
        "$MPIRUN -n 4 python $V12/batch.py"
    count_is 1.2-batch-size-runtime 1 "ranks disagree on collective call"
    verdict 1.2-batch-size-runtime-once $? "the report is not printed once"
    TAIL=12 check 1.3-header-overhead 600 0 "header" \
        "$MPIRUN -n 4 python scripts/bench_communicators.py --min-bytes 4K --max-bytes 4M \
--repeats 20"
fi

# -- 2. nothing hangs --------------------------------------------------------------------
if [[ " $SECTIONS " == *" 2 "* ]]; then
    # In-process: device 3 loops forever; the others wait in the all-reduce (the devices run
    # in lockstep, so the loop's own deadline reports it).
    check 2.1-in-process-device-never-arrives 120 2 \
        "device 3 did not arrive \(it is still in the loop" \
        "XLA_SPMD_COLLECTIVE_TIMEOUT=10 $CLI run $V12/spin_3.hlo --inputs $V12/x4.npz \
--devices 4"
    # In-process: device 3 blocks in C, deaf to every stop request.
    ALLOW_TRACEBACK=1 check 2.1-in-process-device-hung-in-c 120 1 \
        "devices \[3\] were still running .* left behind" \
        "XLA_SPMD_COLLECTIVE_TIMEOUT=10 python $V12/hang_device.py"
    # Under MPI: rank 3 sleeps; ranks 0-2 wait 20 s. One report, blaming rank 3 only; the
    # waiting ranks' CPU time is read at 15 s.
    item=2.2-mpi-rank-never-arrives
    echo "### $item"
    command="XLA_SPMD_COLLECTIVE_TIMEOUT=20 $MPIRUN -x XLA_SPMD_COLLECTIVE_TIMEOUT -n 4 \
python $V12/hang_rank.py"
    echo "\$ $command   (CPU seconds of ranks 0-2 read with ps at 15 s)"
    start=$(date +%s.%N)
    V12_ITEM=$item PYTHONUNBUFFERED=1 timeout 120 bash -c "$command" > "$V12/$item.out" 2>&1 &
    job=$!
    sleep 15
    for rank in 0 1 2; do
        pid=$(grep -o "rank $rank pid [0-9]*" "$V12/$item.out" | awk '{print $4}')
        [[ -n $pid ]] && echo "    rank $rank: $(ps -o etimes=,cputime= -p "$pid" | \
            awk '{print "CPU " $2 " in " $1 " s of wall time"}')"
    done | tee "$V12/$item.cpu"
    wait $job; rc=$?
    elapsed=$(printf '%.1f' "$(echo "$(date +%s.%N) - $start" | bc)")
    sleep 2; left=$(left_behind $item)
    grep -v '^\s*$' "$V12/$item.out" | grep -v " pid " | tail -n 6 | sed 's/^/    /'
    echo "exit status $rc after ${elapsed}s; left running: ${left:-none}"
    ok=0
    count_is $item 1 "timed out after" || ok=1
    grep -q "on rank 0: rank 3 (it is not in a collective) never reached it" \
        "$V12/$item.out" || ok=1
    grep -qE "rank [012] .*never reached" "$V12/$item.out" && ok=1
    grep -aq Traceback "$V12/$item.out" && ok=1
    [[ $rc != 0 && -z $left ]] || ok=1
    awk '{split($3, t, ":"); s = t[1] * 60 + t[2]; if (s > 2) bad = 1} END {exit bad}' \
        "$V12/$item.cpu" || ok=1
    [[ -n $left ]] && kill -9 $left
    verdict $item $ok "not one report from rank 0 blaming rank 3 alone, or CPU burnt waiting"
    # The same through the CLI: rank 3 loops forever.
    TAIL=6 check 2.2-mpi-cli-rank-never-arrives 180 nonzero \
        "on rank 0: rank 3 .*never reached it" \
        "XLA_SPMD_COLLECTIVE_TIMEOUT=10 $MPIRUN -x XLA_SPMD_COLLECTIVE_TIMEOUT -n 4 $CLI run \
$V12/spin_3.hlo --inputs $V12/x4.npz"
    count_is 2.2-mpi-cli-rank-never-arrives 1 "timed out after"
    verdict 2.2-mpi-cli-one-report $? "not one report"
    # The timeout variable: checked at start-up.
    for value in 0 -1 -inf soon nan; do
        check "2.3-timeout-'$value'" 60 2 "XLA_SPMD_COLLECTIVE_TIMEOUT='$value': expected" \
            "XLA_SPMD_COLLECTIVE_TIMEOUT='$value' $CLI run $V12/negate.hlo --inputs $V12/x4.npz"
    done
    # 'inf' (and 1e400, which is inf) waits forever; an empty value is the default, 300 s.
    for value in inf 1e400 ""; do
        check "2.3-timeout-'$value'-accepted" 120 0 "out0: float32\[4\]  min=4 max=4" \
            "XLA_SPMD_COLLECTIVE_TIMEOUT='$value' $CLI run $V12/spin_none.hlo --inputs \
$V12/x4.npz --devices 4"
    done
    check "2.3-timeout-under-mpirun-once" 120 nonzero "XLA_SPMD_COLLECTIVE_TIMEOUT='0'" \
        "XLA_SPMD_COLLECTIVE_TIMEOUT=0 $MPIRUN -x XLA_SPMD_COLLECTIVE_TIMEOUT -n 2 $CLI run \
$V12/negate.hlo --inputs $V12/x4.npz"
    count_is "2.3-timeout-under-mpirun-once" 1 "XLA_SPMD_COLLECTIVE_TIMEOUT='0'"
    verdict 2.3-timeout-under-mpirun-printed-once $? "printed more than once"
    check 2.3-timeout-documented 10 0 "collective_timeout" \
        "grep -n 'XLA_SPMD_COLLECTIVE_TIMEOUT=1800' README.md && python -c \
'import xla_spmd as xs; print(xs.config.describe())' | grep -i timeout"
    # Loops that never end.
    check 2.4-loop-cap-cli 120 2 "still true after 1000 iterations" \
        "$CLI run $V12/spin_all.hlo --inputs $V12/x4.npz --devices 4 --max-loop-iterations 1000"
    check 2.4-loop-cap-cli-mpirun 180 nonzero "still true after 1000 iterations" \
        "$MPIRUN -n 4 $CLI run $V12/spin_all.hlo --inputs $V12/x4.npz --max-loop-iterations 1000"
    count_is 2.4-loop-cap-cli-mpirun 1 "still true after 1000 iterations"
    verdict 2.4-loop-cap-cli-mpirun-once $? "printed more than once"
    ALLOW_TRACEBACK=1 check 2.4-loop-cap-config 120 1 "still true after 1000 iterations" \
        "python $V12/loop_config.py $V12/spin_one.hlo"
    check 2.4-loop-cap-variable 120 2 "still true after 1000 iterations" \
        "XLA_SPMD_MAX_LOOP_ITERATIONS=1000 $CLI run $V12/spin_one.hlo --inputs $V12/x4.npz"
    check 2.4-loop-cap-interpret 120 1 "still true after 2 iterations" \
        "$CLI interpret tests/data/stablehlo/control.mlir --max-loop-iterations 2"
    check 2.4-loop-default-cap 600 2 "still true after 10000000 iterations" \
        "$CLI run $V12/spin_one.hlo --inputs $V12/x4.npz"
    # Ctrl-C: SIGINT into a loop that never ends, to the process (5 s in), to mpirun and to
    # one rank (20 s in). A shell starts background jobs with SIGINT ignored, which their
    # children inherit: `timeout` and `sigint_default` start the command as a terminal would.
    check 2.5-ctrl-c-in-process 60 130 "xla-spmd run: interrupted" \
        "timeout --preserve-status -s INT 5 $CLI run $V12/spin_all.hlo --inputs $V12/x4.npz \
--devices 4"
    check 2.5-ctrl-c-to-mpirun 120 nonzero "" \
        "timeout --preserve-status -s INT 20 $MPIRUN -n 4 $CLI run $V12/spin_all.hlo \
--inputs $V12/x4.npz"
    grep -aq "still true after" "$V12/2.5-ctrl-c-to-mpirun.out"
    verdict 2.5-ctrl-c-to-mpirun-stopped-in-the-loop "$((1 - $?))" "ran on to the loop cap"
    check 2.5-ctrl-c-to-one-rank 120 nonzero "rank 2 failed, aborting all ranks" \
        "sigint_default $MPIRUN -n 4 $CLI run $V12/spin_all.hlo --inputs $V12/x4.npz & \
p=\$!; sleep 20; kill -INT \$(rank_pid 2); wait \$p"
    count_is 2.5-ctrl-c-to-one-rank 1 "failed, aborting all ranks"
    verdict 2.5-ctrl-c-to-one-rank-once $? "not one report"
fi

# -- 3. hostile input --------------------------------------------------------------------
if [[ " $SECTIONS " == *" 3 "* ]]; then
    n=0
    hostile() {  # hostile WHAT PATTERN ARGS...: `xla-spmd ARGS` exits 2 with PATTERN
        local what=$1 pattern=$2
        shift 2
        n=$((n + 1))
        TAIL=2 check "3.$n-$what" 120 2 "$pattern" "$CLI $*"
        count_is "3.$n-$what" 1 "^xla-spmd .*error" \
            || verdict "3.$n-$what-one-line" 1 "the error is not one line"
    }
    for command in run partition "partition --json" rules propagate; do
        hostile binary ":1:1: a NUL byte" "$command $V12/binary.hlo"
        hostile utf16 "this is UTF-16 text" "$command $V12/utf16.hlo"
        hostile latin1 ":2:5: byte 0xe9 is not UTF-8" "$command $V12/latin1.hlo"
    done
    hostile binary-convert ":1:1: a NUL byte" convert "$V12/binary.hlo" "$V12/out.mlir"
    for command in interpret rules run; do
        hostile binary-mlir ":2:3: byte 0xff is not UTF-8" "$command $V12/binary.mlir"
    done
    hostile latin1-interpret ":1:5: byte 0xe9" interpret "$V12/latin1.mlir"
    hostile tuple-3000 "nested more than 100 levels" partition "$V12/tuple3000.hlo"
    hostile calls-2000 "called computations nest 2000 deep" run "$V12/calls2000.hlo" \
        --inputs "$V12/x4.npz"
    hostile parens-100k-mlir "nested more than 100 levels" partition "$V12/parens100k.mlir"
    TAIL=2 check 3.parens-100k-metadata 120 0 "out0" "$CLI run $V12/parens100k.hlo"
    hostile huge-broadcast "b \(broadcast\) in e is f32\[100000000000\], 372.5 GiB, more than" \
        run "$V12/huge_broadcast.hlo"
    hostile huge-constant "\(constant\) in main is f32\[100000000000\]" run \
        "$V12/huge_constant.mlir"
    hostile npz-claims-1e11 "arg0 has shape \[100000000000\], but parameter 0 \(x\) is f32\[4\]" \
        run "$V12/double.hlo" --inputs "$V12/claims_1e11.npz"
    hostile zip-bomb "refusing it unread" run "$V12/double.hlo" --inputs "$V12/bomb.npz"
    TAIL=2 check 3.zip-bomb-memory 120 2 "Maximum resident set size" \
        "/usr/bin/time -v $CLI run $V12/double.hlo --inputs $V12/bomb.npz 2>&1 | \
grep -E 'error|Maximum resident'; exit \${PIPESTATUS[0]}"
    rss=$(grep -o "Maximum resident set size (kbytes): [0-9]*" "$V12/3.zip-bomb-memory.out" | \
          awk '{print $NF}')
    verdict 3.zip-bomb-not-inflated "$([[ -n $rss && $rss -lt 1000000 ]]; echo $?)" \
        "max RSS ${rss} KiB"
    hostile iota-4e9 "does not fit the s32 indices" partition "$V12/iota4e9.hlo"
    hostile output-nonexistent "directory /nonexistent/dir does not exist" run \
        "$V12/double.hlo" --inputs "$V12/x4.npz" --output /nonexistent/dir/out.npz
    hostile output-dir "$V12/outdir: is a directory; give a file name" run "$V12/double.hlo" \
        --inputs "$V12/x4.npz" --output "$V12/outdir"
    check 3.output-dir-wrote-nothing 5 0 "" \
        "test ! -e $V12/outdir.npz && test -z \"\$(ls $V12/outdir)\""
    hostile convert-into-dir "is a directory" convert "$V12/double.hlo" "$V12/outdir"
    hostile convert-into-dir-named-hlo "folder.hlo: is a directory" convert "$V12/double.hlo" \
        "$V12/folder.hlo"
    hostile npz-strings "arg0 holds strings" run "$V12/double.hlo" --inputs "$V12/strings.npz"
    hostile npz-records "arg0 holds a structured dtype" run "$V12/double.hlo" \
        --inputs "$V12/records.npz"
    # (an output larger than the pipe's buffer, so that the writer meets the closed pipe)
    check 3.closed-pipe 120 0 "^pipe status: 141 0$" \
        "$CLI partition tests/data/jax/random_threefry/random_threefry.optimized.hlo | head -1; \
echo \"pipe status: \${PIPESTATUS[*]}\""
    hostile device-9 "uses devices \[0, 1, 2, 9\], not 0..3" partition "$V12/device9.hlo"
    hostile tiles-rank-3 "tiles 3 dims, but %x is f32\[8,4\], of rank 2" partition \
        "$V12/rank3tiles.hlo"
    hostile groups-9 "replica_groups name device 9, but the module runs on 4 devices" \
        partition "$V12/groups9.hlo"
    hostile groups-2e63 "name device 9223372036854775809" partition "$V12/groups_2e63.hlo"
    hostile groups-2e64 "name device 99999999999999999999" partition "$V12/groups_2e64.hlo"
    hostile permute-7 "source_target_pairs name device 7" partition "$V12/permute7.hlo"
    hostile unknown-attribute "'add' has no attribute 'frobnication'" run "$V12/frob.hlo" \
        --inputs "$V12/x4.npz"
    hostile interpret-hlo "interpret runs StableHLO interpreter test files" interpret \
        "$V12/double.hlo"
    hostile interpret-empty "empty.mlir: no test cases" interpret "$V12/empty.mlir"
    TAIL=2 check 3.single-value-while 120 0 "out0: int32\[\]  min=10 max=10" \
        "$CLI run $V12/while1.mlir --inputs $V12/i1.npz"
    hostile global-shape-devices "arg0 has shape \[4, 4\], but parameter 0 \(x\) is f32\[8,4\] \
\(global shape \[8, 4\]\)" run "$V12/sharded.hlo" --inputs "$V12/x44.npz" --devices 2
    TAIL=3 check 3.global-shape-mpirun-once 120 nonzero "global shape \[8, 4\]" \
        "$MPIRUN -n 2 $CLI run $V12/sharded.hlo --inputs $V12/x44.npz"
    count_is 3.global-shape-mpirun-once 1 "xla-spmd run: error"
    verdict 3.global-shape-mpirun-printed-once $? "printed more than once"
    # No osc_ucx error line in any mpirun output of this run.
    hits=$(grep -l "osc_ucx" "$V12"/*.out 2>/dev/null)
    echo "### 3.no-osc-ucx: files with 'osc_ucx': ${hits:-none}"
    verdict 3.no-osc-ucx "$([[ -z $hits ]]; echo $?)" "osc_ucx lines in $hits"
    # The fuzz test: part of the README's test command (CI runs it).
    TAIL=2 check 3.fuzz 900 0 "passed" \
        "python -m pytest -p no:cacheprovider tests/test_fuzz_inputs.py"
fi

# -- 4. past one machine ------------------------------------------------------------------
if [[ " $SECTIONS " == *" 4 "* ]]; then
    check 4.0-example-in-process 300 0 "digest" "$EXAMPLE"
    check 4.1-tcp-only 300 0 "digest" \
        "$MPIRUN --mca pml ob1 --mca btl tcp,self -n 8 $EXAMPLE"
    check 4.1-btl-tcp-self 300 0 "digest" "$MPIRUN --mca btl tcp,self -n 8 $EXAMPLE"
    a=$(digest 4.0-example-in-process) b=$(digest 4.1-tcp-only) c=$(digest 4.1-btl-tcp-self)
    echo "### 4.1-same-digest: in-process $a, TCP only $b, btl tcp,self $c"
    verdict 4.1-same-digest "$([[ -n $a && $a == "$b" && $a == "$c" ]]; echo $?)" \
        "digests differ"
    TAIL=3 check 4.2-two-hosts-netns 900 0 "passed" \
        "python -m pytest -rs -p no:cacheprovider tests/runtime/test_multi_host.py"
    check 4.3-readme 10 0 "hostfile" "sed -n '/^## Past one machine/,/^## Layout/p' README.md"
fi

echo "== $PASSED passed, $FAILED failed"
for failure in "${FAILURES[@]}"; do echo "FAIL $failure"; done
[[ $FAILED == 0 ]]
