"""The app's input limits, in one place: what one request may carry and ask for, what a shared link's parameters
may hold, how much model work one request and one session may take, and how long a request waits.

Every module that checks a limit reads it here (`limits.NAME`, so that a test may set one for the process).
"""
from __future__ import annotations

# ----------------------------------------------------------------------------- what a request may ask
MAX_INPUT_CHARS = 2000  # longer text is cut before tokenising (the model then cuts to its token limit)
UI_MAX_BEAM = 10  # the beam slider's range; the API enforces the same
MAX_LENGTH_PENALTY = 2.0  # the length penalty slider's range, and a link's
API_MAX_LENGTH_PENALTY = 10.0  # the API's: far above the slider's; a bigger one only makes outputs run to the limit
MAX_VIEW_CHARS = 10_000  # the page's view state is a few hundred characters; more is not the page's
MAX_UPLOAD = "1mb"  # the page uploads nothing; a request to gradio's upload route gets this much

# ----------------------------------------------------------------------------- what a shared link may hold
MAX_VALUE_CHARS = 200  # any parameter but the texts
MAX_OFF_CHARS = 1200  # `off` may name every head of a large model
MAX_STEP = 1024  # the bound on `step` (the page clamps it to the translation's steps) and on `cell`'s positions
MAX_LAYERS = 64  # the bound on `layer`/`head` when the model's own sizes are not known

# ----------------------------------------------------------------------------- model work per request and session
MAX_BEAM_TOKENS = 640  # source tokens × beam width one request may search: beam 10 up to 64 tokens, beam 5 to 128
MAX_IN_FLIGHT = 2  # model requests one session may have running at once (a Translate and a click beside it)
MAX_QUEUED = 64  # events gradio's queue holds; past them a request is refused at once
REQUEST_TIMEOUT_S = 60.0  # a Translate press or a rerun that waits longer for the batcher is told the app is busy
