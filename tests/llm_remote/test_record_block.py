"""The ``workflow`` record block (schema version 4): typed, in the shipped schema, and older
records still read byte for byte (so their ledger hashes hold)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from greenml.ledger.canonical import canonical_json, record_sha256
from greenml.llm.remote.calls import account
from greenml.llm.remote.collector import Collector
from greenml.record.run_record import RECORD_SCHEMA_VERSION, RunRecord
from greenml.store.record_schema import shipped_schema_text
from tests.run_records import record as hand_record


def workflow_block() -> dict[str, object]:
    collector = Collector("agent")
    collector.add_call(account(provider="openai", model="gpt-4o", input_tokens=10, output_tokens=5))
    collector.add_tool("search", 0.5)
    return collector.block()


def test_version_3_records_read_unchanged_and_version_4_with_a_workflow(tmp_path: Path) -> None:
    assert RECORD_SCHEMA_VERSION >= 4  # 5 added the imported block (issue 34)
    validator = jsonschema.Draft202012Validator(json.loads(shipped_schema_text()))
    older = {**hand_record(3.6e6), "schema_version": 3}
    typed = RunRecord.from_dict(older, strict=True)
    assert typed.workflow is None and json.dumps(typed.to_dict()) == json.dumps(older)
    assert record_sha256(RunRecord.from_dict(older).to_dict()) == record_sha256(older)
    newer = {**older, "schema_version": 4, "workflow": workflow_block()}
    validator.validate(newer)
    typed = RunRecord.from_dict(newer, strict=True)
    assert typed.workflow is not None and typed.workflow.estimated.calls == 1
    assert canonical_json(typed.to_dict()) == canonical_json(newer)
    broken = {**newer, "workflow": {**workflow_block(), "calls": "three"}}
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(broken)
