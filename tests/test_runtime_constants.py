"""The one table of codes and constants the Python steppers and the C runtime share (issue 37.1):
every entry read back from a compiled runtime (``lib.SG_*`` through cffi) equals the table's
value, no part of the runtime defines one of them again, the Python steppers take theirs from
the table, and the compiled stepper matches failure kinds by name, not by number."""
import ast
import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import symgen
from symgen import runtime_constants as rc
from symgen.codegen.render import RUNTIME_RENDERED, runtime_sources, template_dir
from symgen.loader import load_model

WARM = ("stiff_pendulum",)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def lib():
    return symgen.build(load_model("stiff_pendulum")).lib


def test_every_code_of_the_table_is_the_compiled_runtimes(lib):
    entries = [(name, value) for _, group in rc.ENUMS for name, value, _ in group]
    assert len(entries) == len(rc.CODES)                   # (no C name twice)
    differ = [(name, value, getattr(lib, name)) for name, value in entries
              if getattr(lib, name) != value]
    assert not differ, f"the compiled runtime disagrees with symgen.runtime_constants: {differ}"


def test_every_number_of_the_table_is_the_compiled_runtimes(lib):
    differ = [(name, value, getattr(lib, name)) for name, value, _ in rc.DOUBLES
              if not (isinstance(getattr(lib, name), float) and getattr(lib, name) == value)]
    assert not differ, f"the compiled runtime disagrees with symgen.runtime_constants: {differ}"
    assert len({name for name, _, _ in rc.DOUBLES}) == len(rc.DOUBLES)


def test_the_error_controls_defaults_and_first_step_are_the_python_ones(lib):
    """What the table does not hold, the C computes as Python does: sg_control_default is
    SimulationSettings' rtol and atol, sg_initial_step control.initial_step (the fraction of the
    period, of the span, the stability cut) on the same inputs."""
    import math

    from symgen.settings import SimulationSettings
    from symgen.steppers.control import initial_step
    from symgen.schemes import parse_scheme

    c, st = lib.sg_control_default(), SimulationSettings()
    assert (c.rtol, c.atol) == (st.rtol, st.atol)
    for name in ("trapezoidal", "fox-goodwin", "linear-acceleration"):
        sch = parse_scheme(name)
        for omega, span, rtol, cap in ((10.0, 5.0, 1e-6, 1.0), (1e4, 1.0, 1e-9, 0.1),
                                       (math.nan, 2.0, 1e-4, 1.0), (0.0, 2.0, 1e-6, 1e-5),
                                       (300.0, 10.0, 1e-3, 10.0), (300.0, 10.0, 0.1, 10.0)):
            h_c = lib.sg_initial_step(sch.gamma, sch.beta, omega, span, rtol, cap)
            h_py = initial_step(sch, omega, span, rtol, cap)
            assert h_c == pytest.approx(h_py, rel=1e-14, abs=0), (name, omega, span, rtol)


def test_no_part_of_the_runtime_defines_a_shared_name_again():
    # the runtime's copied files name the table's entries but never define one (a `#define`, an
    # enum entry or a const of its own would let the C drift from the table again)
    names = [*rc.CODES, *(name for name, _, _ in rc.DOUBLES)]
    copied = {k: v for k, v in runtime_sources().items() if k not in RUNTIME_RENDERED}
    defined = [(fname, name) for fname, text in copied.items() for name in names
               if re.search(rf"(#define\s+{name}\b|\b{name}\s*=[^=])", text)]
    assert not defined, f"defined outside sg_constants.h: {defined}"
    # nor writes one of its values as a literal (the tries' floor 64 eps was one: CTL_H_ROUNDOFF)
    literal = [fname for fname, text in copied.items() if re.search(r"64(\.0)?\s*\*\s*SG_EPS", text)]
    assert not literal, f"64 * SG_EPS written out (SG_CTL_H_ROUNDOFF) in {literal}"
    assert not list((template_dir() / "runtime").glob("sg_constants.h")), (
        "sg_constants.h is rendered from the table, not kept in templates/runtime/")
    header = runtime_sources()["sg_constants.h"]
    for name, value, _ in rc.DOUBLES:                       # what the compiler reads, exactly
        assert re.search(rf"static const double {name} = {re.escape(repr(float(value)))};", header)


