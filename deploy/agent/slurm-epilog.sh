#!/bin/sh
# greenml agent lines for the Slurm epilog (root): the job's GPUs go back to what they
# were before it, its token stops working and its file is removed. Always exits 0.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
GREENML=${GREENML:-greenml}
TOKENS=${GREENML_AGENT_TOKEN_DIR:-/run/greenml/jobs}
LOG=${GREENML_AGENT_LOG:-/var/log/greenml-agent.log}
JOB=${SLURM_JOB_ID:?}
"$GREENML" agent job-end --socket "${GREENML_AGENT_SOCKET:-/run/greenml/agent.sock}" \
    --job "$JOB" --token-file "$TOKENS/$JOB.token" >>"$LOG" 2>&1 \
    || logger -t greenml-agent "job $JOB: the greenml agent did not end it"
exit 0
