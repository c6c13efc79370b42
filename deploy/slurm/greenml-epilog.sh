#!/bin/sh
# greenml Slurm epilog: end the measurement the prolog started and let it store the run.
# See greenml-prolog.sh for the settings. Waits at most GREENML_EPILOG_WAIT_S seconds
# (default 30) for the run to be stored; always exits 0 (a failing epilog drains the node).
[ -r /etc/default/greenml ] && . /etc/default/greenml
STATE="${GREENML_STATE_DIR:-/run/greenml}/${SLURM_JOB_ID:?}"
[ -d "$STATE" ] || exit 0
touch "$STATE/stop"
pid=$(cat "$STATE/pid" 2>/dev/null)
waited=0
while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "${GREENML_EPILOG_WAIT_S:-30}" ]; do
    sleep 1
    waited=$((waited + 1))
done
[ -s "$STATE/greenml.log" ] && logger -t greenml-epilog <"$STATE/greenml.log" 2>/dev/null
rm -rf "$STATE"
exit 0
