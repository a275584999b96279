"""Drawing the mechanism (issue 13): Model.drawing, symgen animate, plot --what mechanism."""
import numpy as np
import pytest
import sympy as sp

import symgen
from symgen import LambdifyKernels
from symgen.cli import main
from symgen.loader import load_model

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")
draw = pytest.importorskip("symgen.animation")


@pytest.fixture(scope="module")
def dfb(tmp_path_factory):
    """The double four-bar over 0.5 s (lambdify kernels: no compilation), saved as .npz."""
    model = load_model("double_four_bar")
    result = symgen.simulate(LambdifyKernels(model), t_end=0.5)
    assert result.ok
    path = tmp_path_factory.mktemp("dfb") / "dfb.npz"
    result.save(path)
    return model, result, path


def test_builders_record_drawing_that_matches_the_outputs(dfb):
    model, result, _ = dfb
    frames = draw.evaluate(model, result)
    assert frames.dim == 2
    # B0 (the output point, top of the first vertical bar) is the drawn point V0.B
    path = frames.point("V0.B")
    np.testing.assert_allclose(path[:, 0], result.output("B0.x"), rtol=0, atol=1e-12)
    np.testing.assert_allclose(path[:, 1], result.output("B0.y"), rtol=0, atol=1e-12)
    # the ground anchors stay where the joints are
    np.testing.assert_allclose(frames.point("ground.O1"), np.tile([1.0, 0.0], (len(result.t), 1)))


def test_gif_frame_count_and_size(dfb, tmp_path, capsys):
    _, _, npz = dfb
    gif = tmp_path / "motion.gif"
    rc = main(["animate", str(npz), "-o", str(gif), "--fps", "10", "--speed", "0.25"])
    assert rc == 0, capsys.readouterr().err
    with Image.open(gif) as im:
        # 0.5 simulated s at 0.25 s per real s is 2 real s: 20 frames + the first
        assert im.n_frames == 21
        assert im.size == (400, 400)          # 5 in × 80 dpi
        assert im.info["duration"] == 100     # ms per frame at 10 fps
    rc = main(["animate", str(npz), "-o", str(gif), "--every", "10", "--trace", "V0.B"])
    assert rc == 0
    with Image.open(gif) as im:
        assert im.n_frames == 6               # rows 0, 10, …, 50


def _red_near(rgb, x, y, r=2):
    """Is there a joint-marker red pixel within r pixels of (x, y)?"""
    h, w, _ = rgb.shape
    patch = rgb[max(0, y - r):min(h, y + r + 1), max(0, x - r):min(w, x + r + 1)].astype(int)
    target = np.array([0xd6, 0x27, 0x28])
    return bool(np.any(np.abs(patch - target).max(axis=-1) <= 30))


def test_drawn_point_lands_at_its_pixel(dfb, tmp_path):
    model, result, _ = dfb
    gif = tmp_path / "m.gif"
    anim = draw.animate(result, model, gif, fps=10, speed=0.5)
    # the figure stays at the last frame: map V0.B of that row through the axes' data transform
    row = anim.rows[-1]
    xy = anim.frames.point("V0.B")[row]
    px, py = anim.ax.transData.transform(xy)
    with Image.open(gif) as im:
        W, H = im.size
        im.seek(im.n_frames - 1)
        last = np.asarray(im.convert("RGB"))
        im.seek(0)
        first = np.asarray(im.convert("RGB"))
    x, y = int(round(px)), int(round(H - py))
    assert _red_near(last, x, y)
    # the point moved more than a marker size since the first frame: that pixel was not red then
    x0, y0 = anim.ax.transData.transform(anim.frames.point("V0.B")[anim.rows[0]])
    assert np.hypot(x0 - px, y0 - py) > 12
    assert not _red_near(first, x, y, r=0)


def test_bricard_strobe_figure(tmp_path, capsys):
    model = load_model("bricard")
    result = symgen.simulate(LambdifyKernels(model), t_end=0.2)
    npz, png = tmp_path / "bricard.npz", tmp_path / "bricard.png"
    result.save(npz)
    rc = main(["plot", str(npz), "--what", "mechanism", "-o", str(png)])
    assert rc == 0, capsys.readouterr().err
    with Image.open(png) as im:
        assert im.size[0] > 300 and im.size[1] > 300
    fig = draw.strobe_figure(result, model, snapshots=3)
    ax = fig.axes[0]
    assert ax.name == "3d"
    lines = ax.get_lines()
    assert len(lines) == 3 * len(model.drawing)
    # the last snapshot's first polyline starts at basic point P0 (ground) then P1 (moving)
    xs, ys, zs = lines[-len(model.drawing)].get_data_3d()
    p1 = [result.coord(f"P1.{a}")[-1] for a in "xyz"]
    np.testing.assert_allclose([xs[1], ys[1], zs[1]], p1, atol=1e-12)


