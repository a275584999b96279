"""Each validation of Model names the problem."""
import numpy as np
import pytest
import sympy as sp

from symgen import Model, ModelError, coordinates, derive, t


@pytest.fixture
def syms():
    (x, y), (xd, yd) = coordinates("body.x body.y")
    m, g = sp.symbols("m g")
    return x, y, xd, yd, m, g


def make(syms, **kw):
    x, y, xd, yd, m, g = syms
    args = dict(name="ok", coords=[x, y], M=sp.diag(m, m), f=[0, -m * g], q=[x**2 + y**2 - 1],
                params={m: 1.0, g: 9.81}, x0=[0, -1])
    args.update(kw)
    return Model(**args)


def test_a_valid_model(syms):
    mdl = make(syms)
    assert (mdl.n, mdl.m) == (2, 1)
    assert mdl.coord_names == ("body.x", "body.y")
    assert mdl.param_names == ("m", "g")
    assert len(mdl.hash) == 64 and mdl.hash == make(syms).hash
    assert make(syms, params={syms[4]: 2.0, syms[5]: 9.81}).hash != mdl.hash


def test_wrong_shapes(syms):
    x, y, xd, yd, m, g = syms
    with pytest.raises(ModelError, match=r"M has shape \(3, 3\); expected \(2, 2\)"):
        make(syms, M=sp.eye(3))
    with pytest.raises(ModelError, match="f has 3 entries; expected 2"):
        make(syms, f=[0, 0, 0])
    with pytest.raises(ModelError, match=r"x0 has shape \(3,\); expected \(2,\)"):
        make(syms, x0=[0, 0, 0])
    with pytest.raises(ModelError, match="q must be a column vector"):
        make(syms, q=sp.Matrix([[x, y], [y, x]]))


def test_non_symmetric_mass_matrix(syms):
    x, y, *_ , m, g = syms
    with pytest.raises(ModelError, match=r"M is not symmetric: M\[0,1\] = m .*M\[1,0\] = 0.*body.x, body.y"):
        make(syms, M=sp.Matrix([[m, m], [0, m]]))
    # symmetric up to a trigonometric identity is accepted
    make(syms, M=sp.Matrix([[m, sp.sin(x)**2 + sp.cos(x)**2], [1, m]]))


def test_unknown_free_symbols_are_listed(syms):
    x, y, *_ , m, g = syms
    k, c = sp.symbols("k c")
    with pytest.raises(ModelError, match=r"f has free symbols \['c', 'k'\] that are not coordinates"):
        make(syms, f=[-k * x, -c * y])
    with pytest.raises(ModelError, match=r"q has free symbols \['body.x_dot'\].*velocities are not allowed in q"):
        make(syms, q=[syms[2]])
    with pytest.raises(ModelError, match=r"output 'speed' has free symbols \['k'\]"):
        make(syms, outputs={"speed": k * syms[2]})


def test_names_that_cannot_become_c_identifiers(syms):
    x, y, *_ , m, g = syms
    with pytest.raises(ModelError, match="model name 'my model' cannot become a C identifier"):
        make(syms, name="my model")
    with pytest.raises(ModelError, match="model name 'double' cannot become a C identifier"):
        make(syms, name="double")
    with pytest.raises(ModelError, match=r"parameter name 'g\.z' cannot become a C identifier"):
        make(syms, params={m: 1.0, sp.Symbol("g.z"): 1.0}, f=[0, 0])
    with pytest.raises(ModelError, match="coordinate name '2x' is not allowed"):
        coordinates("2x")
    with pytest.raises(ModelError, match=r"duplicated coordinate \(after '.' → '_'\) name\(s\): \['a_b'\]"):
        Model("dup", ["a.b", "a_b"], sp.eye(2), [0, 0])


