"""Every MathQA operation in both semantics, against hand-computed values."""

import math

import pytest

from tprepro.experiments.n2f.mathqa.operations import (
    CONSTANT_LIST, EXTRA_CONSTANTS, OPERATION_LIST, OPERATIONS, OperationFailure, constant_value,
)

from helpers import release_file

FAIL = "fail"
PI = math.pi

# name: (args, faithful, corrected); FAIL = the operation refuses these arguments.
CASES = {
    "add": ((2, 3), 5, 5),
    "subtract": ((2, 3), -1, -1),
    "multiply": ((2, 3), 6, 6),
    "divide": ((1, 0.0005), FAIL, 2000),  # faithful refuses |divisor| <= 0.001
    "log": ((8,), 3, 3),  # base 2 in both
    "sqrt": ((16,), 4, 4),
    "factorial": ((5.7,), 120, FAIL),  # faithful truncates 5.7 -> 5
    "gcd": ((12, 18), 6, 6),
    "lcm": ((4, 6), 12, 12),
    "power": ((2, 10), FAIL, 1024),  # faithful: exponent must be < 10
    "max": ((2, 3), 3, 3),
    "min": ((2, 3), 2, 2),
    "reminder": ((7, 3), 1, 1),
    "negate": ((4,), -4, -4),
    "inverse": ((4,), 0.25, 0.25),
    "round": ((2.4567,), 2.4568, 2),  # faithful: "2.4567" + 0.0001 (3rd decimal digit 6 > 4)
    "floor": ((2.7,), 2, 2),
    "sine": ((0.5,), math.asin(0.5), math.sin(0.5)),
    "cosine": ((0.5,), math.acos(0.5), math.cos(0.5)),
    "tangent": ((1,), PI / 4, math.tan(1)),
    "radians_to_degree": ((PI,), PI * 180, 180),
    "degree_to_radians": ((180,), FAIL, PI),
    "sum_consecutive_number": ((1, 10), 45, 55),  # faithful leaves out the end
    "circle_area": ((2,), 4 * PI, 4 * PI),
    "circumface": ((2,), 4 * PI, 4 * PI),
    "circle_arc": ((90, 2), PI, PI),  # (angle, radius)
    "semi_circle_perimiter": ((2,), 2 * PI + 4, 2 * PI + 4),
    "circle_sector_area": ((2, 90), PI, PI),  # (radius, angle)
    "rectangle_perimeter": ((2, 3), 10, 10),
    "rectangle_area": ((2, 3), 6, 6),
    "square_perimeter": ((3,), 12, 12),
    "square_area": ((3,), 9, 9),
    "trapezium_area": ((2, 3, 5), 8, 8),
    "rhombus_perimeter": ((3,), 12, 12),
    "rhombus_area": ((4, 6), 12, 12),
    "quadrilateral_area": ((4, 1, 2), 6, 6),
    "volume_cone": ((3, 2), 6 * PI, 6 * PI),
    "volume_rectangular_prism": ((2, 3, 4), 24, 24),
    "volume_cube": ((3,), 27, 27),
    "volume_sphere": ((3,), 36 * PI, 36 * PI),
    "volume_cylinder": ((2, 5), 20 * PI, 20 * PI),
    "surface_cone": ((3, 4), PI * 3 * 8, PI * 3 * 8),
    "surface_cylinder": ((2, 3), 20 * PI, 20 * PI),
    "surface_cube": ((2,), 24, 24),
    "surface_rectangular_prism": ((2, 3, 4), 52, 52),
    "surface_sphere": ((1,), 4 * PI, 4 * PI),
    "side_by_diagonal": ((5, 3), 4, 4),
    "cube_edge_by_volume": ((27,), 27 ** 0.33333, 3),
    "diagonal": ((3, 4), 5, 5),
    "square_edge_by_perimeter": ((12,), 3, 3),
    "square_edge_by_area": ((9,), 3, 3),
    "triangle_perimeter": ((3, 4, 5), 12, 12),
    "triangle_area": ((3, 4), 6, 6),
    "triangle_area_three_edges": ((3, 4, 5), 6, 6),
    "union_prob": ((0.5, 0.4, 0.2), 0.7, 0.7),
    "negate_prob": ((0.25,), 0.75, 0.75),
    "choose": ((5, 2), 360, 10),  # faithful: 5!/2! * 3! = 60 * 6
    "combination": ((5, 2), FAIL, 10),
    "permutation": ((5, 2), 20, 20),
    "count_interval": ((10, 3), 8, 8),
    "percent": ((20, 50), 10, 10),
    "p_after_gain": ((10, 200), 220, 220),
    "p_after_loss": ((10, 200), FAIL, 180),
    "price_after_gain": ((10, 200), FAIL, 220),
    "price_after_loss": ((10, 200), 180, 180),
    "from_percent": ((25,), 0.25, 0.25),
    "gain_percent": ((25,), 125, 125),
    "loss_percent": ((25,), 75, 75),
    "negate_percent": ((25,), 75, 75),
    "original_price_before_gain": ((25, 250), 200, 200),
    "original_price_before_loss": ((20, 160), 16000 / 80.00001, 200),
    "to_percent": ((0.25,), 25, 25),
    "speed": ((100, 4), 25, 25),
    "combined_work": ((3, 6), 2, 2),
    "find_work": ((3, 6), 6, 6),
    "speed_ratio_steel_to_stream": ((6, 2), 2, 2),
    "speed_in_still_water": ((6, 2), 4, 4),
    "stream_speed": ((6, 2), 2, 2),
}


