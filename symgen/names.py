"""The names of a model and of what is in it: the error every model check raises, and the rules a
name obeys (it becomes part of a C identifier, a file name and a column header).
"""
from __future__ import annotations

import re

__all__ = ["ModelError", "c_name", "check_name", "refuse_text", "check_model_name", "VELOCITY_SUFFIX",
           "ACCELERATION_SUFFIX", "MAX_MODEL_NAME", "MAX_NAME", "row_names", "POWER_PREFIX",
           "WORK_PREFIX", "power_columns", "work_names", "joint_of"]

VELOCITY_SUFFIX = "_dot"
ACCELERATION_SUFFIX = "_ddot"
#: An output named ``power:<element>`` is the power of a non-conservative element (a motor, a
#: damper, an applied force); :func:`symgen.simulate` integrates it over every step into the
#: result's output ``work:<element>`` (docs/energy-balance.md).
POWER_PREFIX = "power:"
WORK_PREFIX = "work:"
#: The prefix of a joint reaction's column among a Result's outputs, main.c's CSV and an FMU's
#: outputs (``reaction:pin.Fx``; docs/reactions.md).
REACTION_PREFIX = "reaction:"

# fullmatch, never ``$``: ``$`` also matches before a trailing newline
_C_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:]*")
#: Longest model name (it prefixes every C symbol and names the cached module file) and longest
#: coordinate, parameter or output name (each becomes part of a C macro name).
MAX_MODEL_NAME = 64
MAX_NAME = 128
_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if "
    "inline int long register restrict return short signed sizeof static struct switch typedef "
    "union unsigned void volatile while _Bool _Complex _Imaginary".split()
)


class ModelError(ValueError):
    """A model that cannot be turned into a simulation; the message names the problem."""


def refuse_text(value, what: str) -> None:
    """A ``ModelError`` when ``value`` (an expression, or nested lists or an array of them) is or
    holds a string: SymPy's ``sympify`` would evaluate the string as Python code (issue 38), so
    a Model takes expressions built from symbols only."""
    if isinstance(value, (str, bytes)):
        raise ModelError(f"{what}: the string {str(value)[:80]!r} is not a sympy expression; a "
                         "Model takes no text (sympify would run it as Python): build it from "
                         "symbols, e.g. m * g * sp.cos(th), or call sp.parse_expr on text you trust")
    if isinstance(value, (list, tuple)) or (type(value).__name__ == "ndarray"
                                            and getattr(value.dtype, "kind", "") in "OSU"):
        for v in value:
            refuse_text(v, what)


def c_name(name: str) -> str:
    """The C identifier used for a coordinate or output name (dots and colons become
    underscores)."""
    return name.replace(".", "_").replace(":", "_")


def power_columns(output_names) -> list[int]:
    """The indices of the ``power:<element>`` outputs among ``output_names``."""
    return [i for i, s in enumerate(output_names) if s.startswith(POWER_PREFIX)]


def work_names(output_names) -> list[str]:
    """``work:<element>`` for each ``power:<element>`` output, in the same order."""
    return [WORK_PREFIX + s[len(POWER_PREFIX):] for s in output_names
            if s.startswith(POWER_PREFIX)]


_RESERVED = re.compile(r"^(t|lambda_\d+)$")


def _check_not_reserved(name: str, what: str) -> None:
    """``t`` is time and ``lambda_<i>`` the multipliers of the derived terms."""
    if _RESERVED.match(name) or name.endswith(ACCELERATION_SUFFIX):
        raise ModelError(f"{what} name {name!r} is reserved (t is time, lambda_<i> the Lagrange "
                         f"multipliers, '<coordinate>{ACCELERATION_SUFFIX}' the accelerations)")