def test_accelerations_are_rejected(syms):
    x, y, xd, yd, m, g = syms
    xdd = sp.Symbol("body.x_ddot")
    with pytest.raises(ModelError, match=r"f depends on accelerations \['body.x_ddot'\]"):
        make(syms, f=[-m * xdd, 0])
    q = sp.Function("q")(t)
    with pytest.raises(ModelError, match="f contains undefined functions or derivatives"):
        make(syms, f=[q.diff(t, 2), 0])


def test_parameter_defaults(syms):
    x, y, *_ , m, g = syms
    with pytest.raises(ModelError, match="parameter 'g' has a non-numeric default 'heavy'"):
        make(syms, params={m: 1.0, g: "heavy"})
    with pytest.raises(ModelError, match="parameter 'g' has a non-finite default nan"):
        make(syms, params={m: 1.0, g: float("nan")})


def test_unknown_settings(syms):
    with pytest.raises(ModelError, match=r"unknown setting\(s\) \['step'\]"):
        make(syms, settings={"step": 0.1})


def test_derived_terms_print(syms):
    d = derive(make(syms))
    for term in ("M", "f", "q", "H", "H_dot", "H_ddot", "K", "C", "energy", "outputs"):
        assert d.pretty(term)
        assert d.latex(term)
    assert "dot" in d.latex("H_dot") or "2" in d.latex("H_dot")
    with pytest.raises(KeyError, match="unknown term 'Q'"):
        d.term("Q")
    np.testing.assert_array_equal(np.array(d.H.tolist(), dtype=object).shape, (1, 2))


def test_reserved_names(syms):
    x, y, *_ , m, g = syms
    for name in ("t", "lambda_0", "body.x_ddot"):
        with pytest.raises(ModelError, match=f"coordinate name '{name}' is reserved"):
            Model("r", [name, "other"], sp.eye(2), [0, 0])
    with pytest.raises(ModelError, match="parameter name 'lambda_0' is reserved"):
        make(syms, params={m: 1.0, g: 9.81, sp.Symbol("lambda_0"): 1.0})


def test_imaginary_or_infinite_constants(syms):
    x, y, *_ , m, g = syms
    for bad, shown in ((sp.I * x, "I"), (sp.oo * x, "oo"), (1 / (x - x), "zoo")):
        with pytest.raises(ModelError, match=rf"f contains \['{shown}'\]"):
            make(syms, f=[bad, 0])


def test_unsupported_function_names_the_kernel_and_function(syms):
    from symgen import generate
    x, y, *_ , m, g = syms
    with pytest.raises(ModelError, match="the dynamics kernel uses besselj"):
        generate(make(syms, f=[sp.besselj(0, x), -m * g]))


def test_derived_terms_display_names():
    """Dotted coordinate names show as the coordinate with its body; velocities and
    accelerations with dots (pretty and LaTeX), multipliers as λ_i."""
    (th,), (thd,) = coordinates("pend.theta")
    L = sp.Symbol("L")
    mdl = Model("disp", [th], [[1]], [0], q=[L * sp.sin(th) - sp.Rational(1, 2)],
                params={L: 1.0})
    d = derive(mdl)
    tex = d.latex("H_ddot")
    assert r"{\ddot{\theta}}_{\mathrm{pend}}" in tex and r"{\dot{\theta}}_{\mathrm{pend}}" in tex
    assert "_ddot" not in tex and "{dot}" not in tex
    assert r"\lambda_{0}" in d.latex("K")
    pretty = d.pretty("H_ddot")
    assert "θ̈_pend" in pretty and "θ̇_pend" in pretty
    unconstrained = derive(Model("free", [th], [[1]], [0]))
    assert unconstrained.labels("q") == "rows: none (the model has no constraints)"


