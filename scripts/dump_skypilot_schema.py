"""Regenerate tests/schedule/data/skypilot_schemas.json from a SkyPilot release.

SkyPilot is never a greenml dependency: this script installs the pinned release
into a throwaway virtual environment and dumps its task, resources and storage
JSON schemas (``sky.utils.schemas``), which the tests use to validate the task
YAML that ``greenml plan --emit skypilot`` writes.

    python scripts/dump_skypilot_schema.py [--version 0.14.1]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "schedule" / "data" / "skypilot_schemas.json"
DUMP = """
import json, sys
from sky.utils import schemas
json.dump({"skypilot_version": sys.argv[1], "task": schemas.get_task_schema(),
           "resources": schemas.get_resources_schema(), "storage": schemas.get_storage_schema()},
          open(sys.argv[2], "w"), indent=1, sort_keys=True, default=str)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.14.1")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        subprocess.run(
            [python, "-m", "pip", "install", "-q", f"skypilot=={args.version}"], check=True
        )
        subprocess.run([python, "-c", DUMP, args.version, str(OUT)], check=True)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
