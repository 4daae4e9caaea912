"""Reserved ids of the tuple output vocabularies that the TP-N2F decoders read and write.

A relation vocabulary starts with RELATION_SPECIALS (padding, decoder start, end of program,
unknown), an argument vocabulary with padding and the filler of an unused argument slot.
The N2F experiment's TupleVocab builds its vocabularies on these.
"""

RELATION_SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")
REL_PAD, REL_BOS, REL_EOS = 0, 1, 2  # padding tuple, decoder start tuple, end-of-program tuple
ARG_PAD, ARG_NONE = 0, 1  # padding, an argument slot the relation does not use
