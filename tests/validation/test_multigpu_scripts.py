"""The multi-GPU measurement scripts (experiments/validation/multigpu/) without torch or a GPU: their torch-free
half (environment, NCCL settings, TUNING log parsing, slowest-rank median, CSV rows), the drivers end to end
with a stand-in for torchrun, and ``t3sim validate`` on the CSVs they write (setting columns simulated or listed
as not simulated, with the reason)."""

from __future__ import annotations

import csv
import importlib
import json
import sys
import textwrap

import pytest
import yaml

from tests.conftest import REPO, load_script

HERE = "experiments/validation/multigpu"
if str(REPO / HERE) not in sys.path:  # the scripts import their sibling modules by name, as on the GPU host
    sys.path.insert(0, str(REPO / HERE))
mc = importlib.import_module("multigpu_common")
ml = importlib.import_module("multigpu_launch")
SYS = "configs/systems/h200-4gpu.yaml"


def test_no_torch_needed():
    """The drivers and the torch-free modules import without torch (absent on this machine)."""
    for name in ("measure_collectives", "measure_asynctp", "measure_p2p_copy"):
        load_script(f"{HERE}/{name}.py")
    assert "torch" not in sys.modules


def test_required_environment_in_every_child():
    env = mc.child_env({"NCCL_ALGO": "Ring"}, base={"PATH": "/bin", "NCCL_NVLS_ENABLE": "1"})
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert env["NVSHMEM_DISABLE_NVLS"] == "1" and env["NCCL_ALGO"] == "Ring" and env["PATH"] == "/bin"
    with pytest.raises(ValueError, match="override"):
        mc.child_env({"NCCL_NVLS_ENABLE": "1"})
    e = {"NVSHMEM_DISABLE_NVLS": "0"}
    assert mc.apply_required_env(e) is e and e == mc.REQUIRED_ENV
    # run_all.sh exports them too, and each script sets them before torch is imported
    text = (REPO / HERE / "run_all.sh").read_text()
    assert all(f"{k}={v}" in text for k, v in mc.REQUIRED_ENV.items())


def test_settings():
    labels = [s.label for s in mc.settings_for(["reduce_scatter", "all_gather"])]
    assert labels == ["default", "Ring-LL", "Ring-LL128", "Ring-Simple"]  # no Tree RS/AG in NCCL
    labels = [s.label for s in mc.settings_for(mc.COLLECTIVES)]
    assert labels[-3:] == ["Tree-LL", "Tree-LL128", "Tree-Simple"]
    assert [s.label for s in mc.settings_for(mc.COLLECTIVES, dry_run=True)] == ["default", "Ring-LL128", "Tree-Simple"]
    tree = mc.parse_setting("Tree-Simple")
    assert tree.env() == {"NCCL_ALGO": "Tree", "NCCL_PROTO": "Simple"} and not tree.valid_for("reduce_scatter")
    assert mc.parse_setting("default").env() == {} and mc.parse_setting("algo-ll").env() == {"NCCL_PROTO": "LL"}
    assert mc.parse_setting("ring-SIMPLE").columns() == {"nccl_algo": "Ring", "nccl_proto": "Simple"}
    assert mc.sweep_sizes() == [4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24]
    with pytest.raises(ValueError, match="ALGO-PROTO"):
        mc.parse_setting("Ring")


LOG = """\
host:1:1 [0] NCCL INFO AllReduce: 4 Bytes -> Algo Ring proto LL channel{Lo..Hi}={0..0}
T3SIM-MARK {"collective": "reduce_scatter", "setting": "default", "size_mb": 4.0}
host:1:1 [0] NCCL INFO ReduceScatter: 1048576 Bytes -> Algo Ring proto LL128 channel{Lo..Hi}={0..15}
host:1:1 [0] NCCL INFO AllReduce: 4 Bytes -> Algo Ring proto LL channel{Lo..Hi}={0..0}
host:1:1 [0] NCCL INFO ReduceScatter: 1048576 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..15} comm 0x5
T3SIM-MARK {"collective": "reduce_scatter", "setting": "default", "size_mb": 24.0}
host:1:1 [0] NCCL INFO ReduceScatter: 6291456 Bytes -> Algo Ring proto Simple channel{Lo..Hi}={0..23} cgaClusterSize 1
T3SIM-MARK {"collective": "all_reduce", "setting": "default", "size_mb": 4.0}
host:1:1 [0] NCCL INFO 4194304 Bytes -> Algo 0 proto 2 time 30.5
"""


