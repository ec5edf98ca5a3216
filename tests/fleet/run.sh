#!/usr/bin/env bash
# `memfabric fleet run` against a real Slurm: munged, slurmctld and three
# `slurmd -N nodeK` on this host (Debian's slurm-wlm and munge packages, installed
# where missing), and a throwaway PostgreSQL as in tests/postgres. Checks:
#   - --dry-run prints one srun per node and submits nothing;
#   - a campaign over node[1-3] while node2's slurmd (and its job) is killed: node2
#     recorded as failed with Slurm's reason, node1 and node3 stored;
#   - a node Slurm reports down is failed without a job; a job past its time limit
#     is failed with Slurm's reason;
#   - --retry-failed runs node2 alone, with the campaign's suite (asking for the
#     other one is refused), and completes the campaign;
#   - SIGINT (Ctrl-C) part-way: the jobs are cancelled (scancel), the node that
#     finished is kept, the others recorded as cancelled.
# Every daemon is stopped by the PID it started. Fails, never skips.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
say() { echo "[fleet] $*" >&2; }
die() { echo "[fleet] FAIL: $*" >&2; exit 1; }
SECONDS=0

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v srun >/dev/null \
    || ! command -v munged >/dev/null; then
    [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null \
        || die "Slurm is not installed (Debian: apt-get install slurmctld slurmd slurm-client munge) and this user cannot install it"
    say "installing slurmctld, slurmd, slurm-client and munge"
    export DEBIAN_FRONTEND=noninteractive
    pkgs=(slurmctld slurmd slurm-client munge)
    apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1 \
        || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1; } \
        || die "apt-get install ${pkgs[*]} failed"
fi
[[ $(id -u) == 0 ]] || die "the emulated cluster runs its daemons as root (SlurmUser=root)"

say "building memfabric"
cargo build --release -q -p memfabric
MF=$ROOT/target/release/memfabric

DIR="$(mktemp -d /tmp/memfabric-slurm.XXXXXX)"
PIDS=()
# shellcheck source=../postgres/server.sh
. tests/postgres/server.sh
stop_all() {
    local pid
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && { say "PID $pid did not stop on SIGTERM; killing it"; kill -KILL "$pid" 2>/dev/null || true; }
    done
    pg_stop
    rm -rf "$DIR"
}
trap stop_all EXIT
pg_start
URL="$PG_URL"

