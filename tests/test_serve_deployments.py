"""serve_deployments: several deployments' serve() sweeps solved together equal the separate sweeps."""

import pandas as pd
import pytest

from llm_roofline.errors import RooflineError
from llm_roofline.serve import serve, serve_deployments

MODEL = "meta-llama/Llama-3.1-8B"


def test_solved_together_equals_separate_sweeps():
    kw = dict(prompt_len=[512, 2048], gen_len=128, max_num_seqs=[64, 256], max_num_batched_tokens=[2048, 8192])
    deps = [dict(chip="h100-sxm", tp=1, qps=[0.5, 2.0, 8.0]), dict(chip="a100-80gb", tp=2, pp=2, qps=[1.0, 30.0])]
    together = serve_deployments(MODEL, deps, **kw)
    for dep, got in zip(deps, together):
        alone = serve(MODEL, **{**kw, **dep, "chip": [dep["chip"]]}, uncertainty=False)
        pd.testing.assert_frame_equal(got, alone, check_exact=False, rtol=1e-12)


def test_a_failing_deployment_is_returned_not_raised():
    out = serve_deployments(MODEL, [dict(chip="h100-sxm", tp=3, concurrency=[4]),  # 32 heads over tp 3
                                    dict(chip="h100-sxm", tp=1, concurrency=[4])], prompt_len=512, gen_len=64)
    assert isinstance(out[0], RooflineError)
    assert len(out[1]) == 1 and out[1]["tp"].iloc[0] == 1
    with pytest.raises(RooflineError):
        serve(MODEL, "h100-sxm", tp=3, concurrency=4)


def test_only_fitting_leaves_out_a_deployment_with_no_room_for_a_sequence():
    # DeepSeek-V3 (~690 GB of fp8 weights) on one tp=8 group of 80 GB H100s (576 GB usable): no KV room at all
    deps = [dict(chip="h100-sxm", tp=8, ep=8, qps=[1.0]), dict(chip="h200", tp=8, ep=8, qps=[1.0])]
    full = serve_deployments("deepseek-ai/DeepSeek-V3", deps, prompt_len=1024, gen_len=64)
    assert not full[0]["fits"].any() and full[1]["fits"].all()
    lean = serve_deployments("deepseek-ai/DeepSeek-V3", deps, only_fitting=True, prompt_len=1024, gen_len=64)
    assert lean[0] is None
    pd.testing.assert_frame_equal(lean[1], full[1], check_exact=False, rtol=1e-12)


def test_as_columns_holds_the_columns_of_each_deployments_own_serve_sweep():
    kw = dict(prompt_len=512, gen_len=64, max_num_seqs=[64, 256])
    deps = [dict(chip="h100-sxm", tp=1, qps=[0.5, 4.0]), dict(chip="a100-80gb", tp=2, qps=[1.0])]
    for dep, cols in zip(deps, serve_deployments(MODEL, deps, as_columns=True, **kw)):
        alone = serve(MODEL, **{**kw, **dep, "chip": [dep["chip"]]}, uncertainty=False)
        assert isinstance(cols, dict) and list(cols) == list(alone.columns)
        pd.testing.assert_frame_equal(pd.DataFrame(cols), alone, check_exact=False, rtol=1e-12)


def test_saturation_where_computes_the_saturation_rate_at_the_points_asked_only():
    # the same rate as the full sweep's where asked (prompts of 4096 tokens: not the grid's first workload), NaN
    # elsewhere; every other column unchanged
    import numpy as np

    kw = dict(prompt_len=[512, 4096], gen_len=64, max_num_seqs=[64, 256])
    deps = [dict(chip="h100-sxm", tp=1, qps=[0.5, 4.0]), dict(chip="a100-80gb", tp=2, qps=[1.0])]
    full = serve_deployments(MODEL, deps, as_columns=True, **kw)
    some = serve_deployments(MODEL, deps, as_columns=True, saturation_where=lambda c: c["prompt_len"] > 1000, **kw)
    for a, b in zip(full, some):
        asked = np.asarray(a["prompt_len"]) > 1000
        assert asked.any() and not asked.all()
        np.testing.assert_array_equal(b["saturation_requests_per_s"][asked], a["saturation_requests_per_s"][asked])
        assert np.isnan(b["saturation_requests_per_s"][~asked]).all()
        pd.testing.assert_frame_equal(pd.DataFrame(b).drop(columns="saturation_requests_per_s"),
                                      pd.DataFrame(a).drop(columns="saturation_requests_per_s"))


