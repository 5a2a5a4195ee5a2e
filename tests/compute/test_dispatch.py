"""Launch-order CTA dispatcher (t3sim/compute/dispatch.py; issue 12): unit tests."""

from __future__ import annotations

import pytest

from t3sim.compute.dispatch import CTAShape, CUDispatcher, cta_shape
from t3sim.config.gpu import GPUConfig
from t3sim.sim.engine import Engine


def _disp(num_cus=2, **gpu):
    eng = Engine(seed=0)
    g = GPUConfig.model_validate({"num_cus": num_cus, **gpu})
    return eng, CUDispatcher(eng, g)


def _body(env, log, name, ticks):
    def body(cu, i):
        log.append((name, i, cu, env.now))
        yield env.timeout(ticks)
    return body


def test_cta_shape_rounds_like_occupancy():
    g = GPUConfig()
    s = cta_shape(g, wfs_per_wg=8, registers_per_thread=100, lds_per_wg_B=1000)
    assert s.threads == 256
    assert s.registers == 8 * 3328  # 100 x 32 = 3200 -> 13 x 256
    assert s.lds_B == 1024


def test_fifo_later_kernel_waits_for_earlier_ctas():
    """Kernel A's 4 big CTAs (one per CU) occupy 2 CUs in two waves; B (launched later, small) may only start
    once A's last CTA is placed, then shares CUs where room is left."""
    eng, d = _disp(2)
    env = eng.env
    log = []
    big = CTAShape(threads=1024, registers=65536, lds_B=0)  # a whole register file
    small = CTAShape(threads=32, registers=256, lds_B=0)
    a = d.launch("A", big, 4, _body(env, log, "A", 100))
    b = d.launch("B", small, 2, _body(env, log, "B", 10))
    done = env.all_of([a.done, b.done])
    done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    starts = {(n, i): t for n, i, _cu, t in log}
    assert [starts[("A", i)] for i in range(4)] == [0, 0, 100, 100]
    # not before A's last CTA is placed (t=100), and then only where room is left: A's CTAs hold every
    # register, so B starts when A's second wave ends
    assert [starts[("B", i)] for i in range(2)] == [200, 200]
    assert a.end_tick == 200 and b.end_tick == 210


def test_ctas_share_a_cu_when_resources_allow():
    eng, d = _disp(1)
    env = eng.env
    log = []
    half = CTAShape(threads=1024, registers=32768, lds_B=0)
    a = d.launch("A", half, 1, _body(env, log, "A", 100))
    b = d.launch("B", half, 1, _body(env, log, "B", 100))
    done = env.all_of([a.done, b.done])
    done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    assert [t for *_x, t in log] == [0, 0]
    assert d.free_resources(0) == (2048, 65536, d.cap[2], 32)  # everything returned


def test_round_robin_spreads_ctas():
    eng, d = _disp(4)
    env = eng.env
    log = []
    k = d.launch("A", CTAShape(32, 256, 0), 4, _body(env, log, "A", 5))
    k.done.callbacks.append(lambda _e: eng.finish())
    eng.run()
    assert sorted(cu for _n, _i, cu, _t in log) == [0, 1, 2, 3]


def test_oversized_cta_rejected():
    eng, d = _disp(1)
    with pytest.raises(ValueError, match="does not fit"):
        d.launch("X", CTAShape(threads=4096, registers=1, lds_B=0), 1, lambda cu, i: iter(()))