def check_name(name, what: str, max_len: int = MAX_NAME) -> None:
    """A name must be text without leading/trailing white space or control characters (a newline
    passes many patterns and breaks the build later) and at most ``max_len`` characters long."""
    if not isinstance(name, str):
        raise ModelError(f"{what} name {name!r} is not a string")
    if name != name.strip() or any(ch.isspace() and ch != " " or not ch.isprintable()
                                   for ch in name):
        raise ModelError(f"{what} name {name!r} has leading/trailing white space or control "
                         "characters")
    if len(name) > max_len:
        raise ModelError(f"{what} name {name[:20]!r}… is {len(name)} characters long; at most "
                         f"{max_len} are allowed")


def _check_allowed_name(name, what: str) -> None:
    check_name(name, what)
    if not _NAME.fullmatch(name):
        raise ModelError(f"{what} name {name!r} is not allowed (letters, digits, '_' and '.', "
                         "not starting with a digit)")


def _check_output_name(name, what: str = "output") -> None:
    """Output names are as other names, and may hold ':' (``power:<element>``); ``work:…`` is
    what simulate makes of a ``power:…`` output, and ``power:`` needs an element name."""
    check_name(name, what)
    if not _OUTPUT_NAME.fullmatch(name):
        raise ModelError(f"{what} name {name!r} is not allowed (letters, digits, '_', '.' and ':', "
                         "not starting with a digit)")
    if name.startswith(WORK_PREFIX):
        raise ModelError(f"{what} name {name!r} is reserved: simulate records the work of an "
                         f"output '{POWER_PREFIX}<element>' as '{WORK_PREFIX}<element>'")
    if name == POWER_PREFIX:
        raise ModelError(f"{what} name {name!r} needs an element name: '{POWER_PREFIX}<element>'")
    if name.startswith(REACTION_PREFIX):
        raise ModelError(f"{what} name {name!r} is reserved: a result's joint reactions are the "
                         f"columns '{REACTION_PREFIX}<joint>.<component>' (rename the output)")


def _check_c_identifier(name: str, what: str, max_len: int = MAX_NAME) -> None:
    check_name(name, what, max_len)
    if not _C_IDENT.fullmatch(name) or name in _C_KEYWORDS:
        raise ModelError(
            f"{what} name {name!r} cannot become a C identifier "
            "(use letters, digits and '_', not starting with a digit, not a C keyword)"
        )


def joint_of(row_name: str) -> str:
    """The joint a constraint row belongs to: ``pin.x`` → ``pin``; ``q[3]`` → ``q[3]``."""
    head, dot, _ = row_name.rpartition(".")
    return head if dot and head else row_name


def row_names(names, m: int) -> tuple:
    """The constraint rows' names: given (m distinct non-empty strings) or q[i]."""
    if names is None:
        return tuple(f"q[{i}]" for i in range(m))
    names = tuple(str(v) for v in names)
    if len(names) != m:
        raise ModelError(f"constraint_names has {len(names)} names for {m} constraint rows")
    if any(not v.strip() for v in names):
        raise ModelError("constraint_names: a row name is empty")
    seen = set()
    for v in names:
        if v in seen:
            raise ModelError(f"constraint_names: row name {v!r} is given twice")
        seen.add(v)
    return names


#: Model names that would collide with the files ``symgen generate`` and the build write next to
#: the kernels' ``<model>.c``/``.h``: the driver ``main.c`` and the runtime (``symgen_*``, and
#: ``sg_*`` for the runtime's own prefix).  Compared in lower case (case-insensitive file systems).
_FILE_NAMES = ("main",)
_FILE_PREFIXES = ("symgen_", "sg_")


def check_model_name(name) -> None:
    """A model name is a C identifier of at most MAX_MODEL_NAME characters that names no file
    of the generated code besides its own."""
    _check_c_identifier(name, "model", MAX_MODEL_NAME)
    low = name.lower()
    if low in _FILE_NAMES or low.startswith(_FILE_PREFIXES):
        raise ModelError(f"model name {name!r} clashes with the generated files (main.c, the "
                         "runtime's symgen_*.c and sg_*.c): choose another name (not 'main', not "
                         "starting with 'symgen_' or 'sg_')")
