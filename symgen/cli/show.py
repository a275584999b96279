"""The ``symgen show`` command: a model's coordinates, parameters, outputs (with units), inputs and
settings with M (one block a body where it splits so), f, q; or one derived term (Unicode or
LaTeX, large matrices entry by entry).

    symgen show MODEL [--term NAME] [--latex] [--per-body] [--param NAME=VALUE]...
"""
from __future__ import annotations

from .terminal import EXIT_OK, UsageError, _load, _with_defaults, parse_params

__all__ = ["add_parser", "cmd_show"]


#: A matrix wider than this, or with more entries, is listed entry by entry (2-D pretty printing
#: of a 243 × 243 matrix takes minutes); the summary of `show` prints only matrices within
#: SUMMARY_ROWS × MAX_COLS and gives the size and non-zero count of the others.
MAX_COLS, MAX_ENTRIES, SUMMARY_ROWS = 12, 300, 20


def width() -> int:
    """The columns lines are wrapped at: the terminal's (or $COLUMNS), 100 when not a terminal;
    a matrix wider than that is listed entry by entry, an entry or a list wider wrapped."""
    import shutil

    return max(40, shutil.get_terminal_size((100, 24)).columns)


def _wrapped(text: str, indent: str = "    ") -> str:
    """A line of ``name: a, b, …`` text wrapped at :func:`width` (continuation lines indented)."""
    import textwrap

    nb = text.replace(" [", "\xa0[").replace(" = ", "\xa0=\xa0")    # a unit, a value stay
    return textwrap.fill(nb, width(), subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False).replace("\xa0", " ")


def _nonzeros(A):
    return [(i, j, A[i, j]) for i in range(A.rows) for j in range(A.cols) if A[i, j] != 0]


def _size_line(name, A, model_spec) -> str:
    nnz = len(_nonzeros(A))
    return (f"{name}  {A.rows}×{A.cols}, {nnz} non-zero entr{'y' if nnz == 1 else 'ies'}  "
            f"(symgen show {model_spec} --term {name})")


def _print_term(name, A, latex: bool, model=None, lam=()) -> None:
    """A small matrix in 2-D; a large one as ``name[i, j] = expr``, one non-zero entry a line
    (display names θ_body and shortest floats, see ``symgen.derived.show``)."""
    from ..derived import show

    cols = width()
    if A.cols <= MAX_COLS and A.rows * A.cols <= MAX_ENTRIES:
        text = show(A, model, latex, lam)
        if latex or max(map(len, text.splitlines() or [""])) <= cols:
            print(text)
            return
    entries = _nonzeros(A)
    wide = "" if A.cols > MAX_COLS or A.rows * A.cols > MAX_ENTRIES else \
        f"; as a matrix wider than {cols} columns"
    print(f"{'% ' if latex else ''}{A.rows}×{A.cols}, {len(entries)} non-zero entries (the others "
          f"are 0{wide}):")
    for i, j, e in entries:
        if latex:
            print(f"{name}_{{{i},{j}}} = {show(e, model, True, lam)}")
            continue
        text = show(e, model, False, lam, width=cols - 4)
        if "\n" in text or len(f"{name}[{i}, {j}] = {text}") > cols:
            print(f"{name}[{i}, {j}] =")
            print("\n".join("    " + ln for ln in text.splitlines()))
        else:
            print(f"{name}[{i}, {j}] = {text}")