def test_the_python_steppers_take_the_tables_values():
    from symgen.adaptive import STABILITY_FRACTION
    from symgen.steppers import base, chart, control, nullspace, sparse

    F = control.Flag
    assert [F.REJECTED_ERROR, F.REJECTED_NEWTON, F.FLOOR, F.STABILITY, F.SUBSTEPPED,
            F.NO_ESTIMATE] == [rc.CODES[f"SG_FLAG_{n}"] for n in (
                "REJECTED_ERROR", "REJECTED_NEWTON", "FLOOR", "STABILITY", "SUBSTEPPED",
                "NO_ESTIMATE")]
    C = control.StepController
    assert (C.SAFETY, C.GROW_MAX, C.SHRINK_MIN, C.NEWTON_SHRINK, C.ORDER) == (
        rc.CTL_SAFETY, rc.CTL_GROW_MAX, rc.CTL_SHRINK_MIN, rc.CTL_NEWTON_SHRINK, rc.CTL_ORDER)
    assert (control.HISTORY_DEGREE, control.HHT_DEGREE, control.ROUNDOFF) == (
        rc.CODES["SG_HIST_DEGREE"], rc.CODES["SG_HHT_DEGREE"], rc.CTL_ROUNDOFF)
    sub = inspect.signature(control.substeps).parameters
    assert (sub["rtol"].default, sub["atol"].default, sub["first"].default) == (
        rc.SUBSTEP_RTOL, rc.SUBSTEP_ATOL, rc.SUBSTEP_FIRST)
    assert (nullspace.LANDING_RATIO, nullspace.LANDING_DROP, nullspace.CROSS_FIRST) == (
        rc.LANDING_RATIO, rc.LANDING_DROP, rc.CROSS_FIRST)
    # the crossing's other numbers: its sub-steps' floor on h (the error control's too) and its
    # row's projection (ROW_TOL, then CONSISTENT_TOL: consistent_state's default, below)
    from symgen import adaptive, eval_rows
    for t in (0.0, -0.5, 3.0, 1e6):
        assert control.round_off_step(t) == adaptive._round_off(t) == rc.CTL_H_ROUNDOFF * max(
            1.0, abs(t)) == 64 * np.finfo(float).eps * max(1.0, abs(t))
    assert eval_rows.ROW_TOL == rc.ROW_TOL
    assert chart.T_SINGULAR == rc.T_SINGULAR and base.FLOOR_TIMES_KEPT == rc.TIMES_KEPT
    assert (sparse.CONFIRM, sparse.VOLUME_DROP, sparse.SIGMA_STEPS_NEW) == (
        rc.SPARSE_CONFIRM, rc.SPARSE_VOLUME_DROP, rc.SPARSE_SIGMA_STEPS_NEW)
    assert STABILITY_FRACTION == rc.STABILITY_FRACTION
    cs = inspect.signature(symgen.consistent_state).parameters
    assert (cs["tol"].default, cs["max_iter"].default) == (rc.CONSISTENT_TOL,
                                                            rc.CONSISTENT_MAX_ITER)
    # main.c's and the FMU's literals are the table's C names
    from symgen.codegen import render
    assert (render._CHART_C, render._METRIC_C, render._FACTORIZATION_C) == (
        rc.C_CHARTS, rc.C_METRICS, rc.C_FACTORIZATIONS)


def test_the_compiled_stepper_matches_failure_kinds_by_name():
    # no `kind == 14`: every comparison with a failure kind, and every table keyed by one, names
    # the runtime's constant (lib.SG_FAIL_*)
    tree = ast.parse((ROOT / "symgen" / "steppers" / "compiled.py").read_text())

    def is_kind(node):
        return (isinstance(node, ast.Attribute) and node.attr == "kind"
                or isinstance(node, ast.Name) and node.id == "kind")

    def numbers(node):
        return [n.value for n in ast.walk(node)
                if isinstance(n, ast.Constant) and type(n.value) is int]
    raw = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(map(is_kind, [node.left, *node.comparators])):
            raw += [(node.lineno, v) for c in [node.left, *node.comparators] for v in numbers(c)]
        if isinstance(node, ast.Dict):
            raw += [(node.lineno, k.value) for k in node.keys
                    if isinstance(k, ast.Constant) and type(k.value) is int]
    assert not raw, f"raw failure-kind numbers in steppers/compiled.py (line, value): {raw}"


def test_every_failure_kind_has_the_compiled_steppers_words():
    """_words names every kind a step can fail with (the table's; the unknown-kind fallback is
    for none of them)."""
    from symgen.kernels import Kernels  # noqa: F401  (the stepper needs compiled kernels)
    from symgen.steppers import make_stepper
    from symgen.steppers.compiled import CompiledStepper
    from symgen.schemes import parse_scheme

    k = symgen.build(load_model("stiff_pendulum"))
    st = CompiledStepper(k, "nullspace", parse_scheme("trapezoidal"), 0.01, tol=1e-12,
                         constraint_tol=1e-8, max_iter=25, rank_tol=1e-10, estimate=False,
                         divergence_bound=1e8,
                         fallback=make_stepper("nullspace", k, "trapezoidal", 0.01))
    st._bound = 1e8
    fail = st.ffi.new("sg_failure *")
    for name, value in rc.CODES.items():
        if not name.startswith("SG_FAIL_") or name in ("SG_FAIL_NONE", "SG_FAIL_KINDS",
                                                       "SG_FAIL_NO_STEP", "SG_FAIL_DENSE_ROW"):
            continue
        fail.kind = value
        assert "unknown failure kind" not in st._words(fail)[1], name
    fail.kind = rc.CODES["SG_FAIL_KINDS"]
    assert "unknown failure kind" in st._words(fail)[1]