def test_tuning_log_parsing_and_choices():
    lines = mc.parse_tuning_log(LOG.splitlines())
    assert len(lines) == 6 and lines[0].mark is None
    assert (lines[1].collective, lines[1].nbytes, lines[1].choice, lines[1].channels) == (
        "reduce_scatter", 1 << 20, "Ring/LL128", 16)
    assert lines[-1].collective is None and lines[-1].choice == "Tree/Simple"  # older NCCL: numbers, no name
    assert mc.choices_for(lines, "reduce_scatter", 4, 4, setting="default") == ("Ring/LL128", 16)
    assert mc.choices_for(lines, "reduce_scatter", 24, 4) == ("Ring/Simple", 24)
    assert mc.choices_for(lines, "all_reduce", 4, 4) == ("Tree/Simple", None)
    assert mc.choices_for(lines, "all_gather", 4, 4) == ("", None)
    assert mc.choices_for(lines, "reduce_scatter", 4, 4, setting="Ring-LL") == ("Ring/LL128", 16)  # fallback
    # without markers (the log's order lost): the collective's per-rank byte count identifies the size
    bare = mc.parse_tuning_log(line for line in LOG.splitlines() if "T3SIM" not in line)
    assert mc.choices_for(bare, "reduce_scatter", 24, 4) == ("Ring/Simple", 24)
    assert mc.choices_for(bare, "reduce_scatter", 4, 4) == ("Ring/LL128", 16)
    two = mc.parse_tuning_log([LOG.splitlines()[1], LOG.splitlines()[2],
                               "x NCCL INFO ReduceScatter: 1048576 Bytes -> Algo Ring proto Simple"])
    assert mc.choices_for(two, "reduce_scatter", 4, 4)[0] == "Ring/LL128+Ring/Simple"


def test_rank_files_merge(tmp_path):
    raw = tmp_path / "x.json"
    for r in (1, 0):
        mc.rank_path(raw, r).write_text(json.dumps({
            "rank": r, "world_size": 2, "setting": "default", "dtype": "bf16", "error": "boom" if r else None,
            "results": [{"collective": "all_gather", "size_mb": 4.0, "times_us": [1.0 + r, 2.0]},
                        {"shape": {"op": "gemm_rs"}, "times_us": {"gemm": [1.0], "asynctp": [2.0]} if r == 0
                         else {"gemm": [3.0]}}]}))
    m = mc.merge_ranks(mc.read_rank_files(raw))
    assert m["results"][0] == {"collective": "all_gather", "size_mb": 4.0, "times_by_rank": [[1.0, 2.0], [2.0, 2.0]]}
    assert m["results"][1]["times_by_rank"] == {"gemm": [[1.0], [3.0]]}  # AsyncTP failed on rank 1: dropped
    assert m["errors"] == ["boom"] and m["setting"] == "default" and "rank" not in m
    mc.rank_path(raw, 1).unlink()
    mc.rank_path(raw, 0).write_text(json.dumps({"rank": 0, "world_size": 2, "results": []}))
    with pytest.raises(ValueError, match="world of 2"):
        mc.read_rank_files(raw)


def test_slowest_rank_median():
    times = [[10.0, 11.0, 30.0, 10.0], [12.0, 10.0, 10.0, 10.5]]
    assert mc.slowest_rank_per_run(times) == [12.0, 11.0, 30.0, 10.5]
    s = mc.summarize(times)
    assert s["median_us"] == 11.5 and s["runs"] == 4 and s["ranks"] == 2 and s["max_us"] == 30.0
    assert s["max_rank_median_us"] == 10.5
    with pytest.raises(ValueError, match="different numbers"):
        mc.slowest_rank_per_run([[1.0], [1.0, 2.0]])


def test_copy_window():
    copies = [[(0, 100), (100, 200), (200, 300), (300, 400)]]
    gemms = [(50, 150), (150, 250), (250, 350), (350, 450)]
    w = mc.copy_window_stats(gemms, copies, [50.0])
    assert w["gemms_inside"] == 3 and w["gemm_us"] == 100 and w["copies_inside"] == [2]
    assert w["copy_slowdown"] == 2.0
    assert "gemm_us" not in mc.copy_window_stats([(500, 600)], copies, [50.0])


