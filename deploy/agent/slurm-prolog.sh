#!/bin/sh
# greenml agent lines for the Slurm prolog (root, PrologFlags=Alloc: every node of the job).
# Registers the job with the node's agent (its user and GPUs) and writes the job's token
# to /run/greenml/jobs/$SLURM_JOB_ID.token (the job's user only, 0400), where greenml
# inside the job finds it. Starts the agent first where no systemd unit runs it.
# Always exits 0: a failing prolog drains the node.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
GREENML=${GREENML:-greenml}
SOCKET=${GREENML_AGENT_SOCKET:-/run/greenml/agent.sock}
CONFIG=${GREENML_AGENT_CONFIG:-/etc/greenml/agent.toml}
TOKENS=${GREENML_AGENT_TOKEN_DIR:-/run/greenml/jobs}
LOG=${GREENML_AGENT_LOG:-/var/log/greenml-agent.log}
JOB=${SLURM_JOB_ID:?}
if [ ! -S "$SOCKET" ]; then  # no agent yet: start one (a second start is refused by its lock)
    setsid "$GREENML" agent start --config "$CONFIG" </dev/null >>"$LOG" 2>&1 &
    tries=0
    while [ ! -S "$SOCKET" ] && [ "$tries" -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); done
fi
"$GREENML" agent job-start --socket "$SOCKET" --job "$JOB" --user "${SLURM_JOB_UID:?}" \
    --node-gpus "${SLURM_JOB_GPUS:-}" --token-file "$TOKENS/$JOB.token" >>"$LOG" 2>&1 \
    || logger -t greenml-agent "job $JOB: not registered with the greenml agent"
exit 0
