"""Training estimates on the simulated fabrics: closed forms, plumbing, sweeps."""

import json

import pytest

from fredfab.model.timing_card import default_card
from fredfab.model.training import NPU, load_workload, workload_from_dict
from fredfab.sim.engines.training import DEFAULT_FABRICS, compare, estimate, sweep

TB = 1e12


def test_mp_exposure_matches_in_switch_closed_form():
    # MP2-DP10-PP1: every MP pair sits under one L1 switch of FRED-D, so each Megatron
    # All-Reduce is one in-switch flow: D / 3 TB/s plus 2 links + 1 switch of latency. With
    # PP = 1 every MP collective blocks the only stage: all of them are exposed. FRED sends
    # packets, one header flit per 8 payload flits: payload moves at 8/9 of the link.
    e = estimate(
        "transformer-17b",
        "fred-d",
        "MP2-DP10-PP1",
        samples_per_replica=2,
        microbatches=1,
    )
    assert e.ok
    s, h, b, L = 1024, 4256, 2, 78
    D = 2 * s * h * b
    n_ar = 4 * L + 1 + 1  # blocks, embedding forward, LM head backward
    t_ar = D / (3 * TB) + 2 * 10e-9 + default_card().latency_cycles / 1e9  # 1 GHz
    t_ar /= default_card().packet_costs.payload_fraction
    assert default_card().packet_costs.payload_fraction == pytest.approx(8 / 9)
    assert e.breakdown["mp"] == pytest.approx(n_ar * t_ar, rel=2e-3)
    assert sum(e.breakdown.values()) == pytest.approx(e.time, rel=1e-9)


def test_io_bound_streaming_matches_io_bandwidth():
    # Four 1 GB layers, no compute, pure DP over 20 NPUs, weight-streaming on FRED-D: each
    # load is an in-switch broadcast from the 18 I/O controllers at 128 GB/s each, each
    # gradient reduction the reverse; loads and reductions run back to back (N each). The
    # controllers' links carry packets too: payload at 8/9 of 128 GB/s (one header flit per
    # 8 payload flits).
    N, P = 4, 5e8
    wl = workload_from_dict(
        {
            "schema": "fred-workload/1",
            "name": "io-bound",
            "input_bytes": 0,
            "layers": [
                {
                    "name": "l",
                    "params": int(P),
                    "fwd_flops": 0,
                    "in_bytes": 0,
                    "out_bytes": 0,
                    "hbm_bytes": 0,
                    "repeat": N,
                }
            ],
            "training": {"strategy": "MP1-DP20-PP1", "execution": "weight-streaming"},
        }
    )
    # Reading a layer's weights from HBM is the only compute; make HBM fast enough to vanish.
    e = estimate(wl, "fred-d", samples_per_replica=1, npu=NPU(hbm_bandwidth=1e18))
    t = 2 * P / (18 * 128e9 * 8 / 9)
    assert e.time == pytest.approx(2 * N * t, rel=0.01)
    assert e.breakdown["weights"] == pytest.approx(e.time, rel=1e-4)


def test_a_slower_switch_card_slows_in_switch_collectives(tmp_path):
    card = {
        "schema": "fred-switch-timing/1",
        "generator": {"arch": "fred", "ports": 8},
        "simulator": "test",
        "latency_cycles": 7,
        "throughput": {
            k: {"ready": 0.5, "backpressure": 0.5}
            for k in ("all-reduce", "reduce", "multicast", "unicast")
        },
        "reconfiguration_cycles": 4,
        "config_load_cycles": 192,
    }
    path = tmp_path / "half.json"
    path.write_text(json.dumps(card))
    kw = dict(samples_per_replica=2, microbatches=1)
    base = estimate("transformer-17b", "fred-d", "MP2-DP10-PP1", **kw)
    half = estimate("transformer-17b", "fred-d", "MP2-DP10-PP1", timing_card=path, **kw)
    # Half throughput doubles the bandwidth term of every MP All-Reduce.
    assert half.breakdown["mp"] == pytest.approx(2 * base.breakdown["mp"], rel=0.01)
    assert half.timing_card == str(path)
    mesh = estimate("transformer-17b", "mesh", "MP2-DP10-PP1", timing_card=path, **kw)
    assert mesh.timing_card == ""  # a mesh has no switches
    # but its links carry the card's packets: the header flit it derives (1 per 8).
    assert mesh.payload_fraction == pytest.approx(8 / 9)


