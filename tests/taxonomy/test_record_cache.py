"""The records' parsed-YAML cache (taxonomy/record_cache.py): a copy that is never trusted stale."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from taxonomy import collect
from taxonomy.loader import RECORDS_DIR
from taxonomy.record_cache import RecordCache, cache_file


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_entries_survive_a_save_and_go_stale_when_the_file_changes(tmp_path: Path) -> None:
    record = tmp_path / "a.yaml"
    record.write_text("id: a\n")
    cache = RecordCache(tmp_path)
    cache.put(record, {"id": "a"})
    cache.save({str(record)})
    again = RecordCache(tmp_path)
    assert again.get(record) == {"id": "a"}
    record.write_text("id: ab\n")  # another size: stale whatever the clock says
    assert again.get(record) is None
    record.unlink()
    assert again.get(record) is None


def test_data_json_cannot_hold_is_not_kept_and_a_bad_cache_is_ignored(tmp_path: Path) -> None:
    record = tmp_path / "a.yaml"
    record.write_text("x")
    cache = RecordCache(tmp_path)
    cache.put(record, {"when": dt.date(2024, 1, 1)})
    cache.put(record, {1: "int key"})
    assert cache.get(record) is None and not cache.changed
    cache_file(tmp_path).parent.mkdir(parents=True)
    cache_file(tmp_path).write_text("[not, the, cache")
    assert RecordCache(tmp_path).entries == {}


def test_the_shipped_records_load_the_same_from_the_cache(cache_home: Path) -> None:
    fresh = collect(check_links=False)
    assert cache_file(RECORDS_DIR).is_file()
    cached = collect(check_links=False)
    assert fresh.ok and cached.records == fresh.records


def test_a_cache_that_cannot_be_written_is_skipped(cache_home: Path) -> None:
    cache_home.write_text("a file where the cache folder would go")
    assert collect(check_links=False).ok and cache_home.read_text().startswith("a file")


def test_a_cache_path_that_is_not_a_regular_file_is_never_replaced(tmp_path: Path) -> None:
    import os

    record = tmp_path / "a.yaml"
    record.write_text("id: a\n")
    target = cache_file(tmp_path)
    target.parent.mkdir(parents=True)
    os.mkfifo(target)  # people run as root in containers: a FIFO there stays a FIFO
    cache = RecordCache(tmp_path)
    cache.put(record, {"id": "a"})
    cache.save({str(record)})
    assert target.is_fifo()
