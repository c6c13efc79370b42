"""The policy in the config file: checked settings, written with the user's file kept, recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.errors import ConfigError
from greenml.savings.policy import SETTINGS, check_item, load_policy, policy_block
from greenml.savings.policy_file import remove_item, write_item

VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                   st.text(max_size=8), st.lists(st.integers(), max_size=2))  # fmt: skip
KEYS = st.sampled_from([*SETTINGS, "spot", "cache", "when", "deadline", "workload", "bogus"])


@given(st.dictionaries(KEYS, VALUES, max_size=5))
def test_a_policy_item_is_accepted_within_bounds_or_refused_in_one_line(values: dict) -> None:
    try:
        checked = check_item("x", values)
    except ConfigError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("policy x:")
        return
    for key, (kind, low, high) in SETTINGS.items():
        if key in checked:
            assert isinstance(checked[key], kind) and low <= checked[key] <= high
    assert "bogus" not in checked


def test_write_keeps_the_users_file_and_undo_removes_only_the_item(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('# team settings\n[server]\nurl = "https://g.example"\n', encoding="utf-8")
    write_item(config, "gpu-power-a100", {"power_limit_w": 250, "workload": "train"})
    write_item(config, "cache", {"cache": True})
    assert load_policy(config) == {
        "gpu-power-a100": {"power_limit_w": 250.0, "workload": "train"},
        "cache": {"cache": True},
    }
    with pytest.raises(ConfigError, match="outside"):
        write_item(config, "bad", {"power_limit_w": 5})
    assert remove_item(config, "gpu-power-a100") and not remove_item(config, "gpu-power-a100")
    assert remove_item(config, "cache")
    kept = config.read_text(encoding="utf-8")  # tomlkit may leave a blank line at the end
    assert kept.rstrip("\n") == '# team settings\n[server]\nurl = "https://g.example"'


def test_the_block_names_the_items_that_apply_to_the_run(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    write_item(config, "gpu-power-a100", {"power_limit_w": 250, "workload": "train"})
    write_item(config, "green", {"when": "green", "deadline": "+12h"})
    block = policy_block("train", config)
    assert block is not None and block["items"] == ["gpu-power-a100", "green"]
    assert block["power_limit_w"] == 250.0 and block["source"] == str(config)
    other = policy_block("eval", config)
    assert other is not None and other["items"] == ["green"] and "power_limit_w" not in other
    assert policy_block("eval", tmp_path / "none.toml") is None
    config.write_text("[policy.x]\npower_limit_w = 1\n", encoding="utf-8")
    broken = policy_block("train", config)  # a run is never harmed by a bad policy
    assert broken is not None and broken["status"] == "unreadable"
