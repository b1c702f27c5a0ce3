"""What vulture reports unused in transformer/, app.py and bench/ but is not dead (tests/test_dead_code.py).

vulture matches names, not objects: `_.name` below marks every definition called `name` as used. Each entry says
where the name is defined and who uses it unseen. An entry vulture no longer reports fails the test too, so the
list stays as short as the code allows. This file is read by vulture, never imported.
"""
_ = object

# Read or called by a library, not by our code
_.__class__  # quantize.py: a module swapped to its fused subclass in place (FusedQKVAttention, ...)
_.__signature__  # explorer/web/sessions.py: gradio reads a session-limited handler's signature to pass gr.Request
_.__annotations__  # explorer/web/sessions.py: gradio reads the same handler's type hints
_._save_pretrained  # hub.py: huggingface_hub's ModelHubMixin calls it from save_pretrained
_.from_pretrained  # hub.py: the Hugging Face loading API of PretrainedTransformer (README, tests/test_hub.py)
_.normalizer  # tokenizer.py: a setter of the `tokenizers` library's Tokenizer
_.pre_tokenizer  # tokenizer.py: a setter of the `tokenizers` library's Tokenizer
_.last_epoch  # training/resume.py: torch's LR scheduler reads the restored step
_.enabled  # bench/emulate/sitecustomize.py: torch.backends.mkldnn.enabled, a switch torch reads

# The core's public API, read by tests that pin it
_.token_log_probs  # translator.py: Score's per-token log-probabilities, what `Translator.score` promises
_.to_query  # explorer/core/view_state.py: ViewState's link parameters, the inverse of from_query that tests round-trip
_.format_links  # training/alignment.py: the gold set's Pharaoh line, written by tests/data/alignment/make_gold.py
_.SOURCE_VARIANTS  # training/corpora.py: the names of SourceNoise's four forms, in its order (tests count them)
_.waiting  # serving/batching.py: Batcher's queue length, how tests see that a request has reached the worker