# A daemon's PID, once its PID file names a live process.
pid_of() {
    local file=$1 pid
    for _ in $(seq 1 100); do
        pid=$(cat "$file" 2>/dev/null || true)
        [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && { echo "$pid"; return; }
        sleep 0.1
    done
    die "no live daemon in $file"
}

mkdir -p "$DIR/munge" "$DIR/state" "$DIR/spool" "$DIR/log"
dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$DIR/munge/munge.key"
munged --force --socket="$DIR/munge/munge.sock" --key-file="$DIR/munge/munge.key" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/seed" \
    || die "munged did not start"
PIDS+=("$(pid_of "$DIR/munge/munged.pid")")

HOST=$(hostname)
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export SLURM_CONF=$DIR/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=memfabric
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.sock
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdTimeout=10
SlurmctldTimeout=10
MessageTimeout=5
InactiveLimit=0
KillWait=5
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
NodeName=node1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((PORT + 1)) CPUs=2 RealMemory=1000 State=UNKNOWN
NodeName=node2 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((PORT + 2)) CPUs=2 RealMemory=1000 State=UNKNOWN
NodeName=node3 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((PORT + 3)) CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=memfabric Nodes=node[1-3] Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF" || die "slurmctld did not start ($(tail -n 3 "$DIR/log/slurmctld.log"))"
PIDS+=("$(pid_of "$DIR/slurmctld.pid")")
declare -A SLURMD
start_slurmd() {
    rm -f "$DIR/slurmd-$1.pid"
    slurmd -f "$SLURM_CONF" -N "$1" || die "slurmd -N $1 did not start"
    SLURMD[$1]=$(pid_of "$DIR/slurmd-$1.pid")
    PIDS+=("${SLURMD[$1]}")
}
for n in node1 node2 node3; do start_slurmd "$n"; done
wait_idle() {
    for _ in $(seq 1 120); do
        [[ $(sinfo -h -N -t idle -o %N | sort -u | wc -l) == "$1" ]] && return
        sleep 0.5
    done
    sinfo >&2
    die "fewer than $1 idle nodes after 60 s"
}
wait_idle 3
say "Slurm $(sinfo -V | awk '{print $2}'): slurmctld ${PIDS[1]}, slurmd ${SLURMD[*]}, munged ${PIDS[0]} on $HOST"

fleet() { "$MF" --store "$URL" fleet "$@"; }
# A JSON field of a file, by a Python expression over `d`.
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# 1. --dry-run: three srun lines, nothing submitted.
fleet run --nodes 'node[1-3]' --suite quick --campaign dry --dry-run >"$DIR/dry.txt"
[[ $(grep -c "srun --job-name=memfabric-dry --nodes=1 --ntasks=1 --exclusive --nodelist=node" "$DIR/dry.txt") == 3 ]] \
    || { cat "$DIR/dry.txt" >&2; die "--dry-run did not print one srun per node"; }
grep -q -- "--no-save --quick > " "$DIR/dry.txt" || die "--dry-run lines lack the run command"
[[ -z $(squeue -h) ]] || die "--dry-run submitted jobs"
say "dry run: $(head -n 1 "$DIR/dry.txt")"

# 2. A node crashes mid-campaign. Each job first sleeps, so the crash lands while it runs.
cat >"$DIR/slow.sh" <<EOF
#!/bin/sh
sleep "\${MF_TEST_SLEEP:-0}"
exec $MF "\$@"
EOF
chmod +x "$DIR/slow.sh"
MF_TEST_SLEEP=20 "$MF" --store "$URL" fleet run --nodes 'node[1-3]' --suite quick --campaign acceptance --memfabric "$DIR/slow.sh" \
    --results "$DIR/acceptance" --json >"$DIR/acceptance.json" 2>"$DIR/acceptance.log" &
FLEET=$!
for _ in $(seq 1 60); do [[ $(squeue -h -t R -o %i | wc -l) == 3 ]] && break; sleep 0.5; done
[[ $(squeue -h -t R -o %i | wc -l) == 3 ]] || die "the three jobs did not start"
job2=$(squeue -h -w node2 -o %i)
steps=$(pgrep -f "slurmstepd: \[$job2\." || true)
victims="${SLURMD[node2]} $steps"
for s in $steps; do victims="$victims $(pgrep -P "$s" | tr '\n' ' ')"; done
for s in $steps; do for c in $(pgrep -P "$s"); do victims="$victims $(pgrep -P "$c" | tr '\n' ' ')"; done; done
say "crashing node2: kill -9 slurmd and its job's processes ($victims)"
# shellcheck disable=SC2086
kill -9 $victims
rc=0
wait "$FLEET" || rc=$?
[[ $rc == 1 ]] || { cat "$DIR/acceptance.log" >&2; die "fleet run exited $rc after a node failed, not 1"; }
[[ $(field "$DIR/acceptance.json" "[n['status'] for n in d['result']['nodes']]") == "['ok', 'failed', 'ok']" ]] \
    || die "node statuses: $(field "$DIR/acceptance.json" "d['result']['nodes']")"
reason=$(field "$DIR/acceptance.json" "d['result']['nodes'][1]['reason']")
say "node2 recorded as failed: $reason"
[[ $(field "$DIR/acceptance.json" "d['result']['report']['hosts']") == 2 ]] || die "the report does not hold node1 and node3"
grep -q "^\[fleet acceptance\] 3/3 done (1 failed)" "$DIR/acceptance.log" || die "no progress lines: $(cat "$DIR/acceptance.log")"
# An acceptance gate does not pass with a node missing.
rc=0
"$MF" --store "$URL" fleet report --campaign acceptance --fail-on-outliers >"$DIR/gate.txt" || rc=$?
[[ $rc == 1 ]] || die "fleet report --fail-on-outliers exited $rc with node2 missing, not 1"
grep -q "^Nodes of the campaign without a run (1): node2 (failed: srun: error: Node failure on node2" "$DIR/gate.txt" \
    || die "the report does not name the missing node: $(cat "$DIR/gate.txt")"

# 3. While node2 is down: a node Slurm reports down is not submitted, and a job that
#    outlives its time limit (--time 1, a job sleeping 100 s) is failed by Slurm.
rc=0
MF_TEST_SLEEP=100 "$MF" --store "$URL" fleet run --nodes 'node[2-3]' --suite quick --campaign limits --time 1 \
    --memfabric "$DIR/slow.sh" --results "$DIR/limits" --json >"$DIR/limits.json" 2>"$DIR/limits.log" || rc=$?
[[ $rc == 1 ]] || die "fleet run exited $rc with a node down and one out of time, not 1"
down=$(field "$DIR/limits.json" "d['result']['nodes'][0]['reason']")
late=$(field "$DIR/limits.json" "d['result']['nodes'][1]['reason']")
[[ $down == "Slurm reports the node unavailable (state down"* ]] || die "node2 while down: $down"
[[ $late == *"TIME LIMIT"* ]] || die "node3 past its time limit: $late"
say "down: $down"
say "time limit: $late"

# 4. node2 comes back; --retry-failed runs it alone, with the campaign's suite.
start_slurmd node2
wait_idle 3
rc=0
fleet run --retry-failed acceptance --suite full --dry-run >/dev/null 2>"$DIR/mixed.log" || rc=$?
[[ $rc == 2 && $(wc -l <"$DIR/mixed.log") == 1 ]] || die "a retry with another suite: exit $rc: $(cat "$DIR/mixed.log")"
grep -q "campaign acceptance was measured with --suite quick" "$DIR/mixed.log" || die "mixed suites: $(cat "$DIR/mixed.log")"
fleet run --retry-failed acceptance --dry-run >"$DIR/retry-dry.txt"
[[ $(grep -c -- "--no-save --quick > " "$DIR/retry-dry.txt") == 1 ]] \
    || die "the retry does not take the campaign's suite: $(cat "$DIR/retry-dry.txt")"
fleet run --retry-failed acceptance --results "$DIR/acceptance" --json >"$DIR/retry.json" 2>"$DIR/retry.log" \
    || die "the retry failed: $(cat "$DIR/retry.log")"
[[ $(grep -c "stored as run" "$DIR/retry.log") == 1 ]] || die "the retry ran other nodes: $(cat "$DIR/retry.log")"
[[ $(field "$DIR/retry.json" "[n['status'] for n in d['result']['nodes']]") == "['ok', 'ok', 'ok']" ]] \
    || die "after the retry: $(field "$DIR/retry.json" "d['result']['nodes']")"
[[ $(field "$DIR/retry.json" "d['result']['report']['hosts']") == 3 ]] || die "the retried campaign's report lacks a host"
"$MF" --store "$URL" fleet report --campaign acceptance >"$DIR/report.txt"
grep -q "^Fleet: 3 hosts in 1 classes" "$DIR/report.txt" || die "fleet report: $(head -n 3 "$DIR/report.txt")"
grep -q "without a run" "$DIR/report.txt" && die "after the retry the report still names a missing node"
say "retry: node2 stored; $(head -n 1 "$DIR/report.txt")"

# 5. Ctrl-C after node1 finished: the others are cancelled in Slurm and recorded.
cat >"$DIR/node1-fast.sh" <<EOF
#!/bin/sh
[ "\$SLURMD_NODENAME" = node1 ] || sleep 120
exec $MF "\$@"
EOF
chmod +x "$DIR/node1-fast.sh"
"$MF" --store "$URL" fleet run --nodes 'node[1-3]' --suite quick --campaign interrupted --memfabric "$DIR/node1-fast.sh" \
    --results "$DIR/interrupted" >"$DIR/interrupted.txt" 2>"$DIR/interrupted.log" &
FLEET=$!
for _ in $(seq 1 120); do [[ -s "$DIR/interrupted/node1.json" ]] && break; sleep 0.5; done
[[ -s "$DIR/interrupted/node1.json" ]] || die "node1 did not finish: $(cat "$DIR/interrupted.log")"
kill -INT "$FLEET"
rc=0
wait "$FLEET" || rc=$?
[[ $rc == 130 ]] || die "fleet run exited $rc after SIGINT, not 130"
for _ in $(seq 1 40); do [[ -z $(squeue -h -n memfabric-interrupted) ]] && break; sleep 0.5; done
[[ -z $(squeue -h -n memfabric-interrupted) ]] || die "jobs left after Ctrl-C: $(squeue -h -n memfabric-interrupted)"
grep -q "cancelled (scancel --me --name=memfabric-interrupted)" "$DIR/interrupted.log" || die "no cancel message: $(cat "$DIR/interrupted.log")"
"$MF" --store "$URL" --json fleet run --retry-failed interrupted --dry-run >"$DIR/left.txt"
[[ $(grep -c -- "--nodelist=node[23]" "$DIR/left.txt") == 2 ]] || die "after Ctrl-C, the nodes left: $(cat "$DIR/left.txt")"
[[ $(grep -c -- "--nodelist=node1" "$DIR/left.txt") == 0 ]] || die "node1's finished run was not kept"
say "Ctrl-C: jobs cancelled, node1 kept, node2 and node3 left for --retry-failed"

say "OK in ${SECONDS} s; stopping every daemon by its PID"
