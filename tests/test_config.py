"""Settings are checked when they load: a nonsense value names its key, its value and the range."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import run_cli

from ragraf.config import RANGES, load_settings
from ragraf.errors import ConfigError


@pytest.mark.parametrize(
    ("key", "value"),
    [("keep_revisions", "-1"), ("chunk_max_chars", "0"), ("budget_bytes", "-5"), ("parse_timeout_s", "nan"),
     ("embed_timeout_s", "inf"), ("embed_batch_size", "0"), ("keep_revisions", "1.5")],
)  # fmt: skip
def test_a_setting_outside_its_range_is_refused_naming_key_value_and_range(
    tmp_path: Path, key: str, value: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, env={f"RAGRAF_{key.upper()}": value})
    message = caught.value.message
    assert f"RAGRAF_{key.upper()}" in message and key in message
    assert value in message
    if "." not in value:
        low, high = RANGES[key]
        assert "allowed range" in message and f"{low:g}" in message.replace(",", "")


def test_a_range_error_in_ragraf_toml_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "ragraf.toml").write_text("keep_revisions = 0\n")
    with pytest.raises(
        ConfigError, match=r"ragraf\.toml: keep_revisions = 0 is outside the allowed range 1 to"
    ):
        load_settings(tmp_path, env={})


def test_chunk_min_chars_above_chunk_max_chars_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="chunk_min_chars = 2000 is larger than chunk_max_chars = 1500"):
        load_settings(tmp_path, env={"RAGRAF_CHUNK_MIN_CHARS": "2000"})


def test_values_at_the_edges_of_their_ranges_load(tmp_path: Path) -> None:
    env = {f"RAGRAF_{key.upper()}": str(high) for key, (_low, high) in RANGES.items()}
    env["RAGRAF_CHUNK_MIN_CHARS"] = "0"
    settings = load_settings(tmp_path, env=env)
    assert settings.keep_revisions == RANGES["keep_revisions"][1]
    assert load_settings(tmp_path, env={"RAGRAF_LOCK_TIMEOUT_S": "0"}).lock_timeout_s == 0


def test_the_cli_says_what_is_wrong_with_a_setting_and_exits_1(tmp_path: Path) -> None:
    out = run_cli("status", "--root", str(tmp_path), "--json", env={"RAGRAF_BUDGET_BYTES": "-5"})
    assert out.returncode == 1
    assert "Traceback" not in out.stderr
    assert "budget_bytes = -5 is outside the allowed range 512" in out.stdout + out.stderr