def _raw_model(drawing=None):
    (x,), (xd,) = symgen.coordinates("x")
    k = sp.Symbol("k")
    outs = {"bob.x": x, "bob.y": sp.S.Zero}
    return symgen.Model("oscillator", [x], [[1]], [-k * x], params={k: 4.0}, outputs=outs,
                        x0=[1.0], settings=dict(method="newmark", dt=0.05, t_end=1.0),
                        drawing=drawing)


def test_raw_model_drawing_of_output_points(tmp_path):
    model = _raw_model([["bob", ("anchor", (0, 0))]])
    assert model.drawing[0][0][0] == "bob"
    result = symgen.simulate(LambdifyKernels(model))
    frames = draw.evaluate(model, result)
    np.testing.assert_allclose(frames.point("bob")[:, 0], result.coord("x"), atol=0)
    np.testing.assert_allclose(frames.point("anchor"), 0.0)
    with pytest.raises(symgen.ModelError, match="needs the outputs"):
        _raw_model([["nope"]])


def test_model_without_drawing_gives_one_line_error(tmp_path, capsys):
    model = _raw_model()
    assert model.drawing == ()
    result = symgen.simulate(LambdifyKernels(model))
    npz = tmp_path / "osc.npz"
    result.save(npz)
    src = tmp_path / "osc.py"
    src.write_text("import sympy as sp, symgen\n"
                   "def model():\n"
                   "    (x,), _ = symgen.coordinates('x')\n"
                   "    k = sp.Symbol('k')\n"
                   "    return symgen.Model('oscillator', [x], [[1]], [-k * x], params={k: 4.0},\n"
                   "        outputs={'bob.x': x, 'bob.y': sp.S.Zero}, x0=[1.0],\n"
                   "        settings=dict(method='newmark', dt=0.05, t_end=1.0))\n")
    rc = main(["animate", str(npz), "-o", str(tmp_path / "o.gif"), "--model", str(src)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "no drawing data" in err
    # without --model: the result names no shipped example
    rc = main(["animate", str(npz), "-o", str(tmp_path / "o.gif")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--model" in err
    assert not (tmp_path / "o.gif").exists()


def test_drawing_uses_the_run_parameters():
    # the pivot point of the stiff pendulum is (0, L) in body coordinates: with the run's L = 2
    # it stays on the ground pivot; with the default L = 1 it would be 1 m away
    model = load_model("stiff_pendulum")
    result = symgen.simulate(LambdifyKernels(model), t_end=1.0, params={"L": 2.0},
                             x0=[0.0, -2.0, 0.0])
    frames = draw.evaluate(model, result)
    np.testing.assert_allclose(frames.point("pendulum.pivot"), 0.0, atol=1e-9)
    np.testing.assert_allclose(np.hypot(*frames.point("pendulum.origin").T), 2.0, rtol=1e-9)


def test_drawing_validation():
    with pytest.raises(symgen.ModelError, match="mixes 2-D and 3-D"):
        _raw_model([[("a", (0, 0)), ("b", (0, 0, 1))]])
    with pytest.raises(symgen.ModelError, match="'x_dot'"):
        _raw_model([[("a", (sp.Symbol("x_dot"), 0))]])
    m = _raw_model([[("a", (sp.Symbol("x"), 0))]])
    assert m.replace(name="other").drawing == m.drawing


def test_mp4_needs_ffmpeg(dfb, tmp_path, capsys):
    from matplotlib import animation
    _, _, npz = dfb
    mp4 = tmp_path / "m.mp4"
    rc = main(["animate", str(npz), "-o", str(mp4), "--every", "10"])
    err = capsys.readouterr().err
    try:
        import imageio_ffmpeg  # noqa: F401
        have = True
    except ImportError:
        have = animation.writers.is_available("ffmpeg")
    if have:
        assert rc == 0, err
        assert mp4.read_bytes()[4:8] == b"ftyp"          # an MP4 container
    else:
        assert rc == 2 and err.count("\n") == 1 and "symgen[video]" in err
        assert not mp4.exists()


def test_model_pickles_with_its_drawing_and_stays_read_only():
    # symgen.sweep ships the Model to Dask workers by pickling: the read-only mappings of a
    # Model cannot be pickled as they are, so it pickles as its constructor arguments
    import pickle
    model = _raw_model([["bob", ("anchor", (sp.Symbol("k"), 0))]]).replace(xd0=[0.5])
    back = pickle.loads(pickle.dumps(model))
    assert back is not model and back.hash == model.hash
    assert back.drawing == model.drawing and back.drawing[0][1][1][0] == sp.Symbol("k")
    np.testing.assert_array_equal(back.xd0, [0.5])
    assert dict(back.params) == dict(model.params) and back.settings == model.settings
    with pytest.raises(ValueError):
        back.x0.setflags(write=True)                # still frozen after the round trip
    with pytest.raises(AttributeError, match="immutable"):
        back.drawing = ()
    with pytest.raises(TypeError):
        back.params[sp.Symbol("k")] = 1.0


def test_model_for_rebuilds_a_shipped_example_with_the_run_options():
    # N is a model() option of n_four_bar: the default (N = 40) has another hash, so the
    # drawing is found only by rebuilding the example with the options the run recorded
    model = load_model("n_four_bar", N=2)
    result = symgen.simulate(LambdifyKernels(model), dt=0.01, t_end=0.02,
                             meta={"model_options": {"N": 2}})
    found = draw.model_for(result)
    assert found.hash == model.hash and found.n == model.n
    frames = draw.evaluate(found, result)
    assert frames.dim == 2 and len(frames.lines) == len(model.drawing)


@pytest.mark.parametrize("flags", [["--fps", "1e9"], ["--speed", "1e-9"], ["--fps", "1e300"]])
def test_too_many_frames_is_one_line_naming_what_fits(dfb, tmp_path, capsys, flags):
    """Issue 27 (4): --fps 1e9 ran for minutes, --speed 1e-9 died of a MemoryError."""
    _, _, npz = dfb
    gif = tmp_path / "motion.gif"
    rc = main(["animate", str(npz), "-o", str(gif), *flags])
    err = capsys.readouterr().err
    assert rc == 2 and not gif.exists()
    assert len(err.strip().splitlines()) == 1
    assert f"more than the {draw.MAX_FRAMES}" in err and "try --fps" in err


def test_suggested_fps_speed_and_every_fit_the_limit():
    t = np.linspace(0.0, 3.0, 301)
    limit = 40
    with pytest.raises(draw.DrawingError) as info:
        draw.frame_rows(t, fps=1000.0, speed=1.0, limit=limit)
    words = str(info.value).split("try")[1].split()
    fps, speed, every = (float(words[words.index(f) + 1].rstrip(")")) for f in
                         ("--fps", "--speed", "--every"))
    # frames = span / speed * fps + 1 (both ends), every: ceil(rows / every)
    assert 3.0 / 1.0 * fps + 1 <= limit + 1e-9 and 3.0 / speed * 1000.0 + 1 <= limit + 1e-9
    assert len(draw.frame_rows(t, fps=fps, speed=1.0, limit=limit)) <= limit
    assert len(draw.frame_rows(t, fps=1000.0, speed=speed, limit=limit)) <= limit
    assert len(draw.frame_rows(t, every=int(every), limit=limit)) <= limit
    with pytest.raises(draw.DrawingError, match="try --every 8"):     # ceil(301 / 40)
        draw.frame_rows(t, every=1, limit=limit)


def test_gif_frame_limit_follows_the_memory_budget(monkeypatch):
    monkeypatch.setenv("SYMGEN_MEMORY_LIMIT", str(100 * 400 * 400 * 4))   # 100 frames of 400²
    assert draw.max_frames("a.gif", size=5.0, dpi=80.0) == 100
    assert draw.max_frames("a.mp4", size=5.0, dpi=80.0) == draw.MAX_FRAMES


def test_snapshots_are_capped_by_the_rows(dfb, tmp_path):
    # issue 38.7: --snapshots 1e9 on a short result made a 1e9-long linspace (52 s, 15.7 GB); the
    # count is capped by the rows.  A subprocess under a 3 GB address-space limit and a timeout,
    # so that today's code fails without taking the machine's memory.
    import resource
    import subprocess

    from test_cli import SYMGEN

    model, result, npz = dfb
    png = tmp_path / "m.png"

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    p = subprocess.run(SYMGEN + ["plot", str(npz), "--what", "mechanism", "--snapshots",
                                 "1000000000", "-o", str(png)], capture_output=True, text=True,
                       timeout=120, preexec_fn=limit)
    rows = len(result.t)
    assert p.returncode == 0, p.stderr
    assert f"{rows} snapshots" in p.stdout and f"the result has {rows} rows" in p.stdout
    assert png.stat().st_size > 0
    assert len(draw.snapshot_rows(rows, 10**9)) == rows
    assert list(draw.snapshot_rows(21, 3)) == [0, 10, 20]