def test_shapes_match_the_reference_and_the_models(repo):
    from t3sim.config.workload import ModelConfig
    from t3sim.workload.generate import kernel_for

    with open(repo / "experiments/validation/overlap_4gpu.csv") as f:
        ref = [(r["sublayer"], int(r["tp"]), int(r["M"]), int(r["N"]), int(r["K"])) for r in csv.DictReader(f)]
    mine = [(s.sublayer, s.tp, s.M, s.N, s.K) for s in mc.overlap_shapes(4, ["mega-gpt-2"], ["gemm_rs"])]
    assert mine == ref
    for name, m in mc.MODELS.items():
        y = yaml.safe_load((repo / "configs/models" / f"{name}.yaml").read_text())
        assert m == {"tokens": y["seq_len"] * y["batch"], "hidden": y["hidden_size"]}
    y = yaml.safe_load((repo / "configs/models/t-nlg.yaml").read_text())
    model = ModelConfig.model_validate({**y, "tp_degrees": [4]})
    for s in mc.overlap_shapes(4, ["t-nlg"]):
        k = kernel_for(model, 4, s.sublayer, direction=s.op)
        assert (k.M, k.N, k.K) == (s.M, s.N, s.K), s
    assert [(s.M, s.N, s.K) for s in mc.read_shapes(repo / "experiments/validation/gemm_copy_contention.csv")][0] == (
        16384, 3072, 384)


# ----------------------------------------------------------------------------------- CSVs and t3sim validate
def _raw_collectives(setting="default"):
    t = lambda base: [[base + i for i in range(20)], [base + 1 + i for i in range(20)]]  # noqa: E731
    return {"setting": setting, "world_size": 4, "dtype": "bf16",
            "results": [{"collective": "reduce_scatter", "size_mb": 4.0, "times_by_rank": t(40.0)},
                        {"collective": "reduce_scatter", "size_mb": 24.0, "times_by_rank": t(90.0)}]}


def test_collective_csv_is_read_by_validate(tmp_path):
    from t3sim.analysis.validation import read_measured
    from t3sim.analysis.validation_settings import split_rows

    rows = mc.collective_rows(_raw_collectives(), mc.parse_tuning_log(LOG.splitlines()))
    rows += mc.collective_rows(_raw_collectives("Ring-Simple"), [])
    p = mc.write_csv(tmp_path / "collectives_4gpu.csv", mc.COLLECTIVE_COLUMNS, rows)
    text = p.read_text().splitlines()
    assert text[0] == ",".join(mc.COLLECTIVE_COLUMNS)
    assert text[1] == "reduce_scatter,4,4,bf16,50.5,default,default,Ring/LL128,16,41.0,60.0,20"
    kind, measured = read_measured(p)
    assert kind == "collective" and len(measured) == 4
    keep, skip = split_rows(kind, measured)
    assert [r.fields["size_mb"] for r in keep] == [24, 4, 24]
    assert keep[0].label() == "reduce_scatter 4x 24 MiB bf16 [NCCL default: ran Ring/Simple]"
    assert keep[1].label() == "reduce_scatter 4x 4 MiB bf16 [NCCL_ALGO=Ring NCCL_PROTO=Simple]"
    (s,) = skip
    assert s.label.endswith("[NCCL default: ran Ring/LL128]") and s.measured == {"measured_us": 50.5}
    assert "Ring/LL128 (TUNING log)" in s.reason and "Ring/Simple kernel only" in s.reason


