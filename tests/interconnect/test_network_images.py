"""Homogeneous mode's elided images (:meth:`Network.elide_image`): a shadow-to-shadow send that mirrors GPU 0's
is not simulated, and its links report their images' statistics. Held against the same sends all simulated."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from t3sim.config import InterconnectConfig
from t3sim.interconnect.network import Network
from t3sim.sim.engine import Engine

sends = st.lists(st.tuples(st.integers(0, 3000),        # ns after the previous send of GPU 0
                           st.integers(1, 7),           # destination offset d (mod N)
                           st.integers(1, 40) .map(lambda k: 1024 * k)),  # bytes
                 min_size=1, max_size=12)


def _run(kind: str, n: int, schedule, elide: bool, **kw):
    """GPU 0 sends ``(dt, d, nbytes)`` after ``dt`` ns; at that instant every shadow ``j`` sends the same to
    ``j + d``, elided where the network allows it (``elide``) or simulated."""
    eng = Engine()
    net = Network(eng, InterconnectConfig(kind=kind, num_gpus=n, packet_size_B=4096, **kw))
    elided = [0]

    def program():
        for dt, d, nb in schedule:
            yield eng.env.timeout(dt * 1000)
            d = 1 + (d - 1) % (n - 1)
            net.send(0, d, nb)
            for j in range(1, n):
                p = (j + d) % n
                if p and elide and net.elide_image(j, p, nb):
                    elided[0] += 1
                else:
                    net.send(j, p, nb)

    eng.env.process(program())
    eng.env.run()
    net.check_conserved()
    return net.stats(eng.env.now).to_dict(), eng.env.now, elided[0]


@settings(max_examples=30, deadline=None)
@given(sched=sends, n=st.integers(3, 8))
def test_elided_images_give_the_simulated_statistics_on_a_full_mesh(sched, n):
    """Every shadow-to-shadow send on a full mesh is elided, and every statistic of every link (bytes, packets,
    busy time, queue depths and delays, the over-time bins) and every GPU's injected and delivered bytes are what
    simulating them gave; the run ends at the same tick."""
    full, t_full, _ = _run("direct", n, sched, elide=False)
    img, t_img, elided = _run("direct", n, sched, elide=True)
    assert elided == sum(sum(1 for j in range(1, n) if (j + 1 + (d - 1) % (n - 1)) % n) for _, d, _ in sched)
    assert img == full and t_img == t_full


@settings(max_examples=15, deadline=None)
@given(sched=sends, n=st.integers(3, 8), bidirectional=st.booleans())
def test_on_a_ring_the_statistics_are_the_simulated_ones(sched, n, bidirectional):
    """On a ring whatever is elided (a 3-GPU two-way ring is a full mesh) leaves every statistic as simulated."""
    full, t_full, _ = _run("ring", n, sched, elide=False, bidirectional=bidirectional)
    img, t_img, elided = _run("ring", n, sched, elide=True, bidirectional=bidirectional)
    assert img == full and t_img == t_full
    if n > 3 or not bidirectional:
        assert elided == 0  # every link lies on, or shares a route with, a route from or to GPU 0


def _mesh(n: int = 4):
    eng = Engine()
    return eng, Network(eng, InterconnectConfig(kind="direct", num_gpus=n))


def test_a_switch_never_elides():
    """Switch ports carry GPU 0's traffic too: the network is not rotation-invariant over GPU nodes only."""
    net = Network(Engine(), InterconnectConfig(kind="switch", num_gpus=4))
    assert not net.elide_image(1, 2, 4096)


def test_a_simulated_transfer_over_an_imaged_link_raises():
    _, net = _mesh()
    net.send(0, 1, 4096)
    assert net.elide_image(1, 2, 4096)
    with pytest.raises(RuntimeError, match="imaged link"):
        net.send(1, 2, 4096)


def test_a_link_that_carried_simulated_traffic_is_never_imaged():
    _, net = _mesh()
    net.send(1, 2, 4096)
    assert not net.elide_image(1, 2, 4096)


def test_a_mirror_that_is_not_the_image_fails_the_conservation_check():
    """Shadow 1 claims an image of 8 KiB where GPU 0 sent 4 KiB: check_conserved names the link."""
    eng, net = _mesh()
    net.send(0, 1, 4096)
    assert net.elide_image(1, 2, 8192)
    eng.env.run()
    with pytest.raises(AssertionError, match="gpu1_to_gpu2"):
        net.check_conserved()
