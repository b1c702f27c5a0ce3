"""The explorer app's help texts (Markdown): the intro above the controls and "How to read this"."""
from __future__ import annotations

INTRO = ("# Transformer attention explorer\nTranslate a sentence, then look inside: every layer and head of the "
         "encoder, the decoder and the cross-attention between them.")

HOW_TO_READ = """
**Rows are queries, columns are keys.** Each row is one token asking "where should I look?"; the colours
along that row are its attention weights over the columns and add up to 100 %.

* **Encoder self-attention**: every source token looks at every source token, in both directions, to build
  a context-aware representation of the input sentence.
* **Decoder self-attention**: every target position looks only at itself and at earlier target positions
  (a causal mask), so everything right of the diagonal is empty.
* **Cross-attention**: every target position (row) looks at the encoder's source tokens (columns). This is
  where output words line up with input words.
* **Why decoder rows shift by one**: the decoder reads `<bos>` plus the words produced so far and predicts
  the next one. Row *t* is fed input token *t* and predicts output token *t*, which is input token *t + 1*.
  "Rows labelled by" switches between the two names of the same row.
* **Model view**: one small map per layer (rows) and head (columns). Heads specialise: some look at the
  previous token, some at the same word, some spread out. **Head summary**: mean row entropy; low values
  are focused heads. Click a cell to focus that head (click the layer label for the mean over heads).
* **Hide special tokens**: many heads park attention on `<eos>` / `<bos>` as a "look nowhere" option.
  Hiding them renormalises every row; the text box says how much weight was hidden.
* **Rollout** multiplies the encoder layers (plus the residual path) to estimate how much each source
  token ends up mixed into each position. Attention shows where information flows, not why.
"""
