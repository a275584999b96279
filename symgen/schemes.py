"""Newmark schemes by name, and the linear stability limit of Eq. 11.

Newmark (the paper writes the usual γ as "α"):

    x₁ = x₀ + h ẋ₀ + h² ((½ − β) ẍ₀ + β ẍ₁)
    ẋ₁ = ẋ₀ + h ((1 − γ) ẍ₀ + γ ẍ₁)

Presets: ``trapezoidal`` (½, ¼), ``fox-goodwin`` (½, 1/12), ``linear-acceleration`` (½, 1/6),
``central-difference`` (½, 0).  Any explicit ``(gamma, beta)`` (a tuple or the string
``"GAMMA,BETA"``) is accepted, e.g. the damped (0.5001, 0.2507) of the paper.

HHT-α (Hilber–Hughes–Taylor, the numerically damped reference for the classical index-3 stepper):
``"hht:ALPHA"`` with −⅓ ≤ α ≤ 0 gives γ = ½ − α, β = (1 − α)²/4 and the α-weighted equilibrium.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Scheme", "parse_scheme", "PRESETS"]

#: Named Newmark presets: name → (gamma, beta).
PRESETS: dict[str, tuple[float, float]] = {
    "trapezoidal": (0.5, 0.25),
    "fox-goodwin": (0.5, 1.0 / 12.0),
    "linear-acceleration": (0.5, 1.0 / 6.0),
    "central-difference": (0.5, 0.0),
}

_ALIASES = {
    "trapezoid": "trapezoidal", "average-acceleration": "trapezoidal",
    "foxgoodwin": "fox-goodwin", "fox_goodwin": "fox-goodwin",
    "linear_acceleration": "linear-acceleration",
    "central_difference": "central-difference", "central-differences": "central-difference",
}


@dataclass(frozen=True)
class Scheme:
    """A Newmark scheme (gamma, beta), optionally with the HHT-α weighting ``alpha`` (≤ 0)."""

    gamma: float
    beta: float
    name: str = ""
    alpha: float = 0.0          # HHT-α; 0 for plain Newmark
    #: the corrected step (γ = ½, symmetric chart, mass metric) runs this scheme: its two-point
    #: Hermite relations do not depend on β and are A-stable (docs/fourth-order-step.md), so it
    #: has no stability limit; set by :meth:`corrected`
    a_stable: bool = False

    def __post_init__(self):
        for what in ("gamma", "beta", "alpha"):
            v = getattr(self, what)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"scheme {what} must be a finite number, got {v!r}")
        if self.gamma < 0.5:
            raise ValueError(f"Newmark gamma = {self.gamma} < 1/2 is unstable (negative damping); "
                             "use gamma >= 0.5")
        if self.beta < 0:
            raise ValueError(f"Newmark beta must be >= 0, got {self.beta}")
        if not (-1.0 / 3.0 - 1e-15 <= self.alpha <= 0.0):
            raise ValueError(f"HHT alpha must lie in [-1/3, 0], got {self.alpha}")
        if not self.name:
            object.__setattr__(self, "name", f"newmark({self.gamma:.17g},{self.beta:.17g})")

    @property
    def is_hht(self) -> bool:
        return self.alpha != 0.0

    def h_max(self, omega_max: float) -> float:
        """Largest stable step for a highest frequency ``omega_max`` (Eq. 11).

        h ≤ (1/ω_max) √(1/(γ/2 − β)); ``inf`` when β ≥ γ/2 (unconditionally stable) or when
        ω_max = 0, ``nan`` when ω_max is not a number.
        """
        omega_max = float(omega_max)
        if math.isnan(omega_max):
            return math.nan
        if self.a_stable:
            return math.inf
        d = 0.5 * self.gamma - self.beta
        if d <= 0.0 or omega_max <= 0.0:
            return math.inf
        return math.sqrt(1.0 / d) / omega_max                                     # Eq. 11

    def corrected(self, on: bool = True) -> "Scheme":
        """This scheme as the corrected step runs it: without a stability limit (``a_stable``);
        ``on=False``: as the paper's step runs it."""
        from dataclasses import replace
        return replace(self, a_stable=on)

    def as_dict(self) -> dict:
        return {"name": self.name, "gamma": self.gamma, "beta": self.beta, "hht_alpha": self.alpha,
                "a_stable": self.a_stable}

    def __str__(self) -> str:
        return self.name


def _known() -> str:
    return ", ".join(sorted(PRESETS)) + ", 'GAMMA,BETA', (gamma, beta), 'hht:ALPHA'"


def parse_scheme(spec) -> Scheme:
    """A :class:`Scheme` from a name, ``"GAMMA,BETA"``, ``(gamma, beta)``, ``"hht:ALPHA"`` or a Scheme.

    Unknown names raise ``ValueError`` listing the known ones.
    """
    if isinstance(spec, Scheme):
        return spec
    if isinstance(spec, (tuple, list)):
        if len(spec) != 2:
            raise ValueError(f"a scheme tuple must be (gamma, beta), got {spec!r}")
        try:
            g, b = float(spec[0]), float(spec[1])
        except (TypeError, ValueError):
            raise ValueError(f"a scheme tuple must hold two numbers (gamma, beta), got {spec!r}") from None
        return _named_or_explicit(g, b)
    if not isinstance(spec, str):
        raise ValueError(f"cannot read a Newmark scheme from {spec!r}; known: {_known()}")
    s = spec.strip().lower()
    s = _ALIASES.get(s, s)
    if s in PRESETS:
        g, b = PRESETS[s]
        return Scheme(g, b, s)
    if s.startswith("hht"):
        rest = s[3:].lstrip(":=(").rstrip(")").strip()
        try:
            a = float(rest) if rest else -0.05
        except ValueError:
            raise ValueError(f"cannot read HHT alpha from {spec!r}; write e.g. 'hht:-0.05'") from None
        if not (-1.0 / 3.0 - 1e-15 <= a <= 0.0):
            raise ValueError(f"HHT alpha must lie in [-1/3, 0], got {a} (from {spec!r})")
        return Scheme(0.5 - a, (1.0 - a) ** 2 / 4.0, f"hht:{a:g}", alpha=a)
    if "," in s:
        parts = s.strip("()[] ").split(",")
        if len(parts) == 2:
            try:
                g, b = float(parts[0]), float(parts[1])
            except ValueError:
                pass
            else:
                return _named_or_explicit(g, b)
    raise ValueError(f"unknown Newmark scheme {spec!r}; known: {_known()}")


def _named_or_explicit(g: float, b: float) -> Scheme:
    for name, (pg, pb) in PRESETS.items():
        if g == pg and b == pb:
            return Scheme(g, b, name)
    return Scheme(g, b)
