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
* **Weight or norm** ("Maps show"): the weight α says how much a query looks at a key; Kobayashi et al.
  (2020) show that the size of what the key then adds, ‖α f(x)‖ (its value vector through the head's
  part of the output projection), tells more. The norms are computed when you ask for them, one model
  pass, and each row is divided by its sum so that both read as shares of the row.
* **Switching heads off**: tick "Click heads to switch them off" and click cells of the head summary (a
  click again switches the head back on; "All heads on" resets). The model then runs without those heads
  (Michel et al., 2019): the translation, the n-best list and every map are its answer, and the notes give
  the translation with every head. The link carries the heads switched off (`off=e1.3,c4.8`).
* **Roles** (letters in the head summary, shares on hover; measured over 200 val sentences by
  `python -m transformer.training.head_analysis`, shown in the **Heads** tab with each head's importance
  and what switching heads off costs in BLEU):
  **P** previous token and **N** next token (Voita et al., 2019: the largest weight is on the key one
  position before / after the query in at least 90 % of the rows), **S** the same token (by the same
  rule), **R** rare word (the largest weight on the sentence's rarest word in at least half of the rows),
  **K** sink (at least half of the weight on `<eos>`/`<bos>` and punctuation), **A** alignment
  (cross-attention: the largest weight on the source token that IBM Model 1, a word aligner trained on
  the training pairs, aligns with the predicted token, in at least half of the rows). A head below every
  threshold has no letter; its shares are still on hover.
"""

LENGTH_PENALTY_INFO = ("GNMT length penalty used to rank beam hypotheses (0 = none); starts at the value chosen on "
                       "validation for the default model")
NBEST_LABEL = ("n-best list: each translation once, at its best score (spellings: how many candidates of the search "
               "write it in other subword pieces; the tree shows them all). Click a row to inspect it")