@pytest.mark.parametrize("load", ["qps", "concurrency"])
def test_p90_where_saturation_computes_the_ttft_p90_at_the_same_points_only(load):
    # the p90 the full sweep gives, bit for bit, where saturation_where asks (the last queueing pass again at those
    # points: every equation is per point), NaN elsewhere; every other column unchanged (open and closed loops)
    import numpy as np

    kw = dict(prompt_len=[512, 4096], gen_len=64, max_num_seqs=[64, 256])
    deps = [dict(chip="h100-sxm", tp=1, **{load: [0.5, 4.0]}), dict(chip="a100-80gb", tp=2, **{load: [1.0]})]
    where = lambda c: c["prompt_len"] > 1000  # noqa: E731
    full = serve_deployments(MODEL, deps, as_columns=True, saturation_where=where, **kw)
    some = serve_deployments(MODEL, deps, as_columns=True, saturation_where=where, p90_where_saturation=True, **kw)
    for a, b in zip(full, some):
        asked = np.asarray(a["prompt_len"]) > 1000
        assert asked.any() and not asked.all() and np.isfinite(a["ttft_p90_s"]).all()
        np.testing.assert_array_equal(b["ttft_p90_s"][asked], a["ttft_p90_s"][asked])
        assert np.isnan(b["ttft_p90_s"][~asked]).all()
        pd.testing.assert_frame_equal(pd.DataFrame(b).drop(columns="ttft_p90_s"),
                                      pd.DataFrame(a).drop(columns="ttft_p90_s"))


@pytest.mark.parametrize("bad", [dict(tp=[1, 2]), dict(chip=["h100-sxm", "a100-80gb"]), dict(dp=(1, 2))])
def test_a_deployment_with_a_list_of_chips_or_degrees_is_refused(bad):
    # serve() sweeps lists; serve_deployments takes one deployment per chip and sharding: tp=[1, 2] ended in
    # TypeError: unhashable type 'numpy.ndarray', a chip list in "unknown chip \"['h100-sxm', ...]\""
    with pytest.raises(RooflineError, match="must be one value each"):
        serve_deployments(MODEL, [{"chip": "h100-sxm", "qps": [1.0], **bad}],
                          prompt_len=512, gen_len=64)


def test_a_nan_prefix_hit_rate_is_named():
    # NaN passed the range check (NaN < 0 and NaN >= 1 are both False) and failed later as "chunk_tokens must be ..."
    with pytest.raises(RooflineError, match="prefix_hit_rate must be in"):
        serve(MODEL, "h100-sxm", prompt_len=512, gen_len=64, qps=1.0, prefix_hit_rate=float("nan"))


@pytest.mark.parametrize("deployments", [None, "abc", [3], ({"chip": "h100"}, None)])
def test_deployments_that_are_not_a_list_of_dicts_are_refused(deployments):
    # None and [3] ended in a TypeError; "abc" was read as the deployments "a", "b", "c"
    with pytest.raises(RooflineError, match="deployments must be a list of dicts"):
        serve_deployments("meta-llama/Llama-3.1-8B", deployments, prompt_len=100, gen_len=10, concurrency=[1])


def test_mixed_loops_unknown_arguments_and_bad_replica_counts_are_refused():
    # one queueing pass solves one kind of loop: a closed-loop and an open-loop deployment together are refused
    # (they raised KeyError: 'concurrency'); an unknown keyword is named, not ignored; dp is checked like tp
    with pytest.raises(RooflineError, match="mix closed-loop"):
        serve_deployments(MODEL, [dict(chip="h100-sxm", qps=[1.0]), dict(chip="h100-sxm", concurrency=[4])],
                          prompt_len=512, gen_len=64)
    with pytest.raises(RooflineError, match="bogus"):
        serve_deployments(MODEL, [dict(chip="h100-sxm", qps=[1.0])], bogus=3)
    for dp in (float("nan"), "2", 0):
        (out,) = serve_deployments(MODEL, [dict(chip="h100-sxm", dp=dp, qps=[1.0])], prompt_len=512, gen_len=64)
        assert isinstance(out, RooflineError) and "dp" in str(out)
        with pytest.raises(RooflineError, match="dp"):
            serve(MODEL, "h100-sxm", dp=dp, qps=1.0, prompt_len=512, gen_len=64)


@pytest.mark.parametrize("where,said", [
    (3, "saturation_where must be a function"),  # was TypeError: 'int' object is not callable
    (lambda cols: [True, False, True], "a bool mask of its 2 points"),  # was numpy's broadcast error
])
def test_a_bad_saturation_where_is_named(where, said):
    with pytest.raises(RooflineError, match=said):
        serve_deployments(MODEL, [dict(chip="h100-sxm", tp=1, qps=[1.0, 2.0])], saturation_where=where,
                          prompt_len=512, gen_len=64)


def test_a_bad_p90_where_saturation_and_a_bad_parts_memo_are_named():
    # a hostile flag or memo is a RooflineError naming it (was: a flag taken as truthy; parts="x": numpy's TypeError)
    import llm_roofline as lr
    from llm_roofline.graph import Phase

    with pytest.raises(RooflineError, match="p90_where_saturation must be True or False"):
        serve_deployments(MODEL, [dict(chip="h100-sxm", tp=1, qps=[1.0])], p90_where_saturation="yes")
    with pytest.raises(RooflineError, match="parts must be a dict"):
        lr.build_ops(lr.load_model(MODEL), Phase.prefill(1.0, 128.0), parts="x")