def test_overlap_csv_is_read_by_validate(tmp_path):
    from t3sim.analysis.validation import read_measured
    from t3sim.analysis.validation_settings import split_rows

    T = lambda us: [[us] * 20, [us + 1] * 20]  # noqa: E731
    raw = {"dtype": "bf16", "results": [
        {"shape": {"model": "m", "sublayer": "OP", "tp": 4, "M": 512, "N": 256, "K": 128, "op": "gemm_rs"},
         "times_by_rank": {"gemm": T(10), "rs": T(20), "sequential": T(30), "concurrent": T(25), "chunked": T(28),
                           "asynctp": T(22)}},
        {"shape": {"model": "m", "sublayer": "OP", "tp": 4, "M": 512, "N": 128, "K": 256, "op": "ag_gemm"},
         "times_by_rank": {"gemm": T(10), "ag": T(20), "sequential": T(30)}}]}
    rows = mc.overlap_rows(raw)
    assert [(r["op"], r["scheme"], r["pair_us"]) for r in rows] == [
        ("gemm_rs", "sequential", 31), ("gemm_rs", "asynctp", 23), ("ag_gemm", "sequential", 31)]
    p = mc.write_csv(tmp_path / "asynctp_4gpu.csv", mc.OVERLAP_COLUMNS, rows)
    kind, measured = read_measured(p)
    assert kind == "overlap"
    got = [(r.fields["op"], r.fields["what"], r.measured_us) for r in measured]
    assert got == [("gemm_rs", w, us) for w, us in (("gemm", 11), ("rs", 21), ("sequential", 31), ("concurrent", 26),
                                                  ("chunked", 29))] + [("gemm_rs", "asynctp", 23)] + [
        ("ag_gemm", w, us) for w, us in (("gemm", 11), ("sequential", 31), ("ag", 21))]
    keep, skip = split_rows(kind, measured)
    assert [(r.fields["op"], r.fields["what"]) for r in keep] == [
        ("gemm_rs", w) for w in ("gemm", "rs", "sequential", "concurrent", "chunked")] + [
        ("ag_gemm", "gemm"), ("ag_gemm", "ag")]
    assert [s.label.split()[-3:] for s in skip] == [["asynctp", "[gemm_rs", "asynctp]"],
                                                    ["sequential", "[ag_gemm", "sequential]"]]
    assert "AsyncTP" in skip[0].reason and "GEMM then a reduce-scatter" in skip[1].reason


def test_contention_csv_is_read_by_validate(tmp_path):
    from t3sim.analysis.validation import read_measured
    from t3sim.analysis.validation_settings import contention_not_simulated

    raw = {"rows": [{"shape": {"model": "m", "sublayer": "OP", "tp": 8, "M": 512, "N": 512, "K": 64},
                     "gemm_alone_us": 10.0,
                     "with": {"d2d1": {"gemm_us": 20.0, "copy_slowdown": 1.5}, "p2p_out": {"gemm_us": 11.0},
                              "p2p_in": {"gemm_us": 12.0, "copy_slowdown": 1.01}}}]}
    bgs = ["d2d1", "p2p_out", "p2p_in"]
    p = mc.write_csv(tmp_path / "gemm_p2p_copy.csv", mc.contention_columns(bgs), mc.contention_rows(raw),
                     mc.CONTENTION_DIGITS)
    assert p.read_text().splitlines()[1] == "m,OP,8,512,512,64,10.0,20.0,11.0,12.0,1.500,,1.010"
    kind, (row,) = read_measured(p)
    assert kind == "copy_contention" and row.fields["backgrounds"] == tuple(bgs)
    assert row.fields["gemm_with_d2d2_us"] is None and row.fields["copy_slowdown_p2p_out"] is None
    skip = contention_not_simulated([row], ("d2d1", "d2d2", "pcie"))
    assert [s.label.split()[-1] for s in skip] == ["p2p_out", "p2p_in"]
    assert skip[1].measured == {"gemm_alone_us": 10.0, "gemm_with_p2p_in_us": 12.0, "copy_slowdown_p2p_in": 1.01}
    assert "peer copies over NVLink" in skip[0].reason


# ------------------------------------------------------------------------ drivers with a stand-in for torchrun
FAKE_TORCHRUN = textwrap.dedent('''
    import json, os, pathlib, sys
    script, *argv = sys.argv[1:]
    args = argv[argv.index("--worker") + 1:]
    opt = {args[i]: args[i + 1] for i in range(0, len(args) - 1) if args[i].startswith("--") and not args[i + 1].startswith("--")}
    env = {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
                                          "NCCL_ALGO", "NCCL_PROTO", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS")}
    print("env", json.dumps(env), flush=True)
    raw = pathlib.Path(opt["--raw"])
    for rank in range(2):  # two ranks, each writing its own file as the workers do
        res = []
        if "measure_collectives" in script:
            for c in opt["--collectives"].split(","):
                for s in [float(x) for x in opt["--sizes"].split(",")]:
                    b = int(s * 2**20) // (1 if c == "all_reduce" else 2)
                    if rank == 0:
                        print("T3SIM-MARK " + json.dumps({"collective": c, "size_mb": s, "setting": opt["--setting"]}))
                        name = {"reduce_scatter": "ReduceScatter", "all_gather": "AllGather", "all_reduce": "AllReduce"}[c]
                        print(f"h:1:1 [0] NCCL INFO {name}: {b} Bytes -> Algo {os.environ.get('NCCL_ALGO', 'Ring')} "
                              f"proto {os.environ.get('NCCL_PROTO', 'Simple')} channel{{Lo..Hi}}={{0..23}}")
                    res.append({"collective": c, "size_mb": s, "times_us": [10.0 * s + rank] * 3})
            out = {"rank": rank, "setting": opt["--setting"], "world_size": 2, "dtype": "bf16", "results": res}
        else:
            sh = {"model": "dry", "sublayer": "OP", "tp": 2, "M": 1024, "N": 256, "K": 128}
            T = [5.0 + rank] * 3
            res = [{"shape": {**sh, "op": "gemm_rs"}, "times_us": {k: T for k in ("gemm", "rs", "sequential",
                                                                                   "concurrent", "chunked")}},
                   {"shape": {**sh, "op": "ag_gemm"}, "times_us": {k: T for k in ("gemm", "ag", "sequential")}}]
            out = {"rank": rank, "world_size": 2, "dtype": "bf16", "results": res, "checks": [],
                   "error": "asynctp needs >= 2 GPUs (test)" if rank == 1 else None}
        if rank == 0:
            out["versions"] = {"env": env}
        raw.with_name(f"{raw.stem}.rank{rank}.json").write_text(json.dumps(out))
''')