def cmd_show(args) -> int:
    from ..derived import TERMS, show_blocks, splits_by_body

    mdl, numeric = _load(args.model, parse_params(args.param))
    mdl = _with_defaults(mdl, numeric)
    # with --latex every line that is not LaTeX is a LaTeX comment: the output pastes as it is
    def say(text="", indent=" " * 15):
        for line in (_wrapped(text, indent) if indent else text).splitlines() or [""]:
            print(f"% {line}" if args.latex and line else line)
    if args.term is None:
        import sympy as sp

        say(f"model {mdl.name}: n = {mdl.n} coordinates, m = {mdl.m} constraints", indent="")
        if mdl.description:
            say("  " + mdl.description.strip().splitlines()[0], indent="")
        from ..units import label

        units = {kind: getattr(mdl, "units", {}).get(kind, {}) for kind in
                 ("coords", "params", "outputs")}
        say("  coordinates: " + ", ".join(label(c, units["coords"].get(c, ""))
                                          for c in mdl.coord_names))
        say("  parameters:  " + (", ".join(f"{k} = {_value(v)}" + (f" {units['params'][k]}"
                                                               if k in units["params"] else "")
                                           for k, v in zip(mdl.param_names, mdl.param_values))
                                 or "none"))
        say("  outputs:     " + (", ".join(label(o, units["outputs"].get(o, ""))
                                           for o in mdl.output_names) or "none"))
        if mdl.inputs:
            say("  inputs:      " + ", ".join(mdl.input_names)
                + "  (values at run time: simulate --input NAME=NUMBER|FILE.csv)")
        say("  settings:    " + (", ".join(f"{k} = {v}" for k, v in mdl.settings.items())
                                   or "none"))
        say(f"  terms:       {', '.join(TERMS)}  (symgen show MODEL --term NAME)")
        # M, f, q are the model's own (no derivation needed); large ones by size only
        for name in (["M", "f", "q"] if mdl.m else ["M", "f"]):
            A = sp.ImmutableMatrix(getattr(mdl, name))
            say()
            if name == "M" and (args.per_body or splits_by_body(mdl, SUMMARY_ROWS, MAX_COLS)):
                print(show_blocks(mdl, args.latex, width=width()))
                continue
            if A.rows > SUMMARY_ROWS or A.cols > MAX_COLS:
                say(_size_line(name, A, args.model), indent="")
                continue
            say(f"{name}  ({_labels(mdl, name)})")
            _print_term(name, A, args.latex, mdl)
        return EXIT_OK
    from ..derived import derive

    name = args.term
    if args.per_body:
        if name != "M":
            raise UsageError(f"--per-body prints M only, not {name} (symgen show MODEL --term M "
                             "--per-body)")
        print(show_blocks(mdl, args.latex, width=width()))
        return EXIT_OK
    d = derive(mdl)
    say(f"{name}  ({d.labels(name)})")
    _print_term(name, d.term(name), args.latex, mdl, d.lam)
    return EXIT_OK


def _value(v) -> str:
    """A parameter's value as show prints numbers (symgen.derived.shortest_floats: the shortest
    round-trip decimal, or the fraction, multiple of π or root it is; an integer without ".0")."""
    import sympy as sp

    from ..derived import shortest_floats

    d = float(v)
    if d.is_integer() and abs(d) < 1e15:
        return str(int(d))
    return sp.pretty(shortest_floats(sp.Float(d)), use_unicode=True)


def _labels(mdl, name) -> str:
    coords = ", ".join(mdl.coord_names)
    return {"M": f"rows and columns: {coords}", "f": f"rows: {coords}"}.get(
        name, f"rows: {', '.join(mdl.constraint_names)}")


def _terms():
    from ..derived import TERMS
    return list(TERMS)


def add_parser(sub, model_help: str, param_help: str) -> None:
    """The ``show`` subcommand's parser."""
    s = sub.add_parser("show", help="print derived terms")
    s.add_argument("model", metavar="MODEL", help=model_help)
    s.add_argument("--term", choices=_terms(), help="the term to print (default: a summary "
                   "with M, f, q)")
    s.add_argument("--latex", action="store_true", help="print LaTeX instead of Unicode")
    s.add_argument("--per-body", action="store_true", help="M one block a body, M[body] = diag(m, "
                   "m, I) (the summary's form when M splits by body)")
    s.add_argument("--param", action="append", metavar="NAME=VALUE", help=param_help)
    s.set_defaults(func=cmd_show)
