"""Token counts and the window's budget (below both step/ and context/): counting
(`tokens`), whether a step overflowed or the next request fits (`overflow`), and the
budget reminder the model is shown near the threshold (`reminder`)."""
