"""Small models written directly as symgen.Model (no builders): the pipeline's test cases."""
import sympy as sp

from symgen import Model, coordinates, t


def pendulum() -> Model:
    """Point mass on a massless rod in (x, y, θ) coordinates, zero rotational inertia (paper Sec. 3)."""
    (x, y, th), _ = coordinates("pend.x pend.y pend.theta")
    m, L, g, T0, w = sp.symbols("m L g T0 wbar")
    return Model(
        "pendulum", [x, y, th], sp.diag(m, m, 0), [0, -m * g, T0 * sp.sin(w * t)],
        q=[x - L * sp.sin(th), y + L * sp.cos(th)], V=m * g * y,
        params={m: 1.0, L: 1.0, g: 9.8, T0: 0.1, w: 0.1}, x0=[0, -1, 0],
        outputs={"pend.theta.deg": th * 180 / sp.pi},
    )


def four_bar() -> Model:
    """Planar four-bar (crank, coupler, rocker) in (x, y, θ) body coordinates, with gravity and a
    viscous joint damper on the crank."""
    names = []
    for b in ("crank", "coupler", "rocker"):
        names += [f"{b}.x", f"{b}.y", f"{b}.theta"]
    xs, vs = coordinates(names)
    l1, l2, l3, d, m, g, c = sp.symbols("l1 l2 l3 d m g c")
    lengths = (l1, l2, l3)
    M = sp.zeros(9, 9)
    f = sp.zeros(9, 1)
    ends = []
    for i, li in enumerate(lengths):
        xc, yc, th = xs[3 * i: 3 * i + 3]
        M[3 * i, 3 * i] = M[3 * i + 1, 3 * i + 1] = m
        M[3 * i + 2, 3 * i + 2] = m * li**2 / 12
        f[3 * i + 1] = -m * g
        ends.append(((xc - li / 2 * sp.cos(th), yc - li / 2 * sp.sin(th)),
                     (xc + li / 2 * sp.cos(th), yc + li / 2 * sp.sin(th))))
    f[2] = -c * vs[2]
    (a1, b1), (a2, b2), (a3, b3) = ends
    q = [a1[0], a1[1],                        # crank pivot at the origin
         b1[0] - a2[0], b1[1] - a2[1],        # crank-coupler
         b2[0] - b3[0], b2[1] - b3[1],        # coupler-rocker
         a3[0] - d, a3[1]]                    # rocker pivot at (d, 0)
    V = sum(m * g * xs[3 * i + 1] for i in range(3))
    return Model("four_bar", xs, M, f, q=q, V=V,
                 params={l1: 0.3, l2: 1.0, l3: 0.8, d: 0.9, m: 1.0, g: 9.81, c: 0.05})


def rheonomic() -> Model:
    """A mass in polar coordinates (r, φ) whose angle is driven: φ = Ω t + a sin(t) (q depends on t).
    Configuration-dependent M and velocity-dependent f (centripetal, Coriolis, damping)."""
    (r, ph), (rd, phd) = coordinates("r phi")
    m, k, c, Om, a, r0 = sp.symbols("m k c Omega a r0")
    M = sp.diag(m, m * r**2)
    f = [m * r * phd**2 - k * (r - r0) - c * rd, -2 * m * r * rd * phd]
    return Model("rheonomic", [r, ph], M, f, q=[ph - Om * t - a * sp.sin(t)],
                 V=k * (r - r0) ** 2 / 2,
                 params={m: 1.0, k: 20.0, c: 0.1, Om: 2.0, a: 0.3, r0: 1.0}, x0=[1.0, 0.0],
                 outputs={"x": r * sp.cos(ph), "y": r * sp.sin(ph)})


MODELS = {"pendulum": pendulum, "four_bar": four_bar, "rheonomic": rheonomic}
