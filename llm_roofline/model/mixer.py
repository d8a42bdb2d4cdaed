"""MixerSpec: a recurrent token mixer (state-space or linear attention) in place of softmax attention."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelConfigError
from .matrix import Matrix, check_kind

# a recurrent state's storage as configs name it (mamba_ssm_cache_dtype, xLSTM's inference_state_dtype) -> ours
STATE_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
MIXER_KINDS = ("mamba1", "mamba2", "gated_deltanet", "kda", "lightning", "short_conv", "mlstm", "rglru")


@dataclass(frozen=True)
class MixerSpec:
    """A recurrent token mixer with a fixed-size state per sequence, in place of softmax attention.

    mamba2 (SSD: Mamba-2, Nemotron-H, Bamba, Codestral-Mamba): n_heads heads of head_dim channels; x, B, C from one
    in_proj with z (the output gate) and dt; B and C shared by the heads of each of n_groups groups; state
    (head_dim x state_dim) per head. gated_deltanet (Qwen3-Next): n_heads value heads of head_dim, n_groups key heads
    of state_dim (q and k); in_proj_qkvz + in_proj_ba (beta, decay); state (state_dim x head_dim) per value head.
    Both: a depthwise causal conv1d of conv_kernel taps over conv_dim = inner + 2*n_groups*state_dim channels, a gated
    RMSNorm on the output, out_proj back to d_model.
    mamba1 (Mamba, Falcon-Mamba, Jamba): every inner channel is its own "head" (head_dim 1) with a state of state_dim;
    no groups (B, C come from x_proj after the conv: conv_dim = inner); x_proj (inner -> dt_rank + 2*state_dim) and
    dt_proj (dt_rank -> inner, with bias); output gated by silu(z) without a norm; Jamba adds RMSNorms on dt, B, C.
    lightning (MiniMax-Text-01 lightning attention): linear attention with a fixed per-head decay; q, k, v of n_heads
    heads (n_groups = n_heads key heads, state_dim = head_dim) and an output gate from one x, no conv (conv_kernel 0),
    an RMSNorm over the heads' output; state (head_dim x head_dim) per head.
    short_conv (LFM2): in_proj to B, C, x over n_heads = d_model channels (head_dim 1, no state: state_dim 0);
    B*x through a depthwise conv of conv_kernel taps, times C, out_proj; only the conv window is carried.
    kda (Kimi Delta Attention, Kimi-Linear): gated DeltaNet with a decay per channel: q, k, v of n_heads heads
    (n_groups = n_heads, state_dim = head_dim) and beta (per head) from x, the decay and the output gate each through
    a low-rank pair (d -> head_dim -> n_heads*head_dim: f_a/f_b, g_a/g_b); dt_bias per channel, A_log per head. With
    full_rank_gates (Ling-3.0) each is one projection from x instead (f_proj, g_proj: d -> n_heads*head_dim).
    mlstm (xLSTM's matrix LSTM, xLSTM-7B): lightning's shape with keys narrower than values: q, k of n_heads heads of
    state_dim (n_groups = n_heads), v and the output gate o of n_heads x head_dim, and an input and a forget gate per
    head (exponential gating: their biases are always built) from x, no conv, a LayerNorm per head over the output
    (its weight over inner_dim); state per head the matrix C (state_dim x head_dim), the normalizer n (state_dim) and
    the running max m (1).
    rglru (RecurrentGemma's recurrent block, Griffin): linear_y (the GELU output gate, z) and linear_x (d -> inner,
    with biases) from x; x through a depthwise conv of conv_kernel taps (with bias); the RG-LRU's input and recurrence
    gates from the conv output, each block-diagonal over n_heads blocks of head_dim (gate_proj: n_heads (head_dim x
    2*head_dim) blocks, with biases); a recurrent parameter per channel; a diagonal recurrence, one state value per
    channel (state_dim 1, no groups, no norm); linear_out (with bias) back to d.
    """

    kind: str  # MIXER_KINDS
    n_heads: int
    head_dim: int
    state_dim: int
    n_groups: int
    conv_kernel: int
    conv_bias: bool = False
    proj_bias: bool = False
    chunk_size: int = 64  # prefill runs the chunked (SSD / chunked delta rule) algorithm in chunks of this many tokens
    state_dtype: str | None = None  # storage of the recurrent state (mamba_ssm_cache_dtype); None: the KV dtype
    dt_rank: int = 0  # mamba1: rank of the dt projection
    dt_bc_norms: bool = False  # Jamba: RMSNorm weights on dt (dt_rank), B and C (state_dim each)
    rms_norm: bool = True  # the gated RMSNorm of mamba2 / lightning (Falcon-H1: mamba_rms_norm, often off)
    full_rank_gates: bool = False  # kda (Ling-3.0): the decay and the output gate straight from x (d -> inner)

    def __post_init__(self):
        check_kind("MixerSpec", self.kind, MIXER_KINDS)
        if self.full_rank_gates and self.kind != "kda":
            raise ModelConfigError(f"MixerSpec: full_rank_gates is KDA's, not {self.kind!r}'s")

    @property
    def inner_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels through the conv1d: x (or v) of inner_dim, and B, C (or q, k) of n_groups*state_dim each."""
        return self.inner_dim + 2 * self.n_groups * self.state_dim

    @property
    def gate_heads(self) -> int:
        """Per-head scalars from in_proj: dt (mamba2); beta and the decay a (gated DeltaNet); B (short conv, per
        channel); the input and forget gates (mlstm); none (mamba1: x_proj; lightning; rglru: its block-diagonal
        gate_proj)."""
        kinds = {"mamba1": 0, "mamba2": 1, "gated_deltanet": 2, "kda": 1, "lightning": 0, "short_conv": 1, "mlstm": 2,
                 "rglru": 0}
        return self.n_heads * kinds[self.kind]

    @property
    def low_rank(self) -> int:
        """kda: the rank of its decay and output-gate projections (head_dim; their first halves ride in in_proj); 0
        with full_rank_gates."""
        return self.head_dim if self.kind == "kda" and not self.full_rank_gates else 0

    def z_width(self, inner: int) -> int:
        """in_proj's outputs beside the conv channels and gates, for `inner` channels (all, or one chip's): the output
        gate z over them, or KDA's two low-rank inputs (the decay's and the gate's, whole on every chip), or with
        full-rank gates the decay and the gate over those channels."""
        if self.kind != "kda":
            return inner
        return 2 * inner if self.full_rank_gates else 2 * self.low_rank

    def weight_matrices(self, d_model: int) -> list[Matrix]:
        # in_proj: (d) -> z (z_width) + conv channels + per-head gates; out_proj: (inner) -> (d)
        z = self.z_width(self.inner_dim)
        mats = [Matrix("mixer.in_proj", d_model, z + self.conv_dim + self.gate_heads, self.proj_bias)]
        if self.kind == "mamba1":  # dt, B, C from the conv output; dt back up to the channels
            mats += [Matrix("mixer.x_proj", self.inner_dim, self.dt_rank + 2 * self.state_dim),
                     Matrix("mixer.dt_proj", self.dt_rank, self.inner_dim, bias=True)]
        if self.low_rank:  # kda's f_b, g_b: the decay and the output gate up from their rank to every channel
            mats += [Matrix("mixer.f_b_proj", self.low_rank, self.inner_dim),
                     Matrix("mixer.g_b_proj", self.low_rank, self.inner_dim)]
        if self.kind == "rglru":  # the input and recurrence gates: one (head_dim x 2*head_dim) block per head
            mats.append(Matrix("mixer.gate_proj", self.head_dim, 2 * self.head_dim, bias=True, count=self.n_heads))
        return mats + [Matrix("mixer.out_proj", self.inner_dim, d_model, self.proj_bias)]

    def extra_params(self) -> int:
        """conv1d weights (+ bias), per-head A_log and dt_bias (+ D for mamba2), the gated norm's weight (mamba2: over
        inner_dim; gated DeltaNet: one head_dim weight shared by the heads)."""
        conv = self.conv_dim * self.conv_kernel + (self.conv_dim if self.conv_bias else 0)
        return conv + self.per_head_params() + self.norm_params()

    def per_head_params(self) -> int:
        """A_log, dt_bias, D (mamba2); A_log, dt_bias (gated DeltaNet); A (channels x state_dim) and D (mamba1); A_log
        per head and dt_bias per channel (kda); the input and forget gates' biases (mlstm: always built, inside
        in_proj's bias when the projections have one); the recurrent parameter per channel (rglru)."""
        if self.kind == "mamba1":
            return self.n_heads * (self.state_dim + 1)
        if self.kind == "kda":
            return self.n_heads + self.inner_dim
        if self.kind == "mlstm":
            return 0 if self.proj_bias else 2 * self.n_heads
        if self.kind == "rglru":
            return self.inner_dim
        return self.n_heads * {"mamba2": 3, "gated_deltanet": 2, "lightning": 0, "short_conv": 0}[self.kind]

    def norm_params(self) -> int:
        """The gated RMSNorm's weight (mamba2, lightning: inner_dim; gated DeltaNet, KDA: head_dim); mLSTM's per-head
        LayerNorm weight (inner_dim); Jamba's dt, B, C norms."""
        if self.kind == "mamba1":
            return self.dt_rank + 2 * self.state_dim if self.dt_bc_norms else 0
        if self.kind in ("short_conv", "rglru") or not self.rms_norm:
            return 0
        return self.head_dim if self.kind in ("gated_deltanet", "kda") else self.inner_dim

    @property
    def gate_normed(self) -> bool:
        """Whether the output gate comes with an RMSNorm (not in Mamba-1 and LFM2's short conv)."""
        return self.kind in ("mamba2", "gated_deltanet", "kda", "lightning", "mlstm") and self.rms_norm

    @property
    def state_per_head(self) -> int:
        """Recurrent state elements of one head: the (head_dim x state_dim) matrix; mlstm adds its normalizer n
        (state_dim) and its running max m (1)."""
        return self.head_dim * self.state_dim + (self.state_dim + 1 if self.kind == "mlstm" else 0)
