"""Joda pattern formatting/parsing used by the timestamp-based key generator."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from airflow_hoodie.errors import HoodieKeyError, HoodieNotSupportedError
from airflow_hoodie.table.keygen import joda_zone as jz
from airflow_hoodie.table.keygen import timestamp_format as tf


def _ms(*args: int) -> int:
    return int(dt.datetime(*args, tzinfo=dt.timezone.utc).timestamp() * 1000)


def test_format_tokens():
    inst = np.array([_ms(2023, 4, 1, 17, 5, 9) + 120], dtype=np.int64)
    pat = tf.JodaPattern("yyyy yy MM MMM MMMM d dd D HH hh h a mm ss SSS S EEE EEEE e 'lit''s' ww xxxx G Z ZZ")
    assert pat.format(inst)[0].as_py() == (
        "2023 23 04 Apr April 1 01 91 17 05 5 PM 05 09 120 12 Sat Saturday 6 lit's 13 2023 AD +0000 +00:00"
    )


def test_format_across_epoch_and_far_dates_matches_python():
    samples = [0, -1, -86_400_000 * 365 * 300 - 5, _ms(2000, 2, 29, 23, 59, 59), _ms(9999, 12, 31, 23, 59, 59)]
    got = tf.JodaPattern("yyyy-MM-dd HH:mm:ss.SSS").format(np.array(samples, dtype=np.int64)).to_pylist()
    epoch = dt.datetime(1970, 1, 1)
    exp = [(epoch + dt.timedelta(milliseconds=s)).strftime("%Y-%m-%d %H:%M:%S.") + f"{s % 1000:03d}" for s in samples]
    assert got == exp


def test_zones_fixed_and_region():
    inst = np.array([_ms(2023, 7, 1, 12, 0, 0), _ms(2023, 1, 1, 12, 0, 0)], dtype=np.int64)
    ny = jz.java_time_zone("America/New_York")
    assert tf.JodaPattern("HH Z").format(inst, [ny]).to_pylist() == ["08 -0400", "07 -0500"]
    assert jz.java_time_zone("GMT+5:30") == jz.Zone(19_800_000)
    assert jz.java_time_zone("Not/AZone") == jz.UTC  # Java falls back to GMT
    assert jz.java_time_zone("") is None


def test_parse_formats_offsets_and_errors():
    pats = [tf.JodaPattern("yyyy-MM-dd'T'HH:mm:ssZ"), tf.JodaPattern("yyyyMMdd")]
    values = pa.array(["2023-04-01T10:00:00+02:00", "20230402", "2023-04-01T10:00:00Z"])
    inst, zones, idx = tf.parse_to_zones(pats, values, None)
    assert inst.tolist() == [_ms(2023, 4, 1, 8), _ms(2023, 4, 2), _ms(2023, 4, 1, 10)]
    assert [zones[i] for i in idx] == [jz.Zone(7_200_000), jz.UTC, jz.UTC]
    with pytest.raises(HoodieKeyError, match="not a valid date"):
        tf.parse_to_zones([tf.JodaPattern("yyyy-MM-dd")], pa.array(["2023-02-30"]), None)


def test_parse_text_month_and_twelve_hour_clock():
    inst, _, _ = tf.parse_to_zones([tf.JodaPattern("dd MMM yyyy hh:mm a")], pa.array(["01 apr 2023 12:30 AM", "01 April 2023 01:00 PM"]), jz.UTC)
    assert inst.tolist() == [_ms(2023, 4, 1, 0, 30), _ms(2023, 4, 1, 13, 0)]


def test_unsupported_letters_are_reported():
    with pytest.raises(HoodieNotSupportedError):
        tf.JodaPattern("yyyy z")
