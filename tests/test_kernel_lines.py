"""benchmarks/kernel_lines.py: compiled code is attributed to its function and to its own source lines."""

import shutil

import numba as nb
import numpy as np
import pytest

from tests.conftest import load_script

pytestmark = pytest.mark.skipif(any(shutil.which(t) is None for t in ("objdump", "addr2line")),
                                reason="needs binutils (objdump, addr2line)")


def _probe(a):
    s = 0
    for i in range(a.shape[0]):
        s += a[i] * 3
    return s


def test_samples_map_to_the_function_and_its_lines(tmp_path):
    kl = load_script("benchmarks/kernel_lines.py")
    f = nb.njit(debug=True)(_probe)  # compiled here (not cached): its object code is at hand
    assert f(np.arange(5, dtype=np.int64)) == 30
    ents = kl.dump_compiled(tmp_path)
    e = next(x for x in ents if x["name"] == "_probe" and x["obj"])
    assert (tmp_path / "entries.json").exists()
    off0, size, _section = kl._symbol_offset(e["obj"], e["symbol"])
    ips = list(range(e["addr"], e["addr"] + size))  # one sample at every byte of the function's code
    fn = kl.by_function(ents, ips)
    assert fn["_probe"] == size  # the function spans to the next entry (at least its own code)
    lines = kl.by_line(e, ips + [e["addr"] + size + 16, e["addr"] - 1])  # two outside: not counted
    assert sum(lines.values()) == size
    mine = sum(n for (_f, ln), n in lines.items() if e["first"] <= ln <= e["last"])
    assert mine > size // 2  # most of its code is its own lines (the rest: numba's argument checks, '?')
    body = e["first"] + 3  # `s += a[i] * 3`
    assert any(ln == body for (_f, ln) in lines)


def test_addresses_outside_compiled_code_are_reported_apart():
    kl = load_script("benchmarks/kernel_lines.py")
    ents = [{"addr": 1000, "name": "a"}, {"addr": 5000, "name": "b"}]
    c = kl.by_function(ents, [999, 1000, 4999, 5000, 5000 + (1 << 20)], span_cap=1 << 20)
    assert c == {"(not compiled code)": 2, "a": 2, "b": 1}
