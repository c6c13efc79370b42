"""Running a command under measurement: the runner, recorder, spool and what persists a run."""
