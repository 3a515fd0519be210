"""The leak scan itself can fail: it finds a planted secret in output and ignores unrelated text."""

from tests.leakcheck import ENCODER_SECRET, find_leaks, plant


def test_finds_planted_secret_in_output() -> None:
    leaks = find_leaks([("t1 [stderr]", f"error: bad secret {ENCODER_SECRET} here")], {ENCODER_SECRET})
    assert len(leaks) == 1 and "t1 [stderr]" in leaks[0]
    assert ENCODER_SECRET not in leaks[0]  # the report itself does not repeat the secret


def test_ignores_clean_output_and_short_values() -> None:
    assert find_leaks([("t", "plan: 1 to change (sensitive, changed)")], {ENCODER_SECRET, "abc"}) == []


def test_plant_registers_long_values_only() -> None:
    assert plant("a-long-enough-value") == "a-long-enough-value"
    assert find_leaks([("t", "x a-long-enough-value y")], {"a-long-enough-value"})
