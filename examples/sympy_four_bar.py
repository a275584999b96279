"""Planar four-bar described with sympy.physics.mechanics (System, pin joints, loop closure).

The SymPy way: three uniform bars (crank a, coupler b, rocker c; mass m each, I = m L²/12) joined
by PinJoints along the open chain ground–crank–coupler–rocker, relative joint angles
q_crank, q_coupler, q_rocker; the loop is closed by a holonomic constraint (the rocker's free end
stays at the ground pivot D = (d, 0)).  ``symgen.mechanics.from_sympy`` turns the System into a
Model: M and f from Kane's equations with all three coordinates independent, the two closure
equations as q (the null-space method keeps them, nothing is eliminated).  Gravity g along −y.

Lengths a = 0.3, b = 1.0, c = 0.8, d = 1.0 m (a Grashof crank-rocker), m = 1 kg, g = 9.81.  The
start is assembled (``symgen.assemble``) from the crank angle alone: crank along +x turning at
4 rad/s, the coupler and rocker on the open (upper) branch.  Outputs: the crank pin ``A`` and the
rocker pin ``B`` (positions).
"""
import sympy as sp
import sympy.physics.mechanics as me

import symgen
from symgen.mechanics import from_sympy

SETTINGS = dict(method="nullspace", scheme="fox-goodwin", dt=1e-3, t_end=5.0)
DEFAULTS = dict(a=0.3, b=1.0, c=0.8, d=1.0, m=1.0, g=9.81)
CRANK_ANGLE0, CRANK_RATE0 = 0.0, 4.0


def system():
    """The sympy.physics.mechanics System, its parameter symbols and the output points."""
    a, b, c, d, m, g = sp.symbols("a b c d m g")
    q = me.dynamicsymbols("q_crank q_coupler q_rocker")
    u = me.dynamicsymbols("u_crank u_coupler u_rocker")
    ground = me.RigidBody("ground")
    sys = me.System.from_newtonian(ground)
    bars = []
    for name, L in (("crank", a), ("coupler", b), ("rocker", c)):
        bar = me.RigidBody(name, mass=m)
        bar.inertia = (me.inertia(bar.frame, 0, 0, m * L ** 2 / 12), bar.masscenter)
        bars.append(bar)
    crank, coupler, rocker = bars
    z = ground.frame.z
    sys.add_joints(
        me.PinJoint("O", ground, crank, q[0], u[0], child_point=-a / 2 * crank.frame.x,
                    joint_axis=z),
        me.PinJoint("A", crank, coupler, q[1], u[1], parent_point=a / 2 * crank.frame.x,
                    child_point=-b / 2 * coupler.frame.x, joint_axis=crank.frame.z),
        me.PinJoint("B", coupler, rocker, q[2], u[2], parent_point=b / 2 * coupler.frame.x,
                    child_point=c / 2 * rocker.frame.x, joint_axis=coupler.frame.z))
    sys.q_ind, sys.q_dep = q[:1], q[1:]
    sys.u_ind, sys.u_dep = u[:1], u[1:]
    D = rocker.masscenter.locatenew("D", -c / 2 * rocker.frame.x)
    gap = D.pos_from(sys.fixed_point) - d * sys.frame.x
    sys.add_holonomic_constraints(gap.dot(sys.frame.x), gap.dot(sys.frame.y))
    sys.apply_uniform_gravity(-g * sys.frame.y)
    V = sum(m * g * bar.masscenter.pos_from(sys.fixed_point).dot(sys.frame.y) for bar in bars)
    A = crank.masscenter.locatenew("A", a / 2 * crank.frame.x)
    B = rocker.masscenter.locatenew("B", c / 2 * rocker.frame.x)
    symbols = dict(a=a, b=b, c=c, d=d, m=m, g=g)
    return sys, symbols, q, {"A": A, "B": B}, V


def model(**params) -> symgen.Model:
    values = dict(DEFAULTS, **params)
    sys, symbols, q, points, V = system()
    mdl = from_sympy(sys, params={symbols[k]: v for k, v in values.items()}, outputs=points, V=V,
                     x0={q[0]: CRANK_ANGLE0, q[1]: 1.0, q[2]: 2.0},      # a rough placement
                     name="sympy_four_bar", settings=SETTINGS,
                     description=__doc__.strip().splitlines()[0])
    x0, xd0 = symgen.assemble(mdl, fix={"q_crank": CRANK_ANGLE0}, xd_fix={"q_crank": CRANK_RATE0})
    return mdl.replace(x0=x0, xd0=xd0)
