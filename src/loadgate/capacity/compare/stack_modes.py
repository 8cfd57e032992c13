"""Where a comparison's repeats run (`compare --stacks`, `stacks` in compare.json): each
repeat on a fresh stack of its side (`fresh`), or on both sides' stacks kept up for the whole
comparison (`kept`, the default: `kept.KeptRepeats`)."""

FRESH = "fresh"
KEPT = "kept"
STACK_MODES = (KEPT, FRESH)
DEFAULT_STACKS = KEPT