def test_compare_default_fabrics():
    res = compare("transformer-17b")
    assert [e.fabric for e in res.estimates] == list(DEFAULT_FABRICS)
    assert res.speedup(res.estimates[0]) == 1.0
    for e in res.estimates:
        assert e.ok and sum(e.breakdown.values()) == pytest.approx(e.time, rel=1e-9)
        # Same NPUs, same strategy: the busiest NPU computes the same on every fabric.
        assert e.breakdown["compute"] == pytest.approx(res.estimates[0].breakdown["compute"])


def test_does_not_fit_is_reported_not_estimated():
    # Pure DP with 40 GB of HBM: every NPU holds all 17.2 B parameters' FP16 weights and
    # gradients (ZeRO-2: 1/20 of them) and 1/20 of the Adam state: 2 + 2/20 + 12/20 bytes per
    # parameter = 46 GB before any activation.
    e = estimate("transformer-17b", "fred-d", "MP1-DP20-PP1", npu=NPU(hbm_bytes=40e9))
    assert e.status == "does-not-fit" and e.time is None and not e.breakdown
    p = sum(x.params for x in load_workload("transformer-17b").layers)
    assert e.memory.weights == pytest.approx(2 * p)
    assert e.memory.gradients == pytest.approx(2 * p / 20)
    assert e.memory.optimizer == pytest.approx(12 * p / 20)
    assert e.memory.recompute == "full"  # the last candidate tried
    assert "40 GB" in e.reason


@pytest.mark.parametrize(
    "workload, strategy, msg",
    [
        ("transformer-17b", "MP2-DP5-PP1", "equal"),
        ("resnet-152", "MP5-DP4-PP1", "channels"),  # ResNet channels split evenly only
        ("transformer-17b", "MP1-DP1-PP20", None),
        ("transformer-17b", "MP5-DP4-PP1", None),  # 28 heads split 6/5 (uneven)
    ],
)
def test_inapplicable_strategies(workload, strategy, msg):
    if msg is None:  # 20 stages of an 80-layer model are fine
        assert estimate(workload, "fred-c", strategy, microbatches=1).status
        return
    with pytest.raises(ValueError, match=msg):
        estimate(workload, "fred-c", strategy)


def test_placement_matters_on_the_mesh_only_where_groups_move():
    # DP groups consecutive (dp-mp-pp) vs the paper's MP-consecutive placement: on FRED-D
    # MP pairs then straddle L1 switches, so MP gets slower there.
    kw = dict(samples_per_replica=2, microbatches=1)
    paper = estimate("transformer-17b", "fred-d", "MP2-DP10-PP1", **kw)
    alt = estimate("transformer-17b", "fred-d", "MP2-DP10-PP1", placement="dp-mp-pp", **kw)
    assert alt.breakdown["mp"] > paper.breakdown["mp"]


def test_sweep_processes_agree_with_in_process():
    kw = dict(fabrics=["fred-b", "mesh"])
    one = sweep("resnet-152", processes=1, **kw)
    two = sweep("resnet-152", processes=2, **kw)
    key = lambda r: {(e.fabric, e.strategy): e.time for e in r.estimates}  # noqa: E731
    assert key(one) == key(two)
    # 18 factorisations of 20; ResNet splits channels (multiples of 64 and 1000 classes:
    # MP must divide 8), so MP 5, 10 and 20 are not applicable.
    assert len(one.estimates) + 2 * len(one.invalid) == 2 * 18
    assert {s.split("-")[0] for s, _ in one.invalid} == {"MP5", "MP10", "MP20"}
    best = one.best()
    for f, e in best.items():
        assert all(x.throughput <= e.throughput for x in one.estimates if x.fabric == f and x.ok)
    assert all(v >= 1 for v in one.spread().values())


def test_sweep_on_a_local_dask_cluster():
    distributed = pytest.importorskip(
        "distributed", reason="the 'cluster' extra (dask[distributed]) is not installed"
    )
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        res = sweep("resnet-152", fabrics=["fred-d"], scheduler=cluster.scheduler_address)
    ref = sweep("resnet-152", fabrics=["fred-d"], processes=1)
    assert {(e.strategy, e.time) for e in res.estimates} == {
        (e.strategy, e.time) for e in ref.estimates
    }
