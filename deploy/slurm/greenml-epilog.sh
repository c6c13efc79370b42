#!/bin/sh
# greenml Slurm epilog: end the measurement the prolog started and let it store the run.
# See greenml-prolog.sh for the settings. A cancelled job's runs end as `interrupted`.
# Waits at most GREENML_EPILOG_WAIT_S seconds (default 30) for the run to be stored, then
# stops greenml's whole session (TERM, then KILL) and logs it; always exits 0 (a failing
# epilog drains the node).
PATH=${PATH:-/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin}
export PATH
SETTINGS=${GREENML_PROLOG_ENV_FILE:-/etc/default/greenml}
if [ -r "$SETTINGS" ]; then
    set -a
    # shellcheck disable=SC1090
    . "$SETTINGS"
    set +a
fi
JOB=${SLURM_JOB_ID:?}
NODE=${SLURMD_NODENAME:-$(hostname)}
LOG=${GREENML_PROLOG_LOG:-/var/log/greenml-prolog.log}
STATE="${GREENML_STATE_DIR:-/run/greenml}/$JOB"
[ -d "$STATE" ] || exit 0

alive() {  # a live process: ps shows it, and not as a zombie (exited, not yet reaped)
    [ -n "$1" ] || return 1
    stat=$(ps -o stat= -p "$1" 2>/dev/null)
    [ -n "$stat" ] && [ "${stat#Z}" = "$stat" ]
}

say() {
    logger -t greenml-epilog "$*" 2>/dev/null
    printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"$LOG" 2>/dev/null
}

# How the job ended: scontrol says only COMPLETING during the epilog, so ask the
# accounting (sacct), which may lag the cancel by a moment (at most 2 s here).
how=completed
tries=0
while [ "$tries" -lt 10 ] && command -v sacct >/dev/null; do
    state=$(sacct -n -X -P -o State -j "$JOB" 2>/dev/null | head -n 1)
    case $state in
        CANCELLED*) how=cancelled; break ;;
        RUNNING*|PENDING*|"") sleep 0.2; tries=$((tries + 1)) ;;
        *) break ;;
    esac
done
pid=$(cat "$STATE/pid" 2>/dev/null)
if ! alive "$pid"; then
    say "job $JOB on $NODE: LOST: greenml ended before the job did, or never started" \
        "($(tail -n 3 "$STATE/greenml.log" 2>/dev/null | tr '\n' ' '))"
fi
echo "$how" >"$STATE/stop.new" && mv "$STATE/stop.new" "$STATE/stop"
waited=0
limit=$(( ${GREENML_EPILOG_WAIT_S:-30} * 10 ))
while alive "$pid" && [ "$waited" -lt "$limit" ]; do
    sleep 0.1
    waited=$((waited + 1))
done
if alive "$pid"; then
    say "job $JOB on $NODE: greenml (pid $pid) still running after" \
        "${GREENML_EPILOG_WAIT_S:-30} s: stopping its session; its run may be incomplete"
    pkill -TERM -s "$pid" 2>/dev/null  # its session: greenml and the command it watches
    sleep 2
    pkill -KILL -s "$pid" 2>/dev/null
elif [ -n "$pid" ]; then
    say "job $JOB on $NODE: greenml run ended ($how) $((waited / 10)).$((waited % 10)) s after the stop"
fi
[ -s "$STATE/greenml.log" ] && logger -t greenml-epilog <"$STATE/greenml.log" 2>/dev/null
rm -rf "$STATE"
exit 0
