"""What app.calc names on the calculator pages, marked for translation.

app.calc stays pure (no web, no i18n): its labels are plain English, and the JSON API under
/api/ answers with them as they are. This list marks each one with N_() so that `scripts/i18n
extract` finds it; the templates translate it where they show it, with the `|t` filter
(app.i18n.translate), in the language of the request. tests/test_i18n.py checks that every
label app.calc defines is here, so a new one cannot stay English on a Chinese page unnoticed.
"""

from __future__ import annotations

from app.i18n import N_

SHOWN_BY_APP_CALC = (
    # Form fields, as app.calc.*_query.LABELS names them in error messages
    N_("Model"),
    N_("Data parallel (DP)"),
    N_("Tensor parallel (TP)"),
    N_("Pipeline parallel (PP)"),
    N_("Expert parallel (EP)"),
    N_("Context parallel (CP)"),
    N_("ZeRO stage"),
    N_("Sequence parallel"),
    N_("Sequence length"),
    N_("Micro-batch size"),
    N_("Micro-batches per step"),
    N_("DDP copies gradients into its buckets"),
    N_("Data type on the wire"),
    N_("Collective"),
    N_("Ranks N"),
    N_("Size S (MB)"),
    N_("Link"),
    N_("DP link"),
    N_("TP link"),
    N_("PP link"),
    N_("EP link"),
    N_("CP link"),
    N_("Compute time per step (s)"),
    N_("Parameters N"),
    N_("Layers l"),
    N_("Hidden size h"),
    N_("Vocabulary V"),
    N_("Sequence length s"),
    N_("Tokens D"),
    N_("Mode"),
    N_("Attention term"),
    N_("Batch size B (sequences)"),
    N_("Accelerator"),
    N_("Precision"),
    N_("Utilization (HFU)"),
    N_("Price per GPU-hour"),
    N_("Measured tokens/s"),
    N_("GPUs (or nodes) n"),
    N_("Failure rate given as"),
    N_("Failure rate"),
    N_("Window w (hours)"),
    N_("Run length (days)"),
    N_("Checkpoint time C (minutes)"),
    N_("Restart time R (minutes)"),
    N_("Your checkpoint interval (minutes)"),
    N_("Layers L"),
    N_("Attention heads a"),
    N_("KV heads k"),
    N_("Head dim d"),
    N_("FFN size"),
    N_("Weights dtype"),
    N_("KV cache dtype"),
    N_("Tensor parallel t"),
    N_("Context s (tokens per sequence)"),
    N_("Batch b (sequences)"),
    N_("Runtime overhead (GB)"),
    N_("As a GPU reports it"),
    N_("GPU memory utilisation u"),
    N_("Units"),
    N_("Schedule"),
    N_("Pipeline stages p"),
    N_("Micro-batches m"),
    N_("Model chunks per stage v"),
    N_("Forward time F"),
    N_("Input-gradient time B"),
    N_("Weight-gradient time W"),
    N_("Send/receive time"),
    N_("Compare all four"),
    N_("KV heads"),
    N_("Head dim"),
    N_("FFN type"),
    N_("Norm"),
    N_("Learned positions"),
    N_("Experts"),
    N_("Top-k"),
    N_("Shared experts"),
    N_("Layout DP"),
    N_("Layout TP"),
    N_("Layout PP"),
    N_("Layout EP"),
    N_("Layout CP"),
    N_("Layout ZeRO stage"),
    N_("Optimizer"),
    N_("Layout micro-batch"),
    N_("Layout recompute"),
    N_("Layout schedule"),
    N_("Layout virtual stages"),
    N_("Bucket size (MB)"),
    N_("ZeRO-3 prefetch (layers)"),
    N_("GPU type"),
    N_("Published run"),
    N_("GPUs per node"),
    N_("Nodes"),
    N_("Link inside a node"),
    N_("Link between nodes"),
    N_("Global batch (tokens)"),
    N_("Token budget"),
    N_("FlashAttention"),
    N_("Uneven pipeline stages"),
    N_("Matmul efficiency"),
    N_("Layouts listed"),
    N_("Performance profile"),
    N_("Layout distributed optimizer"),
    N_("Operation"),
    N_("Batch B (tokens)"),
    N_("Elements N"),
    N_("Recompute"),
    N_("Pipeline schedule"),
    N_("Virtual stages"),
    # app.calc.communication_query.STRATEGY_LABELS
    N_("Data parallel"),
    N_("Tensor parallel"),
    N_("Pipeline parallel"),
    N_("Expert parallel"),
    N_("Context parallel"),
    # Collectives, as app.calc.comm_volume labels them
    N_("All-gather (SP: 2 forward + 2 backward per layer)"),
    N_("All-reduce (2 forward + 2 backward per layer)"),
    N_("All-to-all (dispatch + combine, forward and backward)"),
    N_("Expert gradient all-reduce"),
    N_("Expert gradient reduce-scatter"),
    N_("Expert gradient reduce-scatter, every micro-batch"),
    N_("Expert updated-weight all-gather"),
    N_("Expert weight all-gather, backward"),
    N_("Expert weight all-gather, forward"),
    N_("Gradient all-reduce"),
    N_("Gradient reduce-scatter"),
    N_("Gradient reduce-scatter, every micro-batch"),
    N_("K,V ring pass (forward, and again in backward)"),
    N_("Reduce-scatter (SP: 2 forward + 2 backward per layer)"),
    N_("Send activation gradients (backward)"),
    N_("Send activations (forward)"),
    N_("Updated-weight all-gather"),
    N_("Weight all-gather, backward"),
    N_("Weight all-gather, forward"),
    N_("dK,dV ring pass (backward)"),
    # app.calc.pipeline.SCHEDULE_NAMES
    N_("GPipe (all forward, all backward)"),
    N_("1F1B (PipeDream-Flush)"),
    N_("Interleaved 1F1B"),
    N_("Zero bubble ZB-H1"),
    # Where the planner places a parallel group (app.calc.planner.comm_costs)
    N_("intra-node"),
    N_("inter-node"),
    # Memory terms (app.calc.training, app.calc.inference); a term on the CPU or of one dtype adds
    # " (CPU)" or " (bf16)", which app.i18n.translate keeps as it is
    N_("Weights"),
    N_("Gradients"),
    N_("Master weights"),
    N_("Optimizer states"),
    N_("Activations"),
    N_("CUDA context, NCCL and allocator overhead"),
    N_("Loss temporaries beyond the fp32 logits"),
    N_("NCCL buffers"),
    N_("Reserved by the caching allocator"),
    N_("Communication buffers"),
    N_("ZeRO-3 gathered parameters and gradients"),
    N_("Gradient bucket"),
    N_("Gradient buckets (views of the gradients)"),
    N_("Gradient buckets (a copy of the gradients)"),
    N_("KV cache"),
    N_("Runtime overhead"),
    # app.calc.memory.ZERO_STAGE_NAMES
    N_("DDP (no sharding)"),
    N_("ZeRO-1 (P_os)"),
    N_("ZeRO-2 (P_os+g)"),
    N_("ZeRO-3 (P_os+g+p)"),
    # app.calc.flops.MODE_LABELS
    N_("Training (6N: forward + backward)"),
    N_("Training, full recompute (8N: + one forward)"),
    N_("Inference (2N: forward only)"),
    N_("Training, selective recompute (6N + attention's core once more)"),
    # app.calc.hardware.DTYPE_LABELS
    N_("FP32 (no Tensor Cores)"),
    N_("TF32 (FP32 storage)"),
    N_("BF16 / FP16"),
    N_("FP8"),
    N_("INT8"),
    # app.calc.roofline_query.OPERATIONS
    N_("Matmul X[B, D] · Y[D, F]"),
    N_("Elementwise add of N elements"),
    N_("Dot product of two N-vectors"),
    # app.calc.failures_query.RATE_KINDS
    N_("MTBF per unit, hours"),
    N_("failures per unit per month (30 days)"),
    N_("failures per unit per day"),
    # app.calc.failures_query: checkpoint size and kinds of unit in series (LABELS,
    # OPTIMIZERS, SERIES_RATE_KINDS, SERIES_KINDS)
    N_("Parameters"),
    N_("Weights saved as"),
    N_("fp32 master weights"),
    N_("Optimizer"),
    N_("Optimizer state dtype"),
    N_("Writers N"),
    N_("Aggregate write bandwidth (GB/s)"),
    N_("Device-to-host bandwidth per writer (GB/s)"),
    N_("Rates of the kinds given as"),
    N_("GPUs"),
    N_("GPU rate"),
    N_("Hosts"),
    N_("Host rate"),
    N_("Network units"),
    N_("Network unit rate"),
    N_("Other units"),
    N_("Other unit rate"),
    N_("Adam (m and v)"),
    N_("SGD with momentum"),
    N_("none (weights only)"),
    N_("annual failure rate per unit, in percent"),
    N_("GPU"),
    N_("host"),
    N_("network"),
    N_("other"),
    # app.calc.precision.RECIPES
    N_("fp32 weights and gradients, no master copy"),
    N_("mixed precision: fp16 weights and gradients, fp32 master weights"),
    N_("mixed precision: bf16 weights and gradients, fp32 master weights"),
    N_("pure bf16: bf16 weights and gradients, no master copy"),
    N_("Megatron-LM: bf16 weights, fp32 main gradients, fp32 master weights"),
    N_(
        "DeepSpeed bf16: bf16 weights and gradients, a whole fp32 gradient copy, fp32 master "
        "weights"
    ),
    N_(
        "FP8 (Transformer Engine, Hopper): bf16 weights + FP8 copy and transpose, bf16 "
        "gradients, fp32 master weights"
    ),
    N_(
        "FP8 primary weights (TE quantized_model_init): FP8 weights and transpose, bf16 "
        "gradients, fp32 master weights"
    ),
    N_("FP8 as DeepSeek-V3: FP8 weights for the GEMMs, fp32 gradients, fp32 master weights"),
    # app.calc.precision.OPTIMIZERS
    N_("Adam / AdamW (fp32 momentum and variance)"),
    N_("SGD with momentum (fp32 momentum buffer)"),
    N_("8-bit Adam (bitsandbytes, block-wise quantized m and v)"),
    N_("Adam with bf16 momentum and variance (DeepSeek-V3)"),
    # app.calc.precision.conventions(): label and explanation
    N_("10 B: bf16 weights + fp32 Adam moments"),
    N_(
        "Counts only what lives for the whole step: 2 B bf16 weights + 8 B Adam m and v. No "
        "master copy, and gradients are not counted."
    ),
    N_("16 B: ZeRO paper, mixed-precision Adam"),
    N_(
        "2 B 16-bit weights + 2 B 16-bit gradients + K = 12 B (4 B fp32 master weights + 8 B Adam "
        "m and v)."
    ),
    N_("18 B: Megatron-LM, bf16 weights with fp32 main gradients"),
    N_(
        "Megatron accumulates gradients in an fp32 main-gradient buffer: 2 B bf16 weights + 4 B "
        "fp32 grads + 4 B fp32 master + 8 B Adam. Its distributed optimizer shards master + Adam: "
        "6 + 12/d."
    ),
    N_("18 B: DeepSpeed ZeRO-2 estimator's sharded part (2P + 18P/N)"),
    N_(
        "A different 18: 2 B fp16 grads + 4 B fp32 grads + 4 B fp32 master + 8 B Adam, all "
        "divided by N; the 2 B fp16 weights stay whole, so one GPU (N = 1) needs 20 B."
    ),
    N_("20 B: mixed precision with fp32 gradient accumulation"),
    N_(
        "The 16 B of mixed-precision Adam plus a 4 B fp32 copy of the gradients for accumulation "
        "('+4Ψ'). Megatron's fp16-params/fp16-grads row is also 20 (4 + 16/d with the distributed "
        "optimizer)."
    ),
)

