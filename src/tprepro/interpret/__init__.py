"""The papers' interpretation analyses of trained models (issue 12).

One module per analysis: role clusters (Schlag et al. Sec. 5.1), attention maps (Sec. 5.2;
Wangperawong Figs. 1-3), head reconstruction (Sec. 6.1, Eq. 10), unbinding clusters (Chen et al.
Sec. 4.3), role one-hotness (Jiang et al.) and ponder maps (the Adaptive Universal Transformer).
Every analysis reads the models' own hooks (tprepro.models.probes); `sampling` streams the rows,
`hooks` runs the teacher-forced passes, `outputs` writes a run's `<experiment>/interpret/<run>/`.
"""
