"""The compilation cache: what is compiled once, what is shared between
modules, what clear_cache forgets, and that nothing stale is reused."""

import gc
import threading
import uuid

import numpy as np
import pytest

import mlir_ad


def unique_source(tag=None):
    """A small program whose text no other test compiles."""
    tag = tag or uuid.uuid4().hex
    return f"""
// {tag}
func.func @f(%x: f64, %v: tensor<?xf64>, %n: index) -> f64 {{
  %c0 = arith.constant 0 : index
  %e = tensor.extract %v[%c0] : tensor<?xf64>
  %p = arith.mulf %x, %e : f64
  %s = math.sin %p : f64
  return %s : f64
}}

func.func @g(%x: f64) -> f64 {{
  %y = arith.mulf %x, %x : f64
  return %y : f64
}}
"""


V = np.array([0.5, 2.0])


def test_counter_counts_compilations():
    m = mlir_ad.compile(unique_source())
    start = mlir_ad.num_compilations()
    assert isinstance(start, int)
    m.g(1.0)
    assert mlir_ad.num_compilations() == start + 1
    m.g(2.0)
    assert mlir_ad.num_compilations() == start + 1
    mlir_ad.grad(m.g)(1.0)
    assert mlir_ad.num_compilations() == start + 2


def test_parsing_compiles_nothing():
    start = mlir_ad.num_compilations()
    m = mlir_ad.compile(unique_source())
    assert m.functions == ["f", "g"]
    m.f.signature, repr(m.f), m.f.differentiable_arguments
    assert mlir_ad.num_compilations() == start


def test_grad_twice_does_not_recompile():
    m = mlir_ad.compile(unique_source())
    g1 = mlir_ad.grad(m.f)
    start = mlir_ad.num_compilations()
    g2 = mlir_ad.grad(m.f)
    assert mlir_ad.num_compilations() == start
    (a1, b1), (a2, b2) = g1(0.3, V, 1), g2(0.3, V, 1)
    assert a1 == a2
    np.testing.assert_array_equal(b1, b2)
    mlir_ad.grad(m.f)(0.3, V, 1)
    assert mlir_ad.num_compilations() == start


def test_default_wrt_and_explicit_full_wrt_share_an_entry():
    m = mlir_ad.compile(unique_source())
    mlir_ad.grad(m.f)
    start = mlir_ad.num_compilations()
    g = mlir_ad.grad(m.f, wrt=(1, 0))
    assert mlir_ad.num_compilations() == start
    gx, gv = g(0.3, V, 1)
    assert gx == pytest.approx(np.cos(0.15) * 0.5)
    np.testing.assert_allclose(gv, [np.cos(0.15) * 0.3, 0.0])
    # A different set of positions, or another kind, is another entry.
    mlir_ad.grad(m.f, wrt=0)
    assert mlir_ad.num_compilations() == start + 1
    mlir_ad.value_and_grad(m.f, wrt=0)
    assert mlir_ad.num_compilations() == start + 2
    mlir_ad.vjp(m.f, wrt=0)
    # vjp compiles its entry and the call.
    assert mlir_ad.num_compilations() == start + 4


def test_same_text_compiled_twice_shares_entries():
    src = unique_source()
    m1 = mlir_ad.compile(src)
    m1.f(0.3, V, 1)
    mlir_ad.grad(m1.f)(0.3, V, 1)
    start = mlir_ad.num_compilations()
    m2 = mlir_ad.compile(src)
    assert m2.f(0.3, V, 1) == m1.f(0.3, V, 1)
    assert mlir_ad.grad(m2.f)(0.3, V, 1)[0] == mlir_ad.grad(m1.f)(0.3, V, 1)[0]
    assert mlir_ad.num_compilations() == start


def test_different_text_is_compiled_separately():
    m1 = mlir_ad.compile(unique_source())
    m1.g(3.0)
    start = mlir_ad.num_compilations()
    m2 = mlir_ad.compile(unique_source().replace("arith.mulf %x, %x", "arith.addf %x, %x"))
    assert m2.g(3.0) == 6.0
    assert m1.g(3.0) == 9.0
    assert mlir_ad.num_compilations() == start + 1


def test_rewritten_file_is_not_served_from_the_cache(tmp_path):
    path = tmp_path / "prog.mlir"
    path.write_text(unique_source())
    assert mlir_ad.compile(path).g(3.0) == 9.0
    path.write_text(unique_source().replace("arith.mulf %x, %x", "arith.subf %x, %x"))
    assert mlir_ad.compile(path).g(3.0) == 0.0


def test_clear_cache_keeps_entries_in_use():
    src = unique_source()
    m = mlir_ad.compile(src)
    g = mlir_ad.grad(m.g)
    assert g(2.0) == (4.0,)
    mlir_ad.clear_cache()
    start = mlir_ad.num_compilations()
    assert g(3.0) == (6.0,)
    assert m.g(3.0) == 9.0  # compiled now
    assert mlir_ad.num_compilations() == start + 1
    # A new module of the same text still finds the gradient, which is held.
    assert mlir_ad.grad(mlir_ad.compile(src).g)(1.0) == (2.0,)
    assert mlir_ad.num_compilations() == start + 1


def test_clear_cache_forgets_unused_entries():
    src = unique_source()
    m = mlir_ad.compile(src)
    m.g(1.0)
    del m
    gc.collect()
    mlir_ad.clear_cache()
    start = mlir_ad.num_compilations()
    m = mlir_ad.compile(src)
    assert m.g(5.0) == 25.0
    assert mlir_ad.num_compilations() == start + 1


def test_dynamic_shapes_do_not_recompile():
    m = mlir_ad.compile(unique_source())
    g = mlir_ad.grad(m.f, wrt=1)
    g(0.3, V, 0)
    start = mlir_ad.num_compilations()
    for n in (1, 2, 5, 100, 1000):
        v = np.linspace(1, 2, n)
        gv = g(0.3, v, 7)
        assert gv.shape == (n,)
        assert gv[0] == pytest.approx(np.cos(0.3) * 0.3)
        assert not gv[1:].any()
    assert mlir_ad.num_compilations() == start


def test_compilations_from_several_threads():
    sources = [unique_source() for _ in range(4)]
    results = [None] * 4
    errors = []

    def work(i):
        try:
            m = mlir_ad.compile(sources[i])
            results[i] = (m.g(float(i)), mlir_ad.grad(m.g)(float(i)))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results == [(float(i * i), (2.0 * i,)) for i in range(4)]