# A source column's own words between its citations ("; "), as app.calc writes them
# (app.calc.precision, app.calc.training): the templates' |sources filter says each in the
# reader's language (app.i18n.translate_source) and leaves the citations as they are.
SOURCE_WORDS = (
    N_("none: the weights are already fp32"),
    N_("none: pure bf16 updates the bf16 weights directly"),
    N_("fp32 weights (4 B)"),
    N_("fp32 gradients (4 B)"),
    N_("bf16 weights (2 B)"),
    N_("bf16 gradients (2 B)"),
    N_("No data-parallel peers: no gradient buckets or gathers"),
    N_("Psi = this GPU's parameters before ZeRO"),
    N_("with optimizer offload the gradient shard lives in CPU memory"),
    N_("one reduce bucket of the size given"),
    N_(
        "gradients are views into the all-reduce buckets: Megatron-LM's contiguous gradient "
        "buffer, or torch DDP with gradient_as_bucket_view=True"
    ),
    N_(
        "torch DDP's default, gradient_as_bucket_view=False: every gradient is copied into a "
        "flat bucket built with the model and kept for its lifetime"
    ),
    N_("~0.5 GB per NCCL communicator"),
    N_("an editable estimate"),
    N_("editable"),
    N_("definition"),
)

# The built-in performance profiles' titles (app.calc.published_runs.PROFILE_TITLES): whole
# where the planner's result names its profile, up to the bracket in the planner's select
# (app.calculators.calibration_view.short_title)
PROFILE_TITLES = (
    N_(
        "Megatron-LM and Megatron-style runs (Megatron-LM, Korthikanti et al., Nemotron-4, "
        "Llama 3), A100 and H100"
    ),
    N_("Megatron-LM and Megatron-style runs"),
    N_(
        "ZeRO-style data parallelism on A100 (MT-NLG's DeepSpeed, BLOOM's Megatron-DeepSpeed, "
        "OPT's FSDP)"
    ),
    N_("ZeRO-style data parallelism on A100"),
)
