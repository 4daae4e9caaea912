"""MathQA (Amini et al. 2019) for TP-N2F Sec. 4.1: release loader, tuple programs,
the released solver's execution and scoring (faithful) and a corrected variant."""
