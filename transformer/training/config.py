"""`TrainConfig`, every knob of a training run (each one a `python -m transformer.train` flag), and
`PRESETS`, the recipes of the checkpoints we ship."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainConfig:
    # data
    task: str = "multi30k"  # translation (alias: multi30k) | copy | reverse | sort
    corpora: tuple[str, ...] = ()  # NAME[:WEIGHT][=PATH], one --corpus each; none: multi30k at --data-dir
    data_dir: str | None = None  # the directory of the only corpus
    src_lowercase_prob: float = 0.0  # chance a training source is lowercased (the target never is)
    src_no_punct_prob: float = 0.0  # chance a training source loses its final punctuation
    rare_holdout: str = ""  # hold this corpus's rare-word split (rare_split.py) out of train; select on it too
    name_swap_copies: int = 0  # entity-swapped copies of each pair sharing a name (augment.py); 0: none
    number_swap_copies: int = 0  # entity-swapped copies of each pair sharing a number or clock time
    placeholder_copies: int = 0  # copies of each pair sharing an entity, with the entities as placeholders
    placeholder_numbering: str = "order"  # order: ⟨1⟩, ⟨2⟩ left to right, as the app reads; random: any of ⟨1⟩..⟨N⟩
    bpe_dropout: float = 0.0  # BPE-dropout (Provilkov et al. 2020) on training pairs (unseeded in tokenizers); 0: none
    src_lang: str = "en"
    tgt_lang: str = "de"
    vocab_size: int = 8000
    toy_symbols: int = 26
    toy_train_size: int = 20000
    toy_val_size: int = 500
    toy_min_len: int = 3
    toy_max_len: int = 12
    # model (ModelConfig names)
    d_model: int = 256
    n_heads: int = 8
    n_encoder_layers: int = 4
    n_decoder_layers: int = 4
    d_ff: int = 1024
    dropout: float = 0.1
    attention_dropout: float | None = None  # None: as dropout; 0.0 skips the (B, H, T, T) masks (faster on CPU)
    activation_dropout: float | None = None  # the FFN's hidden activation; None: as dropout
    norm_first: bool = True
    tie_embeddings: bool = True
    max_len: int = 256
    placeholders: int = 0  # placeholder tokens ⟨1⟩..⟨N⟩ after the tokenizer's vocabulary (transformer.placeholders)
    init_from: str = ""  # start from this checkpoint's weights and tokenizer (fine-tuning); "": from scratch
    # a taught head (word_links.py): decoder layer and head, 1-based, whose cross-attention learns eflomal's links
    align_layer: int = 0  # 0: no head is taught
    align_head: int = 0
    align_weight: float = 0.05  # the alignment loss's weight beside the translation loss (both summed over tokens)
    # optimisation
    max_tokens: int = 4096  # padded target/source tokens per batch, per process
    accum_steps: int = 1
    lr: float = 1e-3  # peak learning rate
    warmup_steps: int = 1000
    schedule: str = "inverse_sqrt"  # inverse_sqrt | cosine
    weight_decay: float = 0.0
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    max_epochs: int = 20
    max_steps: int = 0  # 0: no limit
    stop_at_step: int = 0  # stop (save, export) at this step; the schedule still runs over max_steps. 0: no stop
    max_minutes: float = 0.0  # wall-clock training budget across resumes; 0: none
    patience: int = 0  # epochs without a better validation score before stopping; 0: never
    precision: str = "auto"  # auto | bf16 | fp32: auto is bf16 autocast where there are bf16 units (hardware.py)
    fused: bool = True  # loss fused with the output projection (loss.py) and fused AdamW; False: the reference path
    cuda_graphs: str = "auto"  # auto | on | off: auto records each micro-batch shape as a CUDA graph on one GPU
    compile: str = "auto"  # auto | on | off: torch.compile the model inside the CUDA graphs; auto: for long runs
    # checkpoints and logging
    run_dir: str = "runs/multi30k-en-de"
    output: str = ""  # export the final model here (Hugging Face layout)
    save_every: int = 100  # optimizer steps between resume saves
    val_every: int = 0  # validate and snapshot every N optimizer steps instead of at epoch ends; 0: epochs
    learning_snapshots: str = ""  # "100,300,1000,...": steps whose float16 weights and val scores the export ships
    keep_last: int = 5  # epoch weight files kept
    average_last: int = 5  # epochs averaged into the final model (1: no averaging)
    half_precision: bool = True  # export float16 weights if validation moves by < 0.1
    val_batch_size: int = 128
    seed: int = 1
    device: str = "auto"
    threads: int = 0  # torch threads; 0: all cores
    progress: bool = True

    @property
    def snapshot_steps(self) -> set[int]:
        """The steps of `learning_snapshots`."""
        return {int(x) for x in self.learning_snapshots.replace(" ", "").split(",") if x}

    def __post_init__(self) -> None:
        try:
            steps = self.snapshot_steps
        except ValueError:
            raise ValueError(f"--learning-snapshots must be step numbers separated by commas, got "
                             f"{self.learning_snapshots!r}") from None
        if any(s < 1 for s in steps):
            raise ValueError(f"--learning-snapshots steps must be >= 1, got {self.learning_snapshots!r}")
        if self.placeholder_numbering not in ("order", "random"):
            raise ValueError(f"--placeholder-numbering must be order or random, got {self.placeholder_numbering!r}")
        if self.precision not in ("auto", "bf16", "fp32"):
            raise ValueError(f"--precision must be auto, bf16 or fp32, got {self.precision!r}")
        if self.cuda_graphs not in ("auto", "on", "off"):
            raise ValueError(f"--cuda-graphs must be auto, on or off, got {self.cuda_graphs!r}")
        if (self.align_layer > 0) != (self.align_head > 0):
            raise ValueError("--align-layer and --align-head go together (1-based), or neither")
        if self.align_layer and not 1 <= self.align_layer <= self.n_decoder_layers:
            raise ValueError(f"--align-layer must be 1..{self.n_decoder_layers}, got {self.align_layer}")
        if self.align_head and not 1 <= self.align_head <= self.n_heads:
            raise ValueError(f"--align-head must be 1..{self.n_heads}, got {self.align_head}")
        if self.compile not in ("auto", "on", "off"):
            raise ValueError(f"--compile must be auto, on or off, got {self.compile!r}")


PRESETS: dict[str, dict] = {
    "en-de": dict(  # the app's default: one recipe from step 0 (docs/model.md), on 2 CPU cores or a GPU
        task="translation", corpora=("tatoeba-en-de", "multi30k:2"), vocab_size=8000,
        rare_holdout="tatoeba-en-de",  # held out from the start: a clean measure of words the model never saw
        placeholders=8, placeholder_copies=2, placeholder_numbering="random", name_swap_copies=2, number_swap_copies=4, bpe_dropout=0.1,
        src_lowercase_prob=0.2, src_no_punct_prob=0.2,
        d_model=256, n_heads=8, n_encoder_layers=6, n_decoder_layers=4, d_ff=1024, dropout=0.1,
        attention_dropout=0.0, activation_dropout=0.0,  # the paper's sites only: faster on a CPU (docs/model.md)
        max_tokens=4096, accum_steps=2, lr=1e-3, warmup_steps=800, schedule="cosine", max_steps=10000,  # fits the CPU budget of docs/model.md
        max_epochs=1000, max_minutes=690, val_every=1000, patience=0, precision="auto", threads=2,
        learning_snapshots="100,300,1000,2500,5000,7500,10000",  # log-spaced: watching it learn (hub.SNAPSHOTS_DIR)
        run_dir="runs/en-de", output="checkpoints/en-de", keep_last=4, average_last=4,
    ),
    "multi30k-en-de": dict(
        task="multi30k", vocab_size=8000, d_model=256, n_heads=8, n_encoder_layers=4, n_decoder_layers=4, d_ff=1024,
        dropout=0.15, max_tokens=3000, lr=1.5e-3, warmup_steps=600, schedule="cosine", max_steps=3400,
        max_epochs=40, max_minutes=112, patience=0,  # no early stop: validation BLEU rises late, as the lr anneals
        # fp32: bf16 autocast on a CPU is slower per step for this preset (docs/model.md), because
        # oneDNN builds new kernels for every new batch shape.
        precision="fp32", run_dir="runs/multi30k-en-de", output="checkpoints/multi30k-en-de", average_last=5,
    ),
    **{
        f"toy-{task}": dict(
            task=task, d_model=64, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=256, dropout=0.0,
            max_len=64, max_tokens=2048, lr=2e-3, warmup_steps=150, schedule="cosine", max_epochs=15, patience=0,
            label_smoothing=0.0,
            toy_train_size=20000, run_dir=f"runs/toy-{task}", output=f"checkpoints/toy-{task}",
            average_last=1, half_precision=False,
        )
        for task in ("copy", "reverse", "sort")
    },
}
# A head taught to align (word_links.py): the shipped en-de fine-tuned with its penultimate layer's best predicting
# head (L3 H2, docs/heads.md) taught eflomal's links, as Garg et al. (2019) teach one head of the penultimate layer.
PRESETS["en-de-align"] = {
    # weight 0.5: at fairseq's 0.05 (0.1 tried) the head learned too slowly for a 500-step fine-tune (docs/model.md)
    **PRESETS["en-de"], "init_from": "checkpoints/en-de", "align_layer": 3, "align_head": 2, "align_weight": 0.5,
    "accum_steps": 1, "lr": 2e-4, "warmup_steps": 50, "schedule": "cosine", "max_steps": 500, "max_minutes": 0,
    "val_every": 250,  # 500 steps of 4,096 tokens: 33 training minutes on 2 AVX2 cores (docs/model.md)
    "learning_snapshots": "", "rare_holdout": "tatoeba-en-de", "run_dir": "runs/en-de-align",
    "output": "checkpoints/en-de-align", "keep_last": 2, "average_last": 2,
}
# German→English: en-de's recipe with the languages swapped; the rare pairs it holds out are en-de's
# (rare_split.split_rare_between chooses them on the English side), so the two are compared on them.
PRESETS["de-en"] = {**PRESETS["en-de"], "src_lang": "de", "tgt_lang": "en", "run_dir": "runs/de-en",
                    "output": "checkpoints/de-en"}