@pytest.fixture
def fake_torchrun(tmp_path, monkeypatch):
    fake = tmp_path / "fake_torchrun.py"
    fake.write_text(FAKE_TORCHRUN)
    monkeypatch.setattr(ml, "torchrun", lambda nproc: [sys.executable, str(fake)])
    monkeypatch.delenv("NCCL_ALGO", raising=False)
    return fake


def test_collectives_driver_end_to_end(tmp_path, fake_torchrun):
    mod = load_script(f"{HERE}/measure_collectives.py")
    out = tmp_path / "res"
    rc = mod.main(["--out", str(out), "--gpus", "2", "--dry-run", "--settings", "default,Ring-LL128,Tree-Simple"])
    assert rc == 0
    with open(out / "collectives_2gpu.csv") as f:
        rows = list(csv.DictReader(f))
    # Tree-Simple runs only the all-reduce (NCCL has no Tree RS/AG): 3 collectives x 2 sizes x 2 + 2
    assert len(rows) == 14 and {r["nccl_algo"] for r in rows if r["collective"] != "all_reduce"} == {"default", "Ring"}
    ll = [r for r in rows if r["nccl_proto"] == "LL128"]
    assert {r["nccl_choice"] for r in ll} == {"Ring/LL128"} and {r["nccl_channels"] for r in ll} == {"24"}
    assert rows[0]["median_us"] == "11.0" and rows[0]["runs"] == "3"
    log = (out / "logs" / "collectives_Ring-LL128.log").read_text()
    env = json.loads(log.split("env ", 1)[1].splitlines()[0])
    assert env == {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1",
                   "NCCL_ALGO": "Ring", "NCCL_PROTO": "LL128", "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "TUNING"}
    side = json.loads((out / "collectives_2gpu.env.json").read_text())
    assert [s["rc"] for s in side["settings"]] == [0, 0, 0] and "nvidia_smi_topo" in side["host"]


def test_asynctp_driver_one_gpu_exits_0(tmp_path, fake_torchrun):
    mod = load_script(f"{HERE}/measure_asynctp.py")
    out = tmp_path / "res"
    assert mod.main(["--out", str(out), "--gpus", "1", "--dry-run"]) == 0  # AsyncTP needs 2 GPUs: reported, exit 0
    with open(out / "asynctp_1gpu.csv") as f:
        rows = list(csv.DictReader(f))
    assert [(r["op"], r["scheme"]) for r in rows] == [("gemm_rs", "sequential"), ("ag_gemm", "sequential")]
    assert json.loads((out / "asynctp_1gpu.env.json").read_text())["asynctp_error"].startswith("asynctp needs >= 2")
    assert mod.main(["--out", str(out), "--gpus", "2", "--dry-run"]) == 1  # with 2 GPUs that is a failure


# ----------------------------------------------------------------------------------- t3sim validate, CLI
def test_validate_lists_rows_it_does_not_simulate(run_cli, tmp_path):
    """A collective CSV with pinned protocols: the Ring/Simple row is simulated, the LL row and the default row NCCL
    ran as LL128 are listed with their reasons (table, JSON, Markdown page, <stem>-not-simulated.csv)."""
    p = tmp_path / "coll.csv"
    p.write_text("collective,gpus,size_mb,dtype,median_us,nccl_algo,nccl_proto,nccl_choice\n"
                 "reduce_scatter,4,1,bf16,40.0,Ring,Simple,Ring/Simple\n"
                 "reduce_scatter,4,1,bf16,30.0,Ring,LL,\n"
                 "reduce_scatter,4,1,bf16,33.0,default,default,Ring/LL128\n")
    out = tmp_path / "o"
    rc, stdout, err = run_cli("validate", "--system", SYS, "--measured", str(p), "--out", str(out), "--json",
                              "--jobs", "1")
    assert rc == 0, err
    (res,) = json.loads(stdout)
    assert [r["nccl_proto"] for r in res["rows"]] == ["Simple"] and res["rows"][0]["simulated_us"] > 0
    assert list(res["by_column"]) == ["NCCL_ALGO=Ring NCCL_PROTO=Simple"]
    reasons = [n["reason"] for n in res["not_simulated"]]
    assert len(reasons) == 2 and "Ring/LL (NCCL_ALGO/NCCL_PROTO)" in reasons[0] and "Ring/LL128 (TUNING log)" in reasons[1]
    page = (out / "coll.md").read_text()
    assert "## Not simulated" in page and "| reduce_scatter 4x 1 MiB bf16 [NCCL_ALGO=Ring NCCL_PROTO=LL] |" in page
    with open(out / "coll-not-simulated.csv") as f:
        assert [r["measured_us"] for r in csv.DictReader(f)] == ["30.0", "33.0"]
    # the comparison CSV carries the setting columns and reads back
    from t3sim.analysis.validation import read_comparison

    back = read_comparison(out / "coll.csv", "h200")
    assert back.rows[0].fields["nccl_choice"] == "Ring/Simple"
    # every row outside the model: nothing simulated, exit 0, the listing written
    q = tmp_path / "ll.csv"
    q.write_text("collective,gpus,size_mb,dtype,median_us,nccl_algo,nccl_proto\nall_reduce,4,1,bf16,20.0,Tree,LL\n")
    rc, stdout, err = run_cli("validate", "--system", SYS, "--measured", str(q), "--out", str(out))
    assert rc == 0, err
    assert "no row the simulator represents" in stdout and "Tree/LL" in stdout
    assert (out / "ll-not-simulated.csv").exists() and "## Not simulated" in (out / "ll.md").read_text()


def test_validate_overlap_with_scheme_and_peer_copies(run_cli, tmp_path):
    """An AsyncTP overlap CSV: the GEMM and the all-gather alone are simulated, the AG-then-GEMM pair and the
    AsyncTP op are listed; a copy-contention CSV with peer copies only: the GEMM alone is simulated and every
    peer-copy value is listed."""
    p = tmp_path / "asynctp.csv"
    p.write_text(",".join(mc.OVERLAP_COLUMNS) + "\n"
                 "m,OP,4,512,128,256,bf16,ag_gemm,sequential,31.0,11.0,,21.0,31.0,,,20\n"
                 "m,OP,4,512,128,256,bf16,ag_gemm,asynctp,25.0,,,,,,,20\n")
    c = tmp_path / "p2p.csv"
    c.write_text(",".join(mc.contention_columns(["p2p_out", "p2p_in"])) + "\n" + "m,OP,8,512,512,64,10,11,12,1.01,\n")
    out = tmp_path / "o"
    rc, stdout, err = run_cli("validate", "--system", SYS, "--measured", str(p), "--measured", str(c),
                              "--out", str(out), "--json", "--jobs", "1")
    assert rc == 0, err
    ov, cont = json.loads(stdout)
    assert [(r["op"], r["what"]) for r in ov["rows"]] == [("ag_gemm", "gemm"), ("ag_gemm", "ag")]
    assert set(ov["by_column"]) == {"ag_gemm gemm", "ag_gemm ag"}
    assert [n["row"].split(" [")[0].split()[-1] for n in ov["not_simulated"]] == ["sequential", "asynctp"]
    assert cont["kind"] == "copy_contention" and cont["rows"][0]["gemm_alone_sim_us"] > 0
    assert [n["row"].split()[-1] for n in cont["not_simulated"]] == ["p2p_out", "p2p_in"]
    assert "## Not simulated" in (out / "p2p.md").read_text()
