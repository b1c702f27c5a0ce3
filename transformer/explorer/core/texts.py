"""The explorer app's help texts (Markdown), in plain words first and the technical term after: the intro above
the stage, "How to read this", the role letters of the head summary, and the "going further" notes of the Heads
and Training tabs, where the research terms and their sources live; the titles of the three attention kinds."""
from __future__ import annotations

KIND_TITLES = {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention", "cross": "Cross-attention"}

INTRO = ("# Transformer attention explorer\nType a sentence and translate it, then look inside the model: for every "
         "word it writes, the maps show which words it was looking at.")  # one line on a 1280 px screen

HOW_TO_READ = """
**Each row of a map is one word asking "which words should I look at?"** The columns are the words it can
look at. The darker a square, the more the row's word looks at the column's word; each row shares out
100 % between its columns (the technical name for these shares is *attention weights*).

* **Encoder self-attention** (the reading part): every English word looks at every English word, to work
  out what each word means in this sentence.
* **Decoder self-attention** (the writing part): every German word looks only at the German words written
  before it, so the squares right of the diagonal stay empty.
* **Cross-attention** (where writing meets reading): each German word looks back at the English sentence.
  This is where you can often see which English word a German word comes from. It opens on the map that
  agrees best with the links a person draws between the words of a sentence and its translation, where the
  model has been checked against them; the line under the controls says how far, for whichever map is shown.
  **Draw as a word alignment** shows the same map the way word aligners draw one: the English sentence in a
  row above, the German below, and a line from each German word to the English word it looks at most.
* **Rows labelled by the word they write**: each decoder row is named after the word the model writes at
  that step ("predicted token"). The model reads the word before it (the "decoder input token"); the
  other naming is one click away.
* **Layers and heads**: the model looks at the sentence several times over (layers), and each time in
  several ways at once (heads). The **model view** shows one small map per layer and head; the **head
  summary** gives each head a number: low means the head looks at few words, high means it spreads its
  looking out. Click a cell or a small map to see that head large; the layer label shows the layer's
  average.
* **Word pieces**: the model reads words in pieces. A piece that carries on the word before it starts with
  "·" (Lehr ·er); "␣" is a space, a new word about to start. **Merge subwords into words** joins the pieces.
* **Hide &lt;bos&gt;/&lt;eos&gt;**: &lt;bos&gt; and &lt;eos&gt; are the start and end marks of a sentence. Many heads
  "park" their looking there when nothing else matters. Hiding them shares each row out again over the real
  words; the line under the controls says how much was hidden.
* **Switch heads off**: tick "Click heads to switch them off" and click cells of the head summary. The
  model then translates again without those heads, and every map, the translation and the list of
  translations are its answer. "All heads on" puts them back.
* **Step by step**: the decoding steps one at a time: the five words the model found most likely next, and
  where it looked in the English sentence at that step.

The **Heads** and **Training** tabs go further: which heads matter most, what the letters are measured
on, and how the model learned.
"""

ROLE_LEGEND = ("Letters: A lines up each translated word with the source word it translates (alignment) · "
               "P looks at the previous word · N at the next word · S at the word itself · R at the rarest word · "
               "K parks on start/end marks and punctuation (a sink). Hover a cell for the shares; the Heads tab "
               "explains how they are measured.")

HEADS_FURTHER = """
**Going further: what the heads do.** The importance of a head is how much the model's error grows when
that head is switched off (Michel et al., 2019, from gradients of per-head masks); the curves show the
BLEU score as heads are switched off in order. A head gets a letter when, over 200 validation sentences,
it passes its rule: **P** / **N** / **S**, the largest weight is on the key one position before / after /
at the query in at least 90 % of the rows (Voita et al., 2019); **R**, the largest weight is on the
sentence's rarest word in at least half of the rows; **K** (sink), at least half of the weight goes to
&lt;eos&gt;/&lt;bos&gt; and punctuation; **A** (alignment, cross-attention), the largest weight is on the source
word that IBM Model 1, a statistical word aligner trained on the training pairs, aligns with the predicted
word, in at least half of the rows. **Which map shows the alignment best** is measured, not guessed: every
head, each layer's mean and the mean of all heads are read as word links (each German word to the English
word its row weighs most) and scored against links drawn by hand on sentences of our own, by the alignment
error rate (AER, Och and Ney, 2003). Each map is read two ways: a row as the word the model writes there, or
as the word it reads there, one step later (Chen et al., 2020). The cross-attention view opens on the map
chosen on one part of those sentences, and the numbers above the figures are measured on the rest; the
steps view, whose row is the word being chosen, opens on the best map read the first way. A model without
those scores opens on the alignment head with the largest share. **Weight or norm** (the attention tab's "Maps show"): the weight α says how much a query looks
at a key; Kobayashi et al. (2020) show that the size of what the key then adds, ‖α f(x)‖ (its value vector
through the head's part of the output projection), tells more; each row is divided by its sum. Rollout
(Abnar and Zuidema, 2020) multiplies the encoder layers' maps, each averaged with the identity for the
residual path. The head summary's number is the mean row entropy in nats.
"""

TRAINING_FURTHER = """
**Going further: how the model learned.** The curves are the training log: loss (label-smoothed
cross-entropy) and perplexity on the training and validation sets, the validation BLEU (sacreBLEU) and
the learning rate, which warms up and then decays with the inverse square root of the step. The table
holds the model card's test scores (BLEU and chrF). Beam search keeps several partial translations at
each step; the length penalty ((5 + length) / 6) ^ α, from Google's GNMT paper, stops it from
preferring short ones.
"""

LENGTH_PENALTY_INFO = ("How much the search favours longer translations (0 = not at all); starts at the value that "
                       "scored best on held-out sentences")
NBEST_LABEL = ("Other translations the search found, best first, each once at its best score (log-prob.: the "
               "translation's log-probability; score: the same per length, which the search ranks by; spellings: how "
               "many other ways of cutting it into pieces the search also found; the tree shows them all). Click a "
               "row to look at it")
