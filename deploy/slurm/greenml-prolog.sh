#!/bin/sh
# greenml Slurm prolog: measure this node for the whole job, from allocation to end.
#
# slurm.conf:  Prolog=/etc/slurm/greenml-prolog.sh   Epilog=/etc/slurm/greenml-epilog.sh
#              PrologFlags=Alloc   (run on every node of the allocation at its start)
#
# Settings come from /etc/default/greenml (another file: GREENML_PROLOG_ENV_FILE), read
# as settings whatever their form: `GREENML_DB=...` and `export GREENML_DB=...` alike
# reach greenml (slurmd's own environment never reaches a prolog):
#   GREENML_DB           the shared store (postgresql://... ) every node writes to
#   GREENML_BIN          the greenml command (default: greenml on PATH)
#   GREENML_RUN_OPTIONS  more `greenml run` options (e.g. --country FR --pue 1.2)
#   GREENML_STATE_DIR    where the per-job state lives (default: /run/greenml)
#   GREENML_PROLOG_LOG   the node's log of each job's start and end
#                        (default: /var/log/greenml-prolog.log; also syslog, tag greenml-prolog)
#   GREENML_PROLOG_WAIT_S  how long to wait for greenml to start (default 10)
#
# Slurm 22.05 gives a prolog SLURM_JOB_ID, SLURM_NODELIST, SLURMD_NODENAME and no PATH,
# no SLURM_JOB_NAME: the name, the array task and the node list come from
# `scontrol show job`. The node's run belongs to job $SLURM_JOB_ID (an array task keeps
# its array job and task id) with its rank in the job's node list, so
# `greenml jobs show $SLURM_JOB_ID` adds every node up.
#
# slurmd kills the prolog's process group when the prolog exits, so greenml is started in
# a session of its own (setsid --fork) and this script exits only once that session leader
# has written its pid: a start that did not happen is logged as LOST, never silent. A
# prolog that fails drains the node, so this script always exits 0.
PATH=${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
export PATH
SETTINGS=${GREENML_PROLOG_ENV_FILE:-/etc/default/greenml}
if [ -r "$SETTINGS" ]; then
    set -a  # every assignment in the file is exported, with or without `export`
    # shellcheck disable=SC1090
    . "$SETTINGS"
    set +a
fi
JOB=${SLURM_JOB_ID:?}
NODE=${SLURMD_NODENAME:-$(hostname)}
GREENML_BIN=${GREENML_BIN:-greenml}
LOG=${GREENML_PROLOG_LOG:-/var/log/greenml-prolog.log}
STATE="${GREENML_STATE_DIR:-/run/greenml}/$JOB"

alive() {  # a live process: ps shows it, and not as a zombie (exited, not yet reaped)
    [ -n "$1" ] || return 1
    stat=$(ps -o stat= -p "$1" 2>/dev/null)
    [ -n "$stat" ] && [ "${stat#Z}" = "$stat" ]
}

say() {
    logger -t greenml-prolog "$*" 2>/dev/null
    printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"$LOG" 2>/dev/null
}

mkdir -p "$STATE" || { say "job $JOB on $NODE: LOST: cannot create $STATE"; exit 0; }
info=$(scontrol show job -o "$JOB" 2>/dev/null)
field() { printf '%s\n' "$info" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }

nodelist=${SLURM_NODELIST:-${SLURM_JOB_NODELIST:-$(field NodeList)}}
hosts=$(scontrol show hostnames "$nodelist" 2>/dev/null)
nodes=$(printf '%s\n' $hosts | grep -c .)
rank=$(printf '%s\n' $hosts | grep -nx "$NODE" | cut -d: -f1)
place=""
if [ -n "$rank" ] && [ "$nodes" -gt 0 ]; then
    place="--node-rank $((rank - 1)) --job-nodes $nodes"
fi
# What a job step would see, for greenml's job block (name, array task, scope).
SLURM_JOB_NAME=${SLURM_JOB_NAME:-$(field JobName)}
SLURM_ARRAY_JOB_ID=${SLURM_ARRAY_JOB_ID:-$(field ArrayJobId)}
SLURM_ARRAY_TASK_ID=${SLURM_ARRAY_TASK_ID:-$(field ArrayTaskId)}
GREENML_JOB_SCOPE=allocation
export SLURM_JOB_NAME SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID GREENML_JOB_SCOPE
[ -n "$SLURM_ARRAY_JOB_ID" ] || unset SLURM_ARRAY_JOB_ID SLURM_ARRAY_TASK_ID

store=${GREENML_DB:-"greenml's default store of user $(id -un) (no GREENML_DB in $SETTINGS)"}
store=$(printf '%s' "$store" | sed 's#//\([^:/@]*\):[^@/]*@#//\1:***@#')  # no password in logs
rm -f "$STATE/pid" "$STATE/stop"
# The run leads a session of its own before it writes its pid (setsid forks, then calls
# setsid(); the shell writes $$, then becomes greenml): once the pid file is there, the
# prolog's process group can die without it.
# shellcheck disable=SC2016,SC2086  # $$ is the child's; word splitting of the options
setsid -f sh -c 'dir=$1; shift; echo $$ >"$dir/pid.new" && mv "$dir/pid.new" "$dir/pid"
    exec "$@"' greenml-prolog "$STATE" \
    $GREENML_BIN run -q --job "$JOB" $place --cpu-scope machine \
    --name "${SLURM_JOB_NAME:-slurm-$JOB}" $GREENML_RUN_OPTIONS \
    -- sh -c 'while [ ! -e "$0/stop" ]; do sleep 0.2; done
              [ "$(cat "$0/stop")" = cancelled ] && exit 143; exit 0' "$STATE" \
    >"$STATE/greenml.log" 2>&1 </dev/null
waited=0
limit=$(( ${GREENML_PROLOG_WAIT_S:-10} * 20 ))
while [ ! -s "$STATE/pid" ] && [ "$waited" -lt "$limit" ]; do
    sleep 0.05
    waited=$((waited + 1))
done
pid=$(cat "$STATE/pid" 2>/dev/null)
if alive "$pid"; then
    shown=unknown
    [ -n "$rank" ] && shown=$((rank - 1))
    say "job $JOB on $NODE: greenml run started (pid $pid, node rank $shown of $nodes," \
        "name ${SLURM_JOB_NAME:-slurm-$JOB}), storing to $store"
else
    echo lost >"$STATE/lost"
    say "job $JOB on $NODE: LOST: greenml run did not start (no live pid after" \
        "${GREENML_PROLOG_WAIT_S:-10} s; $(tail -n 3 "$STATE/greenml.log" 2>/dev/null | tr '\n' ' '))"
fi
exit 0
