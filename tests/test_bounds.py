"""bounds.py: the one table of physical bounds, and the checks every entry point calls."""

import math

import numpy as np
import pytest

import llm_roofline as lr
from llm_roofline.bounds import BOUNDS, check_count, check_dpi, check_figure_pixels, check_grid_points, check_range


def test_table_values():
    # the documented bounds (README "Errors and bounds"): 2**24 = 16,777,216; 2**31 = 2,147,483,648
    assert BOUNDS["batch"].max_value == 16_777_216
    assert BOUNDS["prompt_len"].max_value == BOUNDS["gen_len"].max_value == 2_147_483_648
    assert {BOUNDS[k].max_value for k in ("tp", "pp", "ep", "dp")} == {65_536}


@pytest.mark.parametrize("value,expected", [
    (8, 8), (8.0, 8), (np.int64(8), 8), (np.float32(8.0), 8), (1, 1), (16_777_216, 16_777_216),
])
def test_check_count_accepts_integral_scalars(value, expected):
    got = check_count("batch", value)
    assert got == expected and type(got) is int


def test_check_count_arrays_become_float64():
    got = check_count("batch", [1, 8, 64])
    assert got.dtype == np.float64 and got.tolist() == [1.0, 8.0, 64.0]
    assert check_count("batch", np.array([[2], [4]], dtype=np.int32)).shape == (2, 1)


@pytest.mark.parametrize("value,shown", [
    (0, "got 0"), (-1, "got -1"), (1.5, "got 1.5"), (math.nan, "got nan"), (math.inf, "got inf"),
    (True, "got True"), ("8", "got 8"), (None, "got None"), (16_777_217, "got 16777217"),  # 2**24 + 1
    (2**63, "got 9223372036854775808"), (10**400, "got 1000000000000000"), (1e300, "got 1e+300"),
    ([1, 0], "got 0.0"), ([1, math.nan], "got nan"), ([], "empty"), ([True], "got [True]"), (["a"], "got ['a']"),
    ([[1], [2, 3]], "flat list"), (np.array([2**40]), "got 1099511627776.0"), (complex(1, 0), "got (1+0j)"),
])
def test_check_count_rejects_with_name_value_and_bound(value, shown):
    with pytest.raises(lr.ScenarioError, match=r"batch must be an integer in \[1, 16,777,216\]") as e:
        check_count("batch", value)
    assert shown in str(e.value)


def test_check_count_explicit_bound_and_minimum():
    assert check_count("--top", 0, 10, min_value=0) == 0
    with pytest.raises(lr.ScenarioError, match=r"--top must be an integer in \[0, 10\], got -1"):
        check_count("--top", -1, 10, min_value=0)


def test_check_range():
    assert check_range("reserve", 0.5, 0, 1) == 0.5
    for bad in (math.nan, -0.1, 1.1, "0.5", 10**400, True):
        with pytest.raises(lr.ScenarioError, match=r"reserve must be a number in \[0, 1\]"):
            check_range("reserve", bad, 0, 1)
    with pytest.raises(lr.ScenarioError, match=r"\(0, 1\]"):
        check_range("x", 0.0, 0, 1, lo_open=True)


def test_grid_points():
    # 1000 x 100 x 20 = 2,000,000 points: the bound itself passes; one more axis value (1000 x 100 x 21) fails
    assert check_grid_points({"batch": 1000, "prompt_len": 100, "gen_len": 20}) == 2_000_000
    with pytest.raises(lr.ScenarioError, match="2,100,000 grid points is above the bound of 2,000,000"):
        check_grid_points({"batch": 1000, "prompt_len": 100, "gen_len": 21})
    with pytest.raises(lr.ScenarioError, match="axis tp is an empty list"):
        check_grid_points({"batch": 1, "tp": 0})


def test_dpi_and_figure_pixels():
    assert check_dpi(30) == 30 and check_dpi(600) == 600
    for bad in (0, 29, 601, 100_000):
        with pytest.raises(lr.ScenarioError, match=r"dpi must be an integer in \[30, 600\]"):
            check_dpi(bad)
    check_figure_pixels(12, 4.6, 600)  # 7,200 x 2,760 = 19.9 M pixels
    with pytest.raises(lr.ScenarioError, match="144,000,000 pixels, above the bound of 100,000,000"):
        check_figure_pixels(200, 2, 600)  # (200 * 600) x (2 * 600) = 120,000 x 1,200 = 144 M pixels


def test_api_entry_points_use_the_bounds():
    with pytest.raises(lr.ScenarioError, match=r"prompt_len must be an integer in \[1, 2,147,483,648\], got inf"):
        lr.estimate("meta-llama/Llama-3.2-1B", "h100", prompt_len=math.inf)
    with pytest.raises(lr.ScenarioError, match=r"batch must be an integer in \[1, 16,777,216\]"):
        lr.estimate("meta-llama/Llama-3.2-1B", "h100", batch=2**63)
    with pytest.raises(lr.ScenarioError, match=r"tp must be an integer in \[1, 65,536\], got 131072"):
        lr.estimate("meta-llama/Llama-3.2-1B", "h100", tp=2**17)
    with pytest.raises(lr.ScenarioError, match=r"gen_len must be an integer"):
        lr.sweep("meta-llama/Llama-3.2-1B", "h100", gen_len=[1, "x"])
    with pytest.raises(lr.ScenarioError, match="grid points is above the bound"):
        lr.sweep("meta-llama/Llama-3.2-1B", "h100", batch=list(range(1, 1001)), prompt_len=list(range(1, 2002)))  # 2,001,000
    with pytest.raises(lr.ShardingError, match="must be a positive integer <= 65,536"):
        lr.Sharding(tp=2**17)


def test_step_and_serve_arguments_are_checked():
    # a serving step takes mean (fractional) batches, but never NaN, negatives, strings or more context than
    # the bound; serve's grid arguments must be numbers
    from llm_roofline.estimate import evaluate_step

    step = dict(decode_kv_len=10)
    assert float(evaluate_step("meta-llama/Llama-3.2-1B", "h100", decode_batch=2.5, **step).times.t_s) > 0
    for bad, message in ((math.nan, "decode_batch must be a number in \\[0, 16,777,216\\], got nan"),
                         ("x", "decode_batch must be a number in"), (-1, "got -1")):
        with pytest.raises(lr.ScenarioError, match=message):
            evaluate_step("meta-llama/Llama-3.2-1B", "h100", decode_batch=bad, **step)
    with pytest.raises(lr.ScenarioError, match="chunk_kv_len .* must be at least chunk_tokens"):
        evaluate_step("meta-llama/Llama-3.2-1B", "h100", decode_batch=1, decode_kv_len=10, chunk_tokens=64,
                      chunk_kv_len=32)
    with pytest.raises(lr.ScenarioError, match="qps must be a number or a list of numbers, got 'x'"):
        lr.serve("meta-llama/Llama-3.2-1B", "h100", prompt_len=128, gen_len=8, qps="x")


@pytest.mark.parametrize("call", [
    lambda: lr.serve("meta-llama/Llama-3.2-1B", "h100", concurrency=10 ** 5000),
    lambda: lr.serve("meta-llama/Llama-3.2-1B", "h100", qps=[1, 10 ** 5000]),
    lambda: lr.estimate("meta-llama/Llama-3.2-1B", "h100", batch=10 ** 5000),
])
def test_an_integer_too_long_to_print_is_a_one_line_error(call):
    # repr() of an integer of more than 4,300 digits raises ValueError; serve echoed it that way (a traceback)
    with pytest.raises(lr.RooflineError, match="an integer of about 5,000 digits|a list holding an integer"):
        call()
