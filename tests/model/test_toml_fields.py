"""The strict field readers shared by the fabric, workload and training loaders."""

import numpy as np
import pytest

from fredfab.model.toml_fields import Table, check_choice, check_int, check_number


class MyError(ValueError):
    pass


@pytest.mark.parametrize("v", [True, 3.5, "3", None, float("nan"), [3]])
def test_check_int_rejects_what_is_not_an_integer(v):
    with pytest.raises(MyError, match=r"^x must be an integer >= 1, got "):
        check_int(v, "x", lo=1, error=MyError)


def test_check_int_accepts_integers_and_whole_floats_only_when_asked():
    assert check_int(np.int64(4), "x") == 4
    assert check_int(4.0, "x", whole_float=True) == 4
    with pytest.raises(ValueError, match=r"in \[1, 8\], got 9"):
        check_int(9, "x", lo=1, hi=8)
    with pytest.raises(ValueError, match="got 4.5"):
        check_int(4.5, "x", whole_float=True)


@pytest.mark.parametrize("v", [True, False, "1.5", float("inf"), float("nan"), None])
def test_check_number_rejects_non_numbers(v):
    with pytest.raises(ValueError, match=r"^x must be a finite number > 0, got "):
        check_number(v, "x", lo=0, lo_open=True)


def test_check_number_bounds():
    assert check_number(0, "x", lo=0) == 0.0
    with pytest.raises(ValueError, match=r"in \(0, 1\], got 0"):
        check_number(0, "x", lo=0, hi=1, lo_open=True)


def test_check_choice_compares_types():
    assert check_choice(1, "z", (0, 1, 2)) == 1
    with pytest.raises(ValueError, match="must be one of 0, 1, 2, got True"):
        check_choice(True, "z", (0, 1, 2))


def test_table_names_where_and_rejects_unknown_keys():
    with pytest.raises(MyError, match=r"^f.toml \[t\]: unknown key\(s\) \['c'\]; allowed"):
        Table.read({"a": 1, "c": 2}, "f.toml [t]", {"a", "b"}, MyError)
    t = Table.read({"a": 1}, "f.toml [t]", {"a", "b"}, MyError)
    assert t.integer("b", None) is None and t.integer("b", 7) == 7
    with pytest.raises(MyError, match=r"^f.toml \[t\]: missing 'b'"):
        t.number("b")
    with pytest.raises(MyError, match=r"^f.toml \[t\]: 'a' must be a string, got 1"):
        t.string("a")
