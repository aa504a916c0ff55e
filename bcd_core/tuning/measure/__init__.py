"""Building and timing candidates. This package's import must stay cheap: every builder worker
process imports it to unpickle `builder.build_candidate`, so what strategies call lives in
`setup.py`, not here."""
