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
        alone = serve(MODEL, **{**kw, **dep, "chip": [dep["chip"]]})
        pd.testing.assert_frame_equal(got, alone, check_exact=False, rtol=1e-12)


def test_a_failing_deployment_is_returned_not_raised():
    out = serve_deployments(MODEL, [dict(chip="h100-sxm", tp=3, concurrency=[4]),  # 32 heads over tp 3
                                    dict(chip="h100-sxm", tp=1, concurrency=[4])], prompt_len=512, gen_len=64)
    assert isinstance(out[0], RooflineError)
    assert len(out[1]) == 1 and out[1]["tp"].iloc[0] == 1
    with pytest.raises(RooflineError):
        serve(MODEL, "h100-sxm", tp=3, concurrency=4)
