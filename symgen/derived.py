"""Derived terms of the DAE, symbolically (paper Eqs. 27, 35-48 and the linearization of Eq. 6).

    H      = ∂q/∂x                                     (Eq. 27)
    q̇      = H ẋ + ∂q/∂t
    Ḣ      = ∂q̇/∂x                                    (Eq. 35; equals dH/dt for holonomic q)
    q̈      = Ḣ ẋ + H ẍ + ∂q̇/∂t
    Ḧ      = ∂q̈/∂x   at fixed ẋ, ẍ                     (Eq. 41)
    K      = ∂(M ẍ − f − Hᵀλ)/∂x   with ẍ, λ inputs   (K_L of Eq. 6, with −∂(Gᵀλ)/∂x, G = H)
    C      = −∂f/∂ẋ                                   (C_L of Eq. 6)
    (K and C at the given inputs u: f may depend on u, which is held over a step)
    T      = ½ ẋᵀ M ẋ,  V as given

No simplification is attempted (it costs hours on large models); Jacobians differentiate each
entry only by the symbols it contains, so sparse mechanisms stay cheap.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .model import Model, multipliers, t

__all__ = ["Derived", "derive", "TERMS", "jacobian", "display_names", "show", "shortest_floats",
           "Sparsity", "sparsity", "mass_blocks", "splits_by_body", "show_blocks"]

#: Names of the derived terms, in the order `symgen show` lists them.
TERMS = ("M", "f", "q", "H", "q_dot", "H_dot", "q_ddot", "H_ddot", "K", "C", "energy", "outputs")


def jacobian(exprs: sp.MatrixBase, xs) -> sp.ImmutableMatrix:
    """∂exprs/∂xs, differentiating each entry only by the symbols it actually contains."""
    index = {x: j for j, x in enumerate(xs)}
    rows = []
    for e in exprs:
        row = [sp.S.Zero] * len(xs)
        for s in e.free_symbols:
            j = index.get(s)
            if j is not None:
                row[j] = sp.diff(e, s)
        rows.append(row)
    return sp.ImmutableMatrix(len(rows), len(xs), [v for r in rows for v in r])


def _matvec(A: sp.MatrixBase, v, transpose: bool = False) -> sp.ImmutableMatrix:
    """A v (or Aᵀ v), skipping structural zeros."""
    rows = A.cols if transpose else A.rows
    out = [sp.S.Zero] * rows
    for (i, j), a in A.todok().items():
        if a != 0:
            if transpose:
                out[j] += a * v[i]
            else:
                out[i] += a * v[j]
    return sp.ImmutableMatrix(rows, 1, out)


@dataclass(frozen=True)
class Derived:
    """The model and every term the steppers need, as immutable sympy matrices.

    ``xdd`` (the ``<coordinate>_ddot`` Symbols) and ``lam`` (λ_0 … λ_{m-1}) are the extra inputs of
    q̈, Ḧ and K.
    """

    model: Model
    xdd: tuple
    lam: tuple
    M: sp.ImmutableMatrix
    f: sp.ImmutableMatrix
    q: sp.ImmutableMatrix
    H: sp.ImmutableMatrix
    q_dot: sp.ImmutableMatrix
    H_dot: sp.ImmutableMatrix
    q_ddot: sp.ImmutableMatrix
    H_ddot: sp.ImmutableMatrix
    K: sp.ImmutableMatrix
    C: sp.ImmutableMatrix
    T: sp.Expr
    V: sp.Expr
    outputs: sp.ImmutableMatrix
    #: f_t = ∂f/∂t + (∂H/∂t)ᵀλ at fixed x, ẋ, λ, u: the explicit time part of d/dt(f + Hᵀλ), which
    #: the corrected step's jerk needs (steppers/chart.py; the inputs' part ∂f/∂u u̇ is not known)
    f_t: sp.ImmutableMatrix = None
    #: the joints' reactions (``Model.reactions``), expressions of t, x, ẋ, ẍ, λ
    reactions: sp.ImmutableMatrix = None
    #: the events' functions g (``Model.events``), expressions of t, x, ẋ, p, u
    events: sp.ImmutableMatrix = None
    #: the impacts' gradients G = ∂g/∂x (the events with a restitution, in their order), rows
    impacts: sp.ImmutableMatrix = None

    @property
    def n(self) -> int:
        return self.model.n

    @property
    def m(self) -> int:
        return self.model.m

    def term(self, name: str):
        """One derived term by the name `symgen show --term` uses."""
        if name == "energy":
            return sp.ImmutableMatrix([self.T, self.V])
        if name not in TERMS:
            raise KeyError(f"unknown term {name!r}; known terms: {', '.join(TERMS)}")
        return getattr(self, name)

    def labels(self, name: str) -> str:
        """What the rows and columns of a term are, in words."""
        mdl = self.model
        coords = ", ".join(mdl.coord_names)
        if name in ("M", "K", "C"):
            return f"rows and columns: {coords}"
        if name == "f":
            return f"rows: {coords}"
        rows = (", ".join(mdl.constraint_names) if mdl.m
                else "none (the model has no constraints)")
        if name in ("q", "q_dot", "q_ddot"):
            return f"rows: {rows}"
        if name in ("H", "H_dot", "H_ddot"):
            return f"rows: {rows}; columns: {coords}"
        if name == "energy":
            return "rows: kinetic T, potential V"
        return "rows: " + ", ".join(mdl.output_names)

    def _display(self) -> tuple[dict, dict]:
        return display_names(self.model, self.lam)

    def pretty(self, name: str) -> str:
        return show(self.term(name), self.model, latex=False, lam=self.lam)

    def latex(self, name: str) -> str:
        return show(self.term(name), self.model, latex=True, lam=self.lam)


def display_names(model: Model, lam=()) -> tuple[dict, dict]:
    """Display symbols for ``pretty`` and LaTeX names for ``latex``: ``body.theta`` shows as θ with
    the body as a subscript (θ_pend, ``\\theta_{\\mathrm{pend}}``), its velocity and acceleration
    with dots, λ_i as λ_i."""
    pretty_map, latex_names = {}, {}
    _TEXTS.clear()
    for x, v, a in zip(model.coords, model.velocities, model.accelerations):
        body, _, base = x.name.rpartition(".")
        sub = f"_{{\\mathrm{{{body}}}}}" if body else ""
        base_tex = sp.latex(sp.Symbol(base))
        for sym, mod, tex in ((x, "", base_tex), (v, "dot", f"\\dot{{{base_tex}}}"),
                              (a, "ddot", f"\\ddot{{{base_tex}}}")):
            shown = f"{base}{mod}" + (f"_{body}" if body else "")
            pretty_map[sym] = sp.Symbol(shown)
            # always base_body: sympy would set some bodies in subscript glyphs (xᵤ₁, xₑₓ) and
            # others not (x_P1, x_cy)
            _TEXTS[pretty_map[sym]] = (sp.pretty(sp.Symbol(f"{base}{mod}"), use_unicode=True)
                                       + (f"_{body}" if body else ""))
            latex_names[sym] = (f"{{{tex}}}" + sub) if body else tex
    for i, lm in enumerate(lam):
        pretty_map[lm] = sp.Symbol(f"lambda_{i}")
        latex_names[lm] = f"\\lambda_{{{i}}}"
    return pretty_map, latex_names


#: display symbol → its Unicode text (display_names; read by _pretty)
_TEXTS: dict = {}


def _pretty(expr, width: int | None = None) -> str:
    """sympy's Unicode pretty print with the display symbols' texts (:data:`_TEXTS`); wider than
    ``width`` columns (None: no limit), the one-line form wrapped at ``width`` instead (sympy's
    own wrapping cuts a 2-D form into strips)."""
    import textwrap

    from sympy.printing.pretty.pretty import PrettyPrinter
    from sympy.printing.pretty.stringpict import prettyForm
    from sympy.printing.str import StrPrinter

    class _Printer(PrettyPrinter):
        def _print_Symbol(self, e, bold_name=False):
            text = _TEXTS.get(e)
            return prettyForm(text) if text is not None else super()._print_Symbol(e, bold_name)

    class _Line(StrPrinter):
        def _print_Symbol(self, e):
            return _TEXTS.get(e, e.name)

    text = _Printer({"use_unicode": True, "wrap_line": False}).doprint(expr)
    if width is None or max(map(len, text.splitlines() or [""])) <= width:
        return text
    return textwrap.fill(_Line().doprint(expr), width, subsequent_indent="    ",
                         break_long_words=False, break_on_hyphens=False)


def shortest_floats(expr):
    """``expr`` with every Float that holds a double printed as its shortest repr (-9.81, not
    -9.8100000000000005), or, when that repr is long (round-off of a fraction: 0.0033333333333334,
    math.radians(80) = 1.3962634015954636), as the fraction p/q, p·π/q or √(p/q) (q ≤ 10000) it is
    within 4 ulp of; Floats beyond double precision are left as they are."""
    import mpmath

    floats = expr.atoms(sp.Float) if hasattr(expr, "atoms") else set()
    subs = {}
    for f in floats:
        d = float(f)
        if mpmath.mpf(d) == mpmath.mpf(f._mpf_):
            text = repr(d)
            digits = len(text.lstrip("-").split("e")[0].replace(".", "").lstrip("0")) or 1
            subs[f] = _fraction_of(d) if digits > 12 else None
            if subs[f] is None:
                subs[f] = sp.Float(text, max(digits, 1))
    return expr.xreplace(subs) if subs else expr


def _fraction_of(d: float):
    """p/q or p·π/q (q ≤ 10000, q > 1) within 4 ulp of ``d``; None if there is none."""
    import math
    from fractions import Fraction

    tol = 4 * math.ulp(d)
    for unit, factor in ((1.0, sp.S.One), (math.pi, sp.pi)):
        r = Fraction(d / unit).limit_denominator(10000)
        if r.denominator > 1 or unit != 1.0:
            if r != 0 and abs(float(r) * unit - d) <= tol:
                return sp.Rational(r.numerator, r.denominator) * factor
    r = Fraction(d * d).limit_denominator(10000)              # a root: 5/√2 = 3.5355339059327378
    if r != 0 and abs(math.copysign(math.sqrt(r), d) - d) <= tol:
        root = sp.sqrt(sp.Rational(r.numerator, r.denominator))
        if not root.is_Rational:
            return root if d > 0 else -root
    return None


def show(expr, model: Model, latex: bool = False, lam=(), label: str = "",
         width: int | None = None) -> str:
    """``expr`` (a term of ``model``) as Unicode or LaTeX, with display names and short floats;
    ``label = expr`` with a label (Unicode only: LaTeX callers write their own); Unicode lines
    wrapped at ``width`` columns (None: not wrapped)."""
    pretty_map, latex_names = display_names(model, lam)
    expr = shortest_floats(expr)
    if latex:
        return sp.latex(expr, symbol_names=latex_names)
    expr = expr.xreplace(pretty_map)
    if label:      # an Eq built after the replacement: xreplace would evaluate it
        expr = sp.Eq(sp.Symbol(label), expr, evaluate=False)
    return _pretty(expr, width)


def mass_blocks(model: Model) -> list[tuple[str, tuple[int, ...]]]:
    """M's diagonal blocks, one a body: the coordinates grouped by the name before their last "."
    (``crank.x``, ``crank.theta`` → ``crank``; a name without one is its own group), groups that M
    couples merged; ``(name, indices)`` in the coordinates' order. One block if M does not split."""
    names = model.coord_names
    owner = [n.rpartition(".")[0] or n for n in names]
    parent = list(range(len(names)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first = {}
    for i, o in enumerate(owner):
        parent[root(i)] = root(first.setdefault(o, i))
    for (i, j), e in sp.ImmutableMatrix(model.M).todok().items():
        if e != 0:
            parent[root(i)] = root(j)
    groups = {}
    for i in range(len(names)):
        groups.setdefault(root(i), []).append(i)
    return [(", ".join(dict.fromkeys(owner[i] for i in idx)), tuple(idx))
            for idx in sorted(groups.values())]


def splits_by_body(model: Model, most: int, widest: int) -> bool:
    """Whether M shows best per body: every coordinate a body's (``<body>.<name>``) and M splits
    into more than one and at most ``most`` blocks, none wider than ``widest``."""
    blocks = mass_blocks(model)
    return (all("." in c for c in model.coord_names) and 1 < len(blocks) <= most
            and all(len(idx) <= widest for _, idx in blocks))


def show_blocks(model: Model, latex: bool = False, widest: int = 12,
                width: int | None = None) -> str:
    """M one block a body (``mass_blocks``): a header saying over which coordinates (a LaTeX
    comment with ``latex``), then ``M[crank] = diag(m, m, I)`` a block; where M couples a block's
    coordinates, the block itself, or when wider than ``widest`` coordinates or ``width`` columns
    its non-zero entries by name."""
    M, names, lines, kinds = sp.ImmutableMatrix(model.M), model.coord_names, [], set()

    def say(label, value, fit=False):
        if latex:
            tex = r",\,".join(r"\mathrm{%s}" % w.replace("_", r"\_") for w in label)
            lines.append(f"M_{{{tex}}} = {show(value, model, True)}")
            return True
        text = show(value, model, label=f"M[{', '.join(label)}]", width=None if fit else width)
        if fit and width is not None and max(map(len, text.splitlines())) > width:
            return False
        lines.append(text)
        return True

    for name, idx in mass_blocks(model):
        kinds.add(tuple(names[i].rpartition(".")[2] for i in idx))
        B = M.extract(list(idx), list(idx))
        pairs = [(i, j) for i in range(B.rows) for j in range(B.cols) if B[i, j] != 0]
        if all(i == j for i, j in pairs) or B.rows <= widest:
            diagonal = all(i == j for i, j in pairs)
            if say(name.split(", "), B[0, 0] if B.rows == 1 else
                   sp.Function("diag")(*B.diagonal()) if diagonal else B, fit=not diagonal):
                continue
        for i, j in pairs:
            say((names[idx[i]], names[idx[j]]), B[i, j])
    over = (f"each body's {', '.join(kinds.pop())}" if len(kinds) == 1
            else "each block's coordinates in the model's order")
    header = f"M  per body (rows and columns: {over}; 0 between blocks)"
    return "\n".join([("% " if latex else "") + header, *lines])


def _real_versions(symbols) -> dict:
    """Real-valued stand-ins for the symbols not already known to be real, so that derivatives of
    |x|, sign(x), … come out as sign(x), 0 … rather than through re(x) and im(x)."""
    return {s: sp.Symbol(s.name, real=True) for s in symbols if s.is_real is not True}


def _no_delta(expr):
    """Derivatives of sign/Heaviside are taken as 0 away from the switch (DiracDelta → 0)."""
    return expr.replace(sp.DiracDelta, lambda *args: sp.S.Zero) if expr.has(sp.DiracDelta) else expr


def derive(model: Model) -> Derived:
    """Every derived term of ``model`` (see the module docstring for the definitions).

    All symbols stand for real numbers: the differentiation runs on real-valued stand-ins, and the
    results are written back in the model's own symbols.
    """
    lam0 = multipliers(model.m)
    real = _real_versions((*model.coords, *model.velocities, *model.accelerations, *lam0,
                           *model.params, *model.inputs, t))
    back = {v: k for k, v in real.items()}
    R = lambda e: e.xreplace(real) if real else e  # noqa: E731
    B = lambda e: _no_delta(e.xreplace(back)) if back else _no_delta(e)  # noqa: E731
    tr = real.get(t, t)
    xs = tuple(real.get(s, s) for s in model.coords)
    vs = tuple(real.get(s, s) for s in model.velocities)
    xdd = tuple(real.get(s, s) for s in model.accelerations)
    lam = tuple(real.get(s, s) for s in lam0)
    M, f, q = R(model.M), R(model.f), R(model.q)

    H = jacobian(q, xs)                                                  # Eq. 27
    q_t = sp.ImmutableMatrix([sp.diff(e, tr) for e in q]) if model.m else q
    q_dot = _matvec(H, vs) + q_t if model.m else q
    H_dot = jacobian(q_dot, xs)                                          # ∂q̇/∂x
    q_dot_t = sp.ImmutableMatrix([sp.diff(e, tr) for e in q_dot]) if model.m else q
    q_ddot = (_matvec(H_dot, vs) + _matvec(H, xdd) + q_dot_t) if model.m else q
    H_ddot = jacobian(q_ddot, xs)                                        # ∂q̈/∂x at fixed ẋ, ẍ

    residual = _matvec(M, xdd) - f                                       # M ẍ − f − Hᵀλ
    if model.m:
        residual = residual - _matvec(H, lam, transpose=True)
    K = jacobian(residual, xs)
    C = -jacobian(f, vs)
    f_t = sp.ImmutableMatrix([sp.diff(e, tr) for e in f]) if model.n else f
    if model.m:
        f_t = f_t + _matvec(H.diff(tr), lam, transpose=True)

    T = sp.Rational(1, 2) * sum((vs[i] * e for i, e in enumerate(_matvec(M, vs))), sp.S.Zero)
    V = model.V if model.V is not None else sp.S.Zero
    outputs = sp.ImmutableMatrix(len(model.outputs), 1, list(model.outputs.values()))
    reactions = sp.ImmutableMatrix(len(model.reactions), 1, list(model.reactions.values()))
    events = sp.ImmutableMatrix(len(model.events), 1, [e.expr for e in model.events.values()])
    gaps = [e.expr for e in model.events.values() if e.restitution is not None]
    G = (sp.ImmutableMatrix(gaps).jacobian(list(model.coords)) if gaps
         else sp.ImmutableMatrix.zeros(0, len(model.coords)))
    return Derived(model=model, xdd=model.accelerations, lam=lam0, M=model.M, f=model.f,
                   q=model.q, H=B(H), q_dot=B(q_dot), H_dot=B(H_dot), q_ddot=B(q_ddot),
                   H_ddot=B(H_ddot), K=B(K), C=B(C), T=B(T), V=V, outputs=outputs,
                   f_t=B(f_t), reactions=reactions, events=events,
                   impacts=sp.ImmutableMatrix(G))


@dataclass(frozen=True)
class Sparsity:
    """The fixed CSR patterns of the derived matrices (their symbolic non-zeros, row-major) and a
    fill-reducing order of the coordinates, as plain tuples of ints (issue 14).

    ``H_indptr`` (m + 1), ``H_indices``: the pattern shared by H, Ḣ and Ḧ (their union; Ḣ_ij and
    Ḧ_ij vanish wherever q_i does not depend on x_j, so it is H's own pattern — ``H_only`` says
    whether that held).  ``M_indptr`` (n + 1), ``M_indices``: the pattern shared by M, K and C.
    ``col_order``: the n coordinates in reverse Cuthill–McKee order of the pattern of HᵀH (the
    graph "two coordinates share a constraint row"; scipy.sparse.csgraph).  Chains of loops, the
    mechanisms the sparse step is for, get a band one loop wide, so an LU of a square block of H
    in this column order fills in only inside that band; a minimum-degree order would do as well on
    chains and better on meshes but scipy has none to offer at generation time (SuperLU's COLAMD is
    internal to its factorization).
    """

    H_indptr: tuple
    H_indices: tuple
    M_indptr: tuple
    M_indices: tuple
    col_order: tuple
    H_only: bool

    @property
    def nnz_H(self) -> int:
        return len(self.H_indices)

    @property
    def nnz_M(self) -> int:
        return len(self.M_indices)

    def positions(self, which: str) -> list:
        """The (i, j) of the pattern ``"H"`` or ``"M"`` in CSR (row-major) order."""
        indptr, indices = ((self.H_indptr, self.H_indices) if which == "H"
                           else (self.M_indptr, self.M_indices))
        return [(i, indices[k]) for i in range(len(indptr) - 1)
                for k in range(indptr[i], indptr[i + 1])]


def _pattern(rows: int, *mats) -> tuple[tuple, tuple, set]:
    nz = set()
    for mat in mats:
        nz.update((i, j) for (i, j), e in mat.todok().items() if e != 0)
    counts = [0] * rows
    for i, _ in nz:
        counts[i] += 1
    indptr = [0]
    for c in counts:
        indptr.append(indptr[-1] + c)
    return tuple(indptr), tuple(j for _, j in sorted(nz)), nz


def sparsity(d: Derived) -> Sparsity:
    """The CSR patterns and the column order of :class:`Sparsity` for ``d``."""
    import numpy as np
    import scipy.sparse as sps
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    n, m = d.n, d.m
    _, _, nz_H = _pattern(m, d.H)
    H_indptr, H_indices, nz_all = _pattern(m, d.H, d.H_dot, d.H_ddot)
    M_indptr, M_indices, _ = _pattern(n, d.M, d.K, d.C)
    order = tuple(range(n))
    if m and n:
        A = sps.csr_matrix((np.ones(len(H_indices)), H_indices, H_indptr), shape=(m, n))
        G = (A.T @ A + sps.identity(n)).tocsr()
        order = tuple(int(j) for j in reverse_cuthill_mckee(G, symmetric_mode=True))
    return Sparsity(H_indptr=H_indptr, H_indices=H_indices, M_indptr=M_indptr,
                    M_indices=M_indices, col_order=order, H_only=nz_all == nz_H)