def test_negative_mass_through_the_run_parameters_is_refused(syms):
    """Issue 27 (9): the model's own check sees only the parameter defaults; a run's
    params={'m': -1} (``--param m=-1``) ran silently."""
    from symgen import LambdifyKernels, simulate
    x, y, xd, yd, m, g = syms
    mdl = make(syms, name="zero_inertia", coords=[x, y, sp.Symbol("body.theta")],
               M=sp.diag(m, m, 0), f=[0, -m * g, 0], x0=[0, -1, 0],
               q=[x**2 + y**2 - 1, sp.Symbol("body.theta") - sp.atan2(x, -y)])
    k = LambdifyKernels(mdl)
    ok = simulate(k, params={"m": 2.0}, dt=0.01, t_end=0.05)   # M[2,2] = 0 is legal
    assert ok.status == "completed"
    with pytest.raises(ModelError, match=r"M\[0,0\] \(coordinate body.x\) is -1 .*m = -1, "
                                         r"g = 9.81"):
        simulate(k, params={"m": -1.0}, dt=0.01, t_end=0.05)
    assert k.params()["m"] == 1.0                            # the run's value is not kept
    from symgen.assembly import check_mass_diagonal
    k.set_params(m=-0.5)                                     # as the compiled sparse start calls it
    with pytest.raises(ModelError, match=r"M\[0,0\] .* is -0.5 "):
        check_mass_diagonal(k, 0.0, np.array([0.0, -1.0, 0.0]))


def test_model_names_that_clash_with_generated_files(syms):
    """Issue 27 (6): a model 'main' had its kernels' main.c overwritten by the driver; models
    'symgen_runtime'/'symgen_sparse' failed to build.  Every .c/.h file that generate writes
    besides the model's own is a name a model cannot take (also a runtime split into sg_*.c)."""
    from symgen.codegen.render import generate
    src = generate(make(syms))
    others = {f.rsplit(".", 1)[0] for f in src.files if f.endswith((".c", ".h"))} - {"ok"}
    assert {"main", "symgen_runtime", "symgen_sparse"} <= others
    for name in sorted(others) + ["Main", "SYMGEN_x", "sg_runtime_step"]:
        with pytest.raises(ModelError, match=f"model name '{name}' clashes with the generated"):
            make(syms, name=name)
    for name in ("mainly", "my_symgen_model", "sgx"):
        assert make(syms, name=name).name == name


@pytest.mark.parametrize("field, value, what", [
    ("M", [["m", 0], [0, "m"]], "M"),
    ("M", "Matrix([[m, 0], [0, m]])", "M"),
    ("f", [0, "-m*g"], "f"),
    ("f", np.array(["0", "-m*g"]), "f"),
    ("q", ["body.x**2 + body.y**2 - 1"], "q"),
    ("V", "m*g*body.y", "V"),
    ("outputs", {"r": "__import__('os').getpid()"}, "output 'r'"),
    ("drawing", [[("A", ("body.x", 0)), ("B", (0, 0))]], r"drawing point 'A' \(polyline 0\)"),
])
def test_an_expression_given_as_text_is_refused(syms, field, value, what, monkeypatch):
    """Issue 38: a string expression went through sympify, which evaluates Python.  Model
    refuses text wherever it takes an expression, before sympify sees it."""
    real = sp.sympify

    def watch(a, *args, **kw):
        assert not isinstance(a, str), f"sympify was given the string {a!r}"
        return real(a, *args, **kw)
    monkeypatch.setattr(sp, "sympify", watch)
    with pytest.raises(ModelError, match=rf"^{what}: the string .* is not a sympy expression; a "
                                         r"Model takes no text .*sp\.parse_expr"):
        make(syms, **{field: value})


def test_expressions_from_symbols_and_numbers_are_taken(syms):
    x, y, xd, yd, m, g = syms
    mdl = make(syms, M=np.array([[m, 0], [0, m]], dtype=object), f=(np.float64(0.0), -m * g),
               V=m * g * y, outputs={"r": sp.sqrt(x**2 + y**2), "one": 1})
    assert mdl.V == m * g * y and mdl.outputs["one"] == 1