def test_table_covers_the_release_operation_list():
    names = [line.strip() for line in (release_file("mathqa/operation_list.txt")).read_text().splitlines() if line.strip()]
    assert tuple(names) == OPERATION_LIST
    assert OPERATION_LIST.count("reminder") == 2
    assert set(CASES) == set(OPERATIONS)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("mode", ["faithful", "corrected"])
def test_operation(name, mode):
    args, faithful, corrected = CASES[name]
    expected = faithful if mode == "faithful" else corrected
    op = OPERATIONS[name]
    assert op.arity == len(args)
    if expected == FAIL:
        with pytest.raises(OperationFailure):
            op.apply([float(a) for a in args], mode)
    else:
        assert op.apply([float(a) for a in args], mode) == pytest.approx(expected, rel=1e-12)


def test_quirks_differ_between_modes():
    differing = {n for n, (_, f, c) in CASES.items() if f != c}
    assert {"sine", "cosine", "tangent", "choose", "power", "divide", "round", "sum_consecutive_number",
            "radians_to_degree", "degree_to_radians", "combination"} <= differing


def test_faithful_guards_and_bounds():
    fail = lambda name: pytest.raises(OperationFailure, match=name)  # noqa: E731
    with fail("gcd"):
        OPERATIONS["gcd"].apply([7.0, 5.0], "faithful")  # a gcd of 1 counts as failure
    assert OPERATIONS["gcd"].apply([7.0, 5.0], "corrected") == 1
    with fail("factorial"):
        OPERATIONS["factorial"].apply([150.0], "faithful")
    with fail("power"):
        OPERATIONS["power"].apply([1e300, 9.0], "faithful")  # overflow, not a crash
    with fail("power"):
        OPERATIONS["power"].apply([10.0, 400.0], "corrected")
    with fail("choose"):
        OPERATIONS["choose"].apply([5.0, 0.0], "faithful")
    assert OPERATIONS["choose"].apply([5.0, 0.0], "corrected") == 1
    # sum of a huge range is a closed form, not a loop
    assert OPERATIONS["sum_consecutive_number"].apply([0.0, 1e12], "faithful") == (1e12 - 1) * 1e12 / 2
    with fail("sine"):
        OPERATIONS["sine"].apply([2.0], "faithful")


def test_constants():
    assert constant_value("const_pi", "faithful") == 3.1415
    assert constant_value("const_pi", "corrected") == math.pi
    assert constant_value("const_deg_to_rad", "faithful") == 0.0055
    assert constant_value("const_deg_to_rad", "corrected") == pytest.approx(math.pi / 180)
    for mode in ("faithful", "corrected"):
        assert constant_value("const_0_2778", mode) == 0.2778
        assert constant_value("const_3_6", mode) == 3.6
        assert constant_value("const_100.0", mode) == 100
        assert constant_value("const_52", mode) == 52
    assert constant_value("const_2_54", "corrected") == 2.54
    assert constant_value("const_2_54", "faithful") == 254  # float("2_54"): "_" is a digit separator
    for name in CONSTANT_LIST + EXTRA_CONSTANTS:
        assert constant_value(name, "corrected") > 0
    with pytest.raises(OperationFailure):
        constant_value("const_x", "corrected")


def test_constant_list_matches_release():
    lines = (release_file("mathqa/constant_list.txt")).read_text().splitlines()
    release = [line.strip().lower().replace(".", "_") for line in lines if line.strip()]
    assert release == list(CONSTANT_LIST)
