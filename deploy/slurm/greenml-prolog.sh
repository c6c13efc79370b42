#!/bin/sh
# greenml Slurm prolog: measure this node for the whole job, from allocation to end.
#
# slurm.conf:  Prolog=/etc/slurm/greenml-prolog.sh   Epilog=/etc/slurm/greenml-epilog.sh
#              PrologFlags=Alloc   (run on every node of the allocation at its start)
# Settings, from the environment of slurmd or /etc/default/greenml (sourced if present):
#   GREENML_DB           the shared store (postgresql://... ) every node writes to
#   GREENML_BIN          the greenml command (default: greenml)
#   GREENML_RUN_OPTIONS  more `greenml run` options (e.g. --country FR --pue 1.2)
#   GREENML_STATE_DIR    where the per-job state lives (default: /run/greenml)
#
# The node's run belongs to job $SLURM_JOB_ID with its rank in the job's node list, so
# `greenml jobs show $SLURM_JOB_ID` adds every node up. A prolog that fails drains the
# node, so this script always exits 0: a node greenml cannot measure is flagged as
# missing in `jobs show`, never a lost node.
[ -r /etc/default/greenml ] && . /etc/default/greenml
GREENML_BIN=${GREENML_BIN:-greenml}
STATE="${GREENML_STATE_DIR:-/run/greenml}/${SLURM_JOB_ID:?}"
mkdir -p "$STATE" || exit 0
hosts=$(scontrol show hostnames "$SLURM_JOB_NODELIST" 2>/dev/null)
nodes=$(printf '%s\n' $hosts | grep -c .)
rank=$(printf '%s\n' $hosts | grep -nx "$SLURMD_NODENAME" | cut -d: -f1)
place=""
if [ -n "$rank" ] && [ "$nodes" -gt 0 ]; then
    place="--node-rank $((rank - 1)) --job-nodes $nodes"
fi
# shellcheck disable=SC2086  # word splitting of the option lists is intended
setsid $GREENML_BIN run -q --job "$SLURM_JOB_ID" $place --cpu-scope machine \
    --name "${SLURM_JOB_NAME:-slurm-$SLURM_JOB_ID}" $GREENML_RUN_OPTIONS \
    -- sh -c 'while [ ! -e "$0/stop" ]; do sleep 1; done' "$STATE" \
    >"$STATE/greenml.log" 2>&1 </dev/null &
echo $! >"$STATE/pid"
exit 0
