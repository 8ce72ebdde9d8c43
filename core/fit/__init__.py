"""vramscope's fit tables above the answer: which catalog or Hub models fit.

`models` reads catalog entries and their what-if weights (the Fits view, `fit`);
`hub` turns a Hub listing into `≈` bound rows, then exact rows as each repo is read
(`fit --hub`, the Fits view's Hub scope).
"""
